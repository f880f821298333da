package bugs

import (
	"context"
	"errors"
	"fmt"
	"math"

	"github.com/storecheck/storecheck/adapters"
	refruntime "github.com/storecheck/storecheck/reference/runtime"
	"github.com/storecheck/storecheck/reference/sqlitedb"
	"github.com/storecheck/storecheck/spec"
	r "github.com/storecheck/storecheck/spec/runtime"
)

// runtimeBug registers a bug of the runtime store: the reference opened
// with rules, then wrapped by wrap (nil: as it is).
func runtimeBug(name string, rules refruntime.Rules, wrap func(*refruntime.Store) r.Store) Bug {
	return register(name, r.StoreName, func(ctx context.Context, o spec.OpenOptions) (adapters.Target, error) {
		s, err := refruntime.Open(ctx, refruntime.Options{Path: o.Path, Clock: o.Clock, Rules: rules})
		if err != nil {
			return nil, err
		}
		var st r.Store = s
		if wrap != nil {
			st = wrap(s)
		}
		return sqlitedb.Target(st, r.Apply), nil
	})
}

// The runtime store's bugs, each from a rule of spec/runtime or a comment of
// the seed (lash sqlite store, persistence.rs).
var (
	// RuntimeLeaseLiveAtExpiry treats a lease or claim whose expiry equals
	// now as live (>= where the contract says >).
	RuntimeLeaseLiveAtExpiry = runtimeBug("runtime_lease_live_at_expiry",
		refruntime.Rules{ExpiredBy: func(nowMs int64) int64 { return nowMs - 1 }}, nil)
	// RuntimeFenceNotBumped grants a new session lease with the previous
	// lease's fencing token instead of the next one.
	RuntimeFenceNotBumped = runtimeBug("runtime_fence_not_bumped",
		refruntime.Rules{NextFence: func(last uint64) uint64 { return last }}, nil)
	// RuntimeRenewAfterExpiry renews a lease whose owner, token and fence
	// match without checking that it is still live.
	RuntimeRenewAfterExpiry = runtimeBug("runtime_renew_after_expiry",
		refruntime.Rules{Renewable: always[int64]}, nil)
	// RuntimeCommitWithoutLease accepts a commit whose lease is missing or
	// is not the live one.
	RuntimeCommitWithoutLease = runtimeBug("runtime_commit_without_lease",
		refruntime.Rules{CommitLease: func(*r.SessionExecutionLeaseFence, func(r.SessionExecutionLeaseFence) error) error { return nil }}, nil)
	// RuntimeTurnReplayAnyHash answers a committed turn's first result to
	// a replay with another hash.
	RuntimeTurnReplayAnyHash = runtimeBug("runtime_turn_replay_any_hash",
		refruntime.Rules{SameTurn: always[string]}, nil)
	// RuntimeHeadRevisionUnchecked ignores expected_head_revision.
	RuntimeHeadRevisionUnchecked = runtimeBug("runtime_head_revision_unchecked",
		refruntime.Rules{HeadRevision: func(*uint64, uint64) bool { return true }}, nil)
	// RuntimePartialCommit commits the write of a commit whose check of the
	// completed claims fails, and answers the failure (the seed's "does not
	// leave the partial transaction committed").
	RuntimePartialCommit = runtimeBug("runtime_partial_commit", refruntime.Rules{},
		func(s *refruntime.Store) r.Store { return partialCommit{s} })
	// RuntimeHalfOwnedClaim reads claim candidates without the claim filter
	// (a stale view, as a read outside the write lock gives) and, when a
	// batch's guarded update changes no row, keeps the claim going instead
	// of rolling it back: the claim names batches another claim holds.
	RuntimeHalfOwnedClaim = runtimeBug("runtime_half_owned_claim", refruntime.Rules{
		Claimable:   func(ready, _ refruntime.Cond) refruntime.Cond { return ready },
		ClaimStands: always[int],
	}, nil)
	// RuntimeClaimIgnoresAvailableAt claims delayed work before its
	// available_at.
	RuntimeClaimIgnoresAvailableAt = runtimeBug("runtime_claim_ignores_available_at",
		refruntime.Rules{Claimable: func(_, free refruntime.Cond) refruntime.Cond { return free }}, nil)
	// RuntimeCancelLiveClaim cancels a batch a live claim holds.
	RuntimeCancelLiveClaim = runtimeBug("runtime_cancel_live_claim",
		refruntime.Rules{Cancellable: func(refruntime.Cond) refruntime.Cond { return refruntime.Always }}, nil)
	// RuntimeReleaseIgnoresFence releases a session lease whose owner and
	// token match whatever fencing token the completion presents. Only a
	// completion with the right token and another fence shows it.
	RuntimeReleaseIgnoresFence = runtimeBug("runtime_release_ignores_fence", refruntime.Rules{
		Releases: func(c r.SessionExecutionLeaseCompletion) refruntime.Cond {
			return refruntime.Cond{SQL: `owner_id = ? AND lease_token = ?`, Args: []any{c.OwnerID, c.LeaseToken}}
		}}, nil)
	// RuntimeLoadNodeShowsTombstoned answers load_node with a tombstoned
	// node (the graph scopes still hide it). Only a load of a node that is
	// stored and tombstoned shows it.
	RuntimeLoadNodeShowsTombstoned = runtimeBug("runtime_load_node_shows_tombstoned",
		refruntime.Rules{NodeVisible: `1`}, nil)
	// RuntimeAttachmentCommitTimeMoves overwrites an attachment's commit
	// time on every commit that names it (the seed's COALESCE dropped).
	RuntimeAttachmentCommitTimeMoves = runtimeBug("runtime_attachment_commit_time_moves",
		refruntime.Rules{AttachmentCommittedAt: `?`}, nil)
	// RuntimeAppendOverwritesNode lets an append replace a stored node
	// (INSERT OR REPLACE) instead of failing.
	RuntimeAppendOverwritesNode = runtimeBug("runtime_append_overwrites_node",
		refruntime.Rules{WriteNode: `INSERT OR REPLACE INTO graph_nodes (node_id, parent_id, data) VALUES (?, ?, ?)`}, nil)
	// RuntimeLeaseClaimOutsideTx reads the session lease in one
	// transaction and writes the grant in another: two owners that both read
	// a free lease both win it. Only concurrency exposes it.
	RuntimeLeaseClaimOutsideTx = runtimeBug("runtime_lease_claim_outside_tx", refruntime.Rules{},
		func(s *refruntime.Store) r.Store { return racyLeaseClaim{s} })
	// RuntimeClaimOrderedByBatchID takes a claim's prefix in the order of
	// the batch ids, not of enqueueing: the ids end in the enqueue
	// sequence as text (":batch:9" after ":batch:10"), so the order is
	// right until a session holds batches of one digit and of two at once,
	// ten enqueues deep, and the claim then takes the later batch first.
	RuntimeClaimOrderedByBatchID = runtimeBug("runtime_claim_ordered_by_batch_id", refruntime.Rules{ClaimOrder: `batch_id`}, nil)
	// RuntimeClaimExceedsMaxBatches claims one batch more than max_batches
	// (a cap compared with > where it takes <=).
	RuntimeClaimExceedsMaxBatches = runtimeBug("runtime_claim_exceeds_max_batches", refruntime.Rules{ClaimCap: func(m int) int {
		if m <= 0 {
			return 0
		}
		return m + 1
	}}, nil)
	// RuntimeMaxZeroClaimsAll reads max_batches 0 as no cap (as sql_limit
	// reads a limit of 0 as its default), where the seed answers none and
	// checks nothing.
	RuntimeMaxZeroClaimsAll = runtimeBug("runtime_max_zero_claims_all", refruntime.Rules{ClaimCap: func(m int) int {
		if m == 0 {
			return math.MaxInt32
		}
		return max(m, 0)
	}}, nil)
	// RuntimeRevisionNotBumped writes revision 1 with the first commit and
	// keeps the stored revision on every later one (an upsert of the head
	// that leaves head_revision out of its update): the revision stands.
	RuntimeRevisionNotBumped = runtimeBug("runtime_revision_not_bumped",
		refruntime.Rules{NextRevision: func(actual uint64) uint64 { return max(actual, 1) }}, nil)
	// RuntimeClaimFenceNotBumped claims a batch without moving its claim
	// fencing token, so two claims of one batch carry one fence.
	RuntimeClaimFenceNotBumped = runtimeBug("runtime_claim_fence_not_bumped",
		refruntime.Rules{ClaimFence: `claim_fencing_token`}, nil)
	// RuntimeClaimScanBeforeFilter reads a session's first spec.ScanLimit
	// batches (a LIMIT 100 applied before the filter) and only then keeps
	// the claimable ones: work queued behind 100 batches not yet available
	// (or held) is never claimed. No workload of a few batches shows it.
	RuntimeClaimScanBeforeFilter = runtimeBug("runtime_claim_scan_before_filter", refruntime.Rules{
		Claimable: func(ready, free refruntime.Cond) refruntime.Cond {
			return ready.And(free).And(refruntime.Cond{SQL: fmt.Sprintf(`enqueue_seq IN (SELECT scan.enqueue_seq FROM queued_work_batches scan
				WHERE scan.session_id = queued_work_batches.session_id ORDER BY scan.enqueue_seq LIMIT %d)`, spec.ScanLimit)})
		}}, nil)
)

