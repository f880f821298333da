package runtime

import (
	"github.com/storecheck/storecheck/spec"
	r "github.com/storecheck/storecheck/spec/runtime"
)

// Rules are the decisions of the contract this store takes on what it has
// read, each stated once: a plain function of the values it decides on, or,
// where the store decides in SQL, the condition it adds to a statement. The
// store decides by the Rules it was opened with (Options.Rules); a nil rule
// is the contract's, so Rules{} is the contract. Breaking one rule is how
// storecheck's own selftest builds a deliberately broken store
// (internal/bugs): the reference itself knows of no bug.
type Rules struct {
	// ExpiredBy is the expiry rule of leases and claims: at nowMs, one whose
	// expiry is at or before ExpiredBy(nowMs) has expired. The contract's is
	// nowMs itself: live while now < expiry.
	ExpiredBy func(nowMs int64) int64
	// NextFence (try_claim_session_execution_lease): a new lease's fencing
	// token is the next after the last lease's.
	NextFence func(last uint64) uint64
	// TryClaim is try_claim_session_execution_lease's decision on the lease
	// row it read (nil: none): the lease it answers (nil: refused, another
	// owner holds a live lease), and whether that lease is a new grant
	// (written whole) or the live one extended (its expiry moved). The
	// contract's is DecideTryClaim of these rules.
	TryClaim func(session string, stored *Lease, owner string, nowMs int64, ttl uint64) (lease *Lease, granted bool)
	// Renewable (renew_session_execution_lease): a lease the fence names
	// may be renewed while it is live (by ExpiredBy).
	Renewable func(expiresAtMs, nowMs int64) bool
	// SameTurn (commit_runtime_state, check 1): a commit of a turn already
	// committed replays its first result when its hash is the committed one.
	SameTurn func(committedHash, presentedHash string) bool
	// CommitLease (commit_runtime_state, check 2): a commit presents the
	// session's live lease; held checks a presented fence against it.
	CommitLease func(presented *r.SessionExecutionLeaseFence, held func(r.SessionExecutionLeaseFence) error) error
	// HeadRevision (commit_runtime_state, check 3): an expected head
	// revision, when the commit names one, is the actual one.
	HeadRevision func(expected *uint64, actual uint64) bool
	// NextRevision (commit_runtime_state.revision): a commit moves the
	// head revision one up.
	NextRevision func(actual uint64) uint64
	// Claimable (claim_ready_queued_work): the batches a claim may take are
	// those that are ready (available_at has come) and free (no live claim
	// holds them).
	Claimable func(ready, free Cond) Cond
	// ClaimStands (claim_ready_queued_work): a claim is all or nothing: it
	// stands only when it took every batch it selected (updated of
	// selected); else it is rolled back and claims nothing.
	ClaimStands func(selected, updated int) bool
	// ClaimCap (claim_ready_queued_work.prefix, max_zero): the most batches
	// a claim of maxBatches takes: maxBatches itself, and 0 (none, nothing
	// checked) for 0.
	ClaimCap func(maxBatches int) int
	// ClaimOrder (claim_ready_queued_work.candidates): the SQL ordering of
	// the candidates a claim takes its prefix of: enqueue order.
	ClaimOrder string
	// ClaimFence (claim_ready_queued_work.batch_fence): the SQL expression
	// of a claimed batch's claim fencing token, over its column
	// claim_fencing_token: one up.
	ClaimFence string
	// Releases (release_session_execution_lease, and a commit's release):
	// the condition on the lease row under which a completion releases
	// it: its owner, its token and its fencing token, all three.
	Releases func(c r.SessionExecutionLeaseCompletion) Cond
	// NodeVisible (load_node.live_only): the condition on graph_nodes of a
	// node load_node answers: one not tombstoned.
	NodeVisible string
	// Cancellable (cancel_queued_work_batch): a batch may be cancelled
	// while it is free.
	Cancellable func(free Cond) Cond
	// AttachmentCommittedAt (commit_runtime_state): the SQL expression of an
	// attachment's commit time when a commit names it, over its column
	// committed_at_ms and one parameter, now: the first commit's time stays.
	AttachmentCommittedAt string
	// WriteNode (commit_runtime_state, the graph delta): the statement that
	// writes a node (node_id, parent_id, data), changing no row when the
	// node id is already stored, which is then a graph_node_conflict.
	WriteNode string
}

// Lease is a session_execution_leases row: Held while a lease token is set
// (released leases keep their fence).
type Lease struct {
	OwnerID, Token           string
	Held                     bool
	Fence                    uint64
	ClaimedAtMs, ExpiresAtMs int64
}