// Runtime lists the runtime store's bugs.
var Runtime = Of(r.StoreName)

// partialCommit commits again, without the completed claims whose check
// failed, and answers the failure.
type partialCommit struct{ *refruntime.Store }

func (p partialCommit) CommitRuntimeState(ctx context.Context, cm r.RuntimeCommit) (r.CommitResult, error) {
	res, err := p.Store.CommitRuntimeState(ctx, cm)
	if !errors.Is(err, r.ErrQueuedWorkClaimExpired) || len(cm.CompletedQueueClaims) == 0 {
		return res, err
	}
	partial := cm
	partial.CompletedQueueClaims = nil
	p.Store.CommitRuntimeState(ctx, partial)
	return r.CommitResult{}, err
}

// racyLeaseClaim decides a lease claim on the lease one transaction read
// and writes the grant in another.
type racyLeaseClaim struct{ *refruntime.Store }

func (c racyLeaseClaim) TryClaimSessionExecutionLease(ctx context.Context, session, owner string, ttl uint64) (*r.SessionExecutionLease, error) {
	read, err := c.StoredLease(ctx, session)
	if err != nil {
		return nil, err
	}
	return c.WithRules(refruntime.Rules{TryClaim: func(session string, _ *refruntime.Lease, owner string, nowMs int64, ttl uint64) (*refruntime.Lease, bool) {
		return refruntime.Rules{}.DecideTryClaim(session, read, owner, nowMs, ttl)
	}}).TryClaimSessionExecutionLease(ctx, session, owner, ttl)
}