// Cond is a SQL condition and its parameters.
type Cond struct {
	SQL  string
	Args []any
}

// And is c and d.
func (c Cond) And(d Cond) Cond {
	return Cond{SQL: "(" + c.SQL + " AND " + d.SQL + ")", Args: append(append([]any(nil), c.Args...), d.Args...)}
}

// Always is the condition that holds of every row.
var Always = Cond{SQL: "1"}

// complete is rs with every nil rule the contract's.
func (rs Rules) complete() Rules {
	rs = rs.withPredicates()
	if rs.TryClaim == nil {
		rs.TryClaim = rs.DecideTryClaim
	}
	return rs
}

// withPredicates is rs with every nil rule but TryClaim the contract's.
func (rs Rules) withPredicates() Rules {
	if rs.ExpiredBy == nil {
		rs.ExpiredBy = func(nowMs int64) int64 { return nowMs }
	}
	if rs.NextFence == nil {
		rs.NextFence = func(last uint64) uint64 { return last + 1 }
	}
	if rs.Renewable == nil {
		expired := rs.ExpiredBy
		rs.Renewable = func(expiresAt, now int64) bool { return expiresAt > expired(now) }
	}
	if rs.SameTurn == nil {
		rs.SameTurn = func(committed, presented string) bool { return committed == presented }
	}
	if rs.CommitLease == nil {
		rs.CommitLease = commitLease
	}
	if rs.HeadRevision == nil {
		rs.HeadRevision = func(expected *uint64, actual uint64) bool { return expected == nil || *expected == actual }
	}
	if rs.NextRevision == nil {
		rs.NextRevision = func(actual uint64) uint64 { return actual + 1 }
	}
	if rs.ClaimCap == nil {
		rs.ClaimCap = func(maxBatches int) int { return max(maxBatches, 0) }
	}
	if rs.ClaimOrder == "" {
		rs.ClaimOrder = `enqueue_seq`
	}
	if rs.ClaimFence == "" {
		rs.ClaimFence = `claim_fencing_token + 1`
	}
	if rs.Claimable == nil {
		rs.Claimable = func(ready, free Cond) Cond { return ready.And(free) }
	}
	if rs.ClaimStands == nil {
		rs.ClaimStands = func(selected, updated int) bool { return updated == selected }
	}
	if rs.Releases == nil {
		rs.Releases = func(c r.SessionExecutionLeaseCompletion) Cond {
			return Cond{SQL: `owner_id = ? AND lease_token = ? AND fencing_token = ?`, Args: []any{c.OwnerID, c.LeaseToken, c.FencingToken}}
		}
	}
	if rs.NodeVisible == "" {
		rs.NodeVisible = `tombstoned = 0`
	}
	if rs.Cancellable == nil {
		rs.Cancellable = func(free Cond) Cond { return free }
	}
	if rs.AttachmentCommittedAt == "" {
		rs.AttachmentCommittedAt = `COALESCE(committed_at_ms, ?)`
	}
	if rs.WriteNode == "" {
		rs.WriteNode = `INSERT INTO graph_nodes (node_id, parent_id, data) VALUES (?, ?, ?) ON CONFLICT(node_id) DO NOTHING`
	}
	return rs
}

// live is the expiry rule: a lease or claim expiring at expiresAt is live
// at now.
func (rs Rules) live(expiresAt, now int64) bool { return expiresAt > rs.ExpiredBy(now) }

func commitLease(presented *r.SessionExecutionLeaseFence, held func(r.SessionExecutionLeaseFence) error) error {
	if presented == nil {
		return spec.Errorf(r.ErrSessionExecutionLeaseExpired, "the commit presents no lease")
	}
	return held(*presented)
}

// DecideTryClaim is the contract's decision of a lease claim on the stored
// lease row (nil: none), by rs's rules: a live lease of the same owner is
// extended, of another owner refused; otherwise a new lease is granted
// with the next fence.
func (rs Rules) DecideTryClaim(session string, stored *Lease, owner string, nowMs int64, ttl uint64) (*Lease, bool) {
	rs = rs.withPredicates()
	expires := expiry(nowMs, ttl)
	if stored != nil && stored.Held && rs.live(stored.ExpiresAtMs, nowMs) {
		if stored.OwnerID != owner {
			return nil, false
		}
		extended := *stored
		extended.ExpiresAtMs = expires
		return &extended, false
	}
	fence := uint64(1)
	if stored != nil {
		fence = rs.NextFence(stored.Fence)
	}
	return &Lease{OwnerID: owner, Token: r.LeaseToken(session, owner, nowMs, fence), Held: true, Fence: fence,
		ClaimedAtMs: nowMs, ExpiresAtMs: expires}, true
}
