// Package runtime is the runtime store's contract (RuntimePersistence, from
// the lash sqlite store in seeds/000).
//
// One runtime store keeps one session's durable state: a head (revision,
// config, agent frames, checkpoint, graph leaf) moved only by
// commit_runtime_state under a compare-and-set on the revision; a session
// execution lease (owner, token, fencing token, expiry) that a writer must
// hold to commit; idempotent turn commits; a queue of work batches claimed
// under leases of their own; a graph of nodes with tombstones; usage deltas;
// checkpoints; attachments.
//
// Payloads the kit does not interpret (graph node data, config, agent
// frames, session meta, queued payloads) are opaque JSON values, compared as
// JSON values (runtime.opaque_values); checkpoint and attachment bytes are
// kept byte for byte. An empty opaque JSON value reads back as nil (JSON has
// no empty document); checkpoint and attachment bytes read back as empty
// bytes, never nil.
//
// Times are Unix milliseconds of the store's injected clock, read once at
// the start of each operation (now). A lease or claim is live while
// now < expires_at_ms: one whose expiry equals now has expired
// (runtime.expiry).
//
// Batch ids, claim ids, claim tokens and checkpoint refs are the store's to
// mint, in code the seed does not show: they are opaque (runtime.minted_ids),
// learned from the answer that minted them. The lease token and item ids
// follow the seed's formats (ids.go).
//
// Every rule is stated on the Store method it governs, by the ID of its
// entry in the rule table (rules.go, rendered in docs/rules/runtime.md),
// which quotes the seed or, where the seed is silent, says what a backend
// may choose. The specs of spec/suite/runtime*.go name the rules they check.
package runtime

import (
	"context"

	"github.com/storecheck/storecheck/spec"
)

// StoreName is the contract's name in reports, flags and the wire protocol.
const StoreName = "runtime"

// SessionExecutionLease is a granted session lease. Its fencing token counts
// the grants the session ever had: each new lease takes the previous + 1.
type SessionExecutionLease struct {
	SessionID    string `json:"session_id"`
	OwnerID      string `json:"owner_id"`
	LeaseToken   string `json:"lease_token"`
	FencingToken uint64 `json:"fencing_token"`
	ClaimedAtMs  int64  `json:"claimed_at_ms"`
	ExpiresAtMs  int64  `json:"expires_at_ms"`
}

// SessionExecutionLeaseFence is what a writer presents as proof that it
// holds the lease: the four fields must all match the live lease.
type SessionExecutionLeaseFence struct {
	SessionID    string `json:"session_id"`
	OwnerID      string `json:"owner_id"`
	LeaseToken   string `json:"lease_token"`
	FencingToken uint64 `json:"fencing_token"`
}

// SessionExecutionLeaseCompletion names the lease a release gives up.
type SessionExecutionLeaseCompletion = SessionExecutionLeaseFence

// Fence is the lease's proof of ownership.
func (l SessionExecutionLease) Fence() SessionExecutionLeaseFence {
	return SessionExecutionLeaseFence{SessionID: l.SessionID, OwnerID: l.OwnerID, LeaseToken: l.LeaseToken, FencingToken: l.FencingToken}
}

// Node is one graph node. ParentID links it to its parent ("" for a root);
// Data is opaque.
type Node struct {
	NodeID   string       `json:"node_id"`
	ParentID string       `json:"parent_id,omitempty"`
	Data     spec.RawJSON `json:"data,omitempty"`
}

// Graph is a set of nodes and the leaf the session is at ("" for none).
type Graph struct {
	Nodes      []Node `json:"nodes"`
	LeafNodeID string `json:"leaf_node_id,omitempty"`
}

// GraphDeltaKind says how a commit changes the graph.
type GraphDeltaKind string

const (
	// GraphUnchanged keeps every node and sets the leaf.
	GraphUnchanged GraphDeltaKind = "unchanged"
	// GraphAppend adds the delta's nodes to the stored ones and sets the
	// leaf. A node id the store already holds (tombstoned or not, or twice
	// in the delta) fails ErrGraphNodeConflict or ErrIO: an append never
	// overwrites.
	GraphAppend GraphDeltaKind = "append"
	// GraphReplaceFull drops every stored node, tombstoned ones included,
	// and stores the delta's nodes and leaf.
	GraphReplaceFull GraphDeltaKind = "replace_full"
)

// GraphDelta is a commit's change to the graph.
type GraphDelta struct {
	Kind       GraphDeltaKind `json:"kind"`
	Nodes      []Node         `json:"nodes,omitempty"`
	LeafNodeID string         `json:"leaf_node_id,omitempty"`
}

// ReadScope says how much of the graph load_session returns. The zero
// value is the full graph.
type ReadScope struct {
	// ActivePath asks for the path to a leaf only.
	ActivePath bool `json:"active_path,omitempty"`
	// LeafNodeID is the active path's leaf; "" means the head's leaf.
	LeafNodeID string `json:"leaf_node_id,omitempty"`
}

// FullGraph is the scope of every live node.
func FullGraph() ReadScope { return ReadScope{} }

// ActivePathTo is the scope of the path from the root to leaf ("" for the
// head's leaf).
func ActivePathTo(leaf string) ReadScope { return ReadScope{ActivePath: true, LeafNodeID: leaf} }

// Usage counts tokens.
type Usage struct {
	InputTokens       uint64 `json:"input_tokens"`
	OutputTokens      uint64 `json:"output_tokens"`
	CachedInputTokens uint64 `json:"cached_input_tokens"`
	ReasoningTokens   uint64 `json:"reasoning_tokens"`
}

// UsageEntry is usage of one source and model: a delta a commit appends, or
// one line of the merged token ledger.
type UsageEntry struct {
	Source string `json:"source"`
	Model  string `json:"model"`
	Usage  Usage  `json:"usage"`
}

// TurnCommit names the turn a commit completes and the hash of what it
// commits; a turn commits once.
type TurnCommit struct {
	SessionID      string `json:"session_id"`
	TurnID         string `json:"turn_id"`
	TurnCommitHash string `json:"turn_commit_hash"`
}

// CompletedQueueClaim is a queued work claim a commit completes: its
// batches are deleted with the commit.
type CompletedQueueClaim struct {
	SessionID  string   `json:"session_id"`
	ClaimID    string   `json:"claim_id"`
	LeaseToken string   `json:"lease_token"`
	BatchIDs   []string `json:"batch_ids"`
}

// Completed is the completion of every batch of the claim.
func (c QueuedWorkClaim) Completed() CompletedQueueClaim {
	ids := make([]string, len(c.Batches))
	for i, b := range c.Batches {
		ids[i] = b.BatchID
	}
	return CompletedQueueClaim{SessionID: c.SessionID, ClaimID: c.ClaimID, LeaseToken: c.LeaseToken, BatchIDs: ids}
}

// RuntimeCommit is everything one commit_runtime_state presents.
type RuntimeCommit struct {
	SessionID string `json:"session_id"`
	// ExpectedHeadRevision, when set, must equal the stored revision (0
	// before the first commit).
	ExpectedHeadRevision *uint64 `json:"expected_head_revision,omitempty"`
	// Lease is the writer's proof that it holds the session lease.
	Lease *SessionExecutionLeaseFence `json:"session_execution_lease,omitempty"`
	// ReleaseLease, when set, is released with the commit.
	ReleaseLease           *SessionExecutionLeaseCompletion `json:"release_session_execution_lease,omitempty"`
	TurnCommit             *TurnCommit                      `json:"turn_commit,omitempty"`
	CompletedQueueClaims   []CompletedQueueClaim            `json:"completed_queue_claims,omitempty"`
	Graph                  GraphDelta                       `json:"graph"`
	Checkpoint             []byte                           `json:"checkpoint"`
	Config                 spec.RawJSON                     `json:"config,omitempty"`
	AgentFrames            spec.RawJSON                     `json:"agent_frames,omitempty"`
	CurrentAgentFrameID    string                           `json:"current_agent_frame_id,omitempty"`
	UsageDeltas            []UsageEntry                     `json:"usage_deltas,omitempty"`
	CommittedAttachmentIDs []string                         `json:"committed_attachment_ids,omitempty"`
}

// CommitResult is what a commit answers, and what a replay of its turn
// answers again.
type CommitResult struct {
	HeadRevision  uint64 `json:"head_revision"`
	CheckpointRef string `json:"checkpoint_ref"`
}

// SessionRead is what load_session returns.
type SessionRead struct {
	SessionID           string       `json:"session_id"`
	HeadRevision        uint64       `json:"head_revision"`
	Config              spec.RawJSON `json:"config,omitempty"`
	AgentFrames         spec.RawJSON `json:"agent_frames,omitempty"`
	CurrentAgentFrameID string       `json:"current_agent_frame_id,omitempty"`
	Graph               Graph        `json:"graph"`
	CheckpointRef       string       `json:"checkpoint_ref"`
	Checkpoint          []byte       `json:"checkpoint"`
	// TokenLedger is the usage of every commit, merged: one entry per
	// (source, model), each count the sum of the deltas', in any order (the
	// reference's is by source then model).
	TokenLedger []UsageEntry `json:"token_ledger"`
}

// DeliveryPolicy says at which boundaries a queued batch may be delivered.
type DeliveryPolicy string

const (
	// DeliverNextTurn: only at a turn boundary.
	DeliverNextTurn DeliveryPolicy = "next_turn"
	// DeliverInterrupt: at any boundary, inside a turn too.
	DeliverInterrupt DeliveryPolicy = "interrupt"
)

// SlotPolicy says whether a batch may share a claim.
type SlotPolicy string

const (
	// SlotExclusive: the batch is claimed alone.
	SlotExclusive SlotPolicy = "exclusive"
	// SlotMergeable: the batch may be claimed with following mergeable
	// batches of the same merge key.
	SlotMergeable SlotPolicy = "mergeable"
)

// QueuedWorkClaimBoundary is where the claimer stands.
type QueuedWorkClaimBoundary string

const (
	// BoundaryTurn: between turns; every batch is deliverable.
	BoundaryTurn QueuedWorkClaimBoundary = "turn"
	// BoundaryStep: inside a turn; only DeliverInterrupt batches are.
	BoundaryStep QueuedWorkClaimBoundary = "step"
)

// QueuedWorkBatchDraft is a batch to enqueue.
type QueuedWorkBatchDraft struct {
	SessionID string `json:"session_id"`
	// SourceKey, when not "", makes the enqueue idempotent per session.
	SourceKey      string         `json:"source_key,omitempty"`
	DeliveryPolicy DeliveryPolicy `json:"delivery_policy"`
	SlotPolicy     SlotPolicy     `json:"slot_policy"`
	MergeKey       string         `json:"merge_key,omitempty"`
	AvailableAtMs  int64          `json:"available_at_ms"`
	Payloads       []spec.RawJSON `json:"payloads"`
}

// QueuedWorkItem is one payload of a batch; its id is the batch id, ":item:"
// and its index.
type QueuedWorkItem struct {
	ItemID  string       `json:"item_id"`
	Payload spec.RawJSON `json:"payload,omitempty"`
}

// QueuedWorkBatch is an enqueued batch. ClaimFencingToken counts the claims
// it has had, from the store's initial value.
type QueuedWorkBatch struct {
	BatchID           string           `json:"batch_id"`
	SessionID         string           `json:"session_id"`
	SourceKey         string           `json:"source_key,omitempty"`
	DeliveryPolicy    DeliveryPolicy   `json:"delivery_policy"`
	SlotPolicy        SlotPolicy       `json:"slot_policy"`
	MergeKey          string           `json:"merge_key,omitempty"`
	AvailableAtMs     int64            `json:"available_at_ms"`
	EnqueuedAtMs      int64            `json:"enqueued_at_ms"`
	ClaimFencingToken uint64           `json:"claim_fencing_token"`
	Items             []QueuedWorkItem `json:"items"`
}

// QueuedWorkClaim is a won claim: it owns every one of its batches until it
// expires, is abandoned or is completed by a commit.
type QueuedWorkClaim struct {
	SessionID  string `json:"session_id"`
	ClaimID    string `json:"claim_id"`
	OwnerID    string `json:"owner_id"`
	LeaseToken string `json:"lease_token"`
	// FencingToken is the first batch's claim fencing token, before or
	// after the claim's increment (the reference's: after).
	FencingToken uint64            `json:"fencing_token"`
	ClaimedAtMs  int64             `json:"claimed_at_ms"`
	ExpiresAtMs  int64             `json:"expires_at_ms"`
	Batches      []QueuedWorkBatch `json:"batches"`
}

// Attachment is a staged attachment. CommittedAtMs is set by the first
// commit that names it, and then never changes.
type Attachment struct {
	AttachmentID  string `json:"attachment_id"`
	SessionID     string `json:"session_id"`
	Data          []byte `json:"data"`
	CommittedAtMs *int64 `json:"committed_at_ms,omitempty"`
}

// DurabilityTier says what an acknowledged commit survives.
type DurabilityTier string

const (
	// Durable: closing the store (or a crash) and opening it again finds
	// every acknowledged commit.
	Durable DurabilityTier = "durable"
	// Ephemeral: the state lives as long as the store value.
	Ephemeral DurabilityTier = "ephemeral"
)

// VacuumReport says how many tombstoned nodes a vacuum removed.
type VacuumReport struct {
	RemovedNodeCount int `json:"removed_node_count"`
}

// GcReport says how many unreachable checkpoints a collection removed.
type GcReport struct {
	RemovedCheckpointCount int `json:"removed_checkpoint_count"`
}

// The contract's closed set of error kinds.
const (
	// ErrSessionBindingMismatch: the store is bound to another session.
	ErrSessionBindingMismatch spec.Kind = "session_binding_mismatch"
	// ErrRuntimeTurnCommitConflict: a turn commit for another session than
	// the commit's, or a replay of a committed turn with another hash.
	ErrRuntimeTurnCommitConflict spec.Kind = "runtime_turn_commit_conflict"
	// ErrSessionExecutionLeaseExpired: no lease presented, or one that is
	// not the session's live lease.
	ErrSessionExecutionLeaseExpired spec.Kind = "session_execution_lease_expired"
	// ErrHeadRevisionConflict: expected_head_revision is not the stored
	// revision; the message names both.
	ErrHeadRevisionConflict spec.Kind = "head_revision_conflict"
	// ErrQueuedWorkClaimExpired: a queued work claim that is not (or no
	// longer) held.
	ErrQueuedWorkClaimExpired spec.Kind = "queued_work_claim_expired"
	// ErrGraphNodeConflict: an append of a node id the graph already holds
	// (a backend may answer ErrIO, as the seed's failing INSERT does).
	ErrGraphNodeConflict spec.Kind = "graph_node_conflict"
	// ErrInvalidArgument: a value outside the contract's sets (an unknown
	// graph delta kind, delivery or slot policy, or boundary).
	ErrInvalidArgument spec.Kind = "invalid_argument"
	// ErrIO: the store could not do its work (open, query, commit).
	ErrIO spec.Kind = "io"
)

// Kinds is the closed set, in a fixed order.
var Kinds = []spec.Kind{ErrSessionBindingMismatch, ErrRuntimeTurnCommitConflict, ErrSessionExecutionLeaseExpired,
	ErrHeadRevisionConflict, ErrQueuedWorkClaimExpired, ErrGraphNodeConflict, ErrInvalidArgument, ErrIO}

// MergeReading is a reading of how the seed's select_claim_prefix (which it
// does not show) decides which later batches join a claim (rule
// runtime.claim_ready_queued_work.prefix_reading): how merge keys match,
// and whether a claim keeps to one delivery policy. Every reading is
// accepted.
type MergeReading int

const (
	// MergeSameKey: a later mergeable batch joins when its merge key is the
	// first batch's; the empty key is a key like any other. The reference's
	// reading.
	MergeSameKey MergeReading = iota
	// MergeKeyIgnored: any later mergeable batch joins a mergeable first.
	MergeKeyIgnored
	// MergeEmptyKeyAlone: as MergeSameKey, but a batch with the empty key
	// never merges (it is claimed alone and ends a prefix).
	MergeEmptyKeyAlone
	// mergeReadings counts the merge-key readings; OnePolicy is added to
	// one of them.
	mergeReadings
	// OnePolicy, added to a merge-key reading: a later batch joins only
	// when its delivery policy is the first batch's too.
	OnePolicy MergeReading = mergeReadings
)

// MergeReadings are every reading, the reference's first.
var MergeReadings = []MergeReading{MergeSameKey, MergeKeyIgnored, MergeEmptyKeyAlone,
	MergeSameKey + OnePolicy, MergeKeyIgnored + OnePolicy, MergeEmptyKeyAlone + OnePolicy}

func (m MergeReading) String() string {
	s := [...]string{"same key", "key ignored", "empty key alone"}[m%mergeReadings]
	if m >= OnePolicy {
		s += ", one delivery policy"
	}
	return s
}

// SelectClaimPrefix is the prefix rule of claim_ready_queued_work as the
// reference reads it (MergeSameKey).
func SelectClaimPrefix(candidates []QueuedWorkBatch, boundary QueuedWorkClaimBoundary, maxBatches int) int {
	return SelectClaimPrefixAs(MergeSameKey, candidates, boundary, maxBatches)
}

// SelectClaimPrefixAs is the prefix rule of claim_ready_queued_work under a
// merge reading, over the claimable batches in enqueue order. It returns how
// many of them one claim takes. What the seed fixes (rule
// runtime.claim_ready_queued_work.prefix: the claim is a prefix, at most
// maxBatches) and the kit's reading of the rest (prefix_reading):
//
//  1. at most maxBatches;
//  2. a batch not deliverable at the boundary (DeliverNextTurn at
//     BoundaryStep) ends the prefix: later batches never jump the queue;
//  3. an exclusive first batch is claimed alone;
//  4. a later batch joins only while it is mergeable, and merges with a
//     mergeable first batch as the reading says; the first that does not
//     ends the prefix.
func SelectClaimPrefixAs(reading MergeReading, candidates []QueuedWorkBatch, boundary QueuedWorkClaimBoundary, maxBatches int) int {
	merges := func(first, b QueuedWorkBatch) bool {
		if first.SlotPolicy != SlotMergeable || b.SlotPolicy != SlotMergeable {
			return false
		}
		if reading >= OnePolicy && b.DeliveryPolicy != first.DeliveryPolicy {
			return false
		}
		switch reading % mergeReadings {
		case MergeKeyIgnored:
			return true
		case MergeEmptyKeyAlone:
			return first.MergeKey != "" && b.MergeKey == first.MergeKey
		}
		return b.MergeKey == first.MergeKey
	}
	n := 0
	for i, b := range candidates {
		if n >= maxBatches || (boundary == BoundaryStep && b.DeliveryPolicy != DeliverInterrupt) {
			break
		}
		if i > 0 && !merges(candidates[0], b) {
			break
		}
		n++
		if b.SlotPolicy == SlotExclusive {
			break
		}
	}
	return n
}

// Store is the runtime contract. Every method is one operation; a failed
// operation changes nothing (runtime.failure_leaves_no_trace), except that a
// refused renew_queued_work_claim keeps its write. Read-then-write
// operations hold the write lock of the database from their first read to
// their commit (runtime.write_lock). Where several rules are broken at once,
// the first in the order a method states decides; invalid_argument, which
// the seed's Rust types make impossible, may come at any point of that order
// (runtime.invalid_argument_at_any_point).
type Store interface {
	// DurabilityTier says what an acknowledged commit survives. A store on
	// a file is Durable: closed and opened again on its path, it finds
	// every commit it acknowledged (runtime.durability_tier.durable).
	DurabilityTier(ctx context.Context) (DurabilityTier, error)

	// LoadSession returns nil before the first commit
	// (runtime.load_session.none_before_first_commit). Then: the bound
	// session, the head revision, config, agent frames, current frame, the
	// head's checkpoint and its ref (runtime.load_session.head), the merged
	// token ledger (runtime.load_session.token_ledger; the seed's
	// merge_token_ledger_entries is not shown: entries in any order), and
	// the graph of the scope, with the scope's leaf or else the head's
	// (runtime.load_session.leaf):
	//   - full graph: every node that is not tombstoned
	//     (runtime.load_session.full_graph; the seed's loader is not shown:
	//     in any order, the reference's being commit order);
	//   - active path: the leaf and its ancestors by parent link
	//     (runtime.load_session.active_path; not shown either: in any order,
	//     the reference's root first). The walk stops at a node that is not
	//     stored, so an unknown leaf gives no nodes; at a tombstoned node it
	//     stops (the reference) or passes over it to its parent.
	LoadSession(ctx context.Context, scope ReadScope) (*SessionRead, error)

	// LoadNode returns the node, or nil when it is unknown or tombstoned
	// (runtime.load_node.live_only).
	LoadNode(ctx context.Context, nodeID string) (*Node, error)

	// CommitRuntimeState moves the head. Every check and write is one
	// transaction: an error leaves no trace of the commit. The checks, in
	// the seed's order (runtime.commit_runtime_state.check_order):
	//   1. a store bound to another session (by its first commit):
	//      ErrSessionBindingMismatch (binding);
	//   2. a turn commit of another session than the commit's:
	//      ErrRuntimeTurnCommitConflict (turn_session). A turn (session,
	//      turn) already committed: with the same hash the first result is
	//      answered unchanged, nothing else is checked or written, except
	//      that the lease is still released when asked (turn_replay); with
	//      another hash, ErrRuntimeTurnCommitConflict (turn_other_hash);
	//   3. no lease (lease_required), or one whose session, owner, token or
	//      fencing token is not the session's live lease's (lease_live):
	//      ErrSessionExecutionLeaseExpired;
	//   4. ExpectedHeadRevision, when set, not the stored revision (0 before
	//      the first commit): ErrHeadRevisionConflict (expected_revision);
	//   5. a completed claim of another session (completed_claim_session),
	//      or one any of whose batches is not held by that claim id and token
	//      (completed_claim_held): ErrQueuedWorkClaimExpired. The seed's
	//      ensure_queued_work_completion_conn is not shown: a claim that has
	//      expired but still holds its batches may be completed or refused;
	//   6. a graph delta that inserts a node id the store holds (tombstoned
	//      or not) or repeats one: ErrGraphNodeConflict, or ErrIO as the
	//      seed's failing INSERT surfaces it (graph_repeated_node).
	// Then: the revision goes up by one (revision); the graph delta applies
	// (graph_unchanged, graph_append, graph_replace_full); the checkpoint is
	// stored under a ref of the backend's choosing and becomes the head's
	// (checkpoint: the seed's put_checkpoint_conn is not shown; a content
	// address, the reference's, or a ref per stored checkpoint); config,
	// frames and current frame are replaced (head_fields); the usage deltas
	// are appended (usage); the completed claims' batches are deleted
	// (completed_claims_deleted); the named attachments of this session not
	// yet committed are marked committed at now (an attachment committed
	// before keeps its first time; another session's or an unknown id is
	// left alone: attachments); the turn's result is recorded; the lease is
	// released when asked (release).
	CommitRuntimeState(ctx context.Context, commit RuntimeCommit) (CommitResult, error)

	// TryClaimSessionExecutionLease grants the session's lease to owner
	// (each session has its own: runtime.try_claim_session_execution_lease.
	// per_session):
	//   - no live lease: a new one, with the token LeaseToken (ids.go,
	//     token_format), fencing token the previous one's + 1 (1 for the
	//     first; a release or an expiry does not reset the count:
	//     fence_survives_release), claimed at now, expiring at now + ttl
	//     (grant);
	//   - a live lease of owner: extended to now + ttl, keeping its token,
	//     fencing token and claim time (extend_own);
	//   - a live lease of another owner: nil, and nothing changes
	//     (other_owner).
	TryClaimSessionExecutionLease(ctx context.Context, sessionID, ownerID string, ttlMs uint64) (*SessionExecutionLease, error)

	// RenewSessionExecutionLease extends the lease to now + ttl, keeping its
	// token, fencing token and claim time (runtime.
	// renew_session_execution_lease.extends), only when its owner, token and
	// fencing token all match the fence and it is live; else
	// ErrSessionExecutionLeaseExpired (live_match).
	RenewSessionExecutionLease(ctx context.Context, fence SessionExecutionLeaseFence, ttlMs uint64) (SessionExecutionLease, error)

	// ReleaseSessionExecutionLease clears the lease only when owner, token
	// and fencing token match; a mismatch changes nothing and is no error
	// (runtime.release_session_execution_lease.match). The fencing token
	// count stays.
	ReleaseSessionExecutionLease(ctx context.Context, completion SessionExecutionLeaseCompletion) error

	// EnqueueQueuedWork adds a batch at the end of the session's queue,
	// enqueued at now, with its payloads as items in order
	// (runtime.enqueue_queued_work.batch). Its batch id is the store's (the
	// seed's derive_batch_id is not shown), not that of any batch the store
	// holds (batch_id); its items' ids are ItemID of that id (ids.go,
	// item_ids). Its claim fencing token is the store's initial one, the
	// same for every batch (the DDL's default is not shown; the
	// reference's is 0: initial_claim_fence). A draft whose (session, source
	// key) is already queued answers the queued batch and adds nothing
	// (source_key).
	EnqueueQueuedWork(ctx context.Context, draft QueuedWorkBatchDraft) (QueuedWorkBatch, error)

	// ClaimReadyQueuedWork claims ready batches for owner. maxBatches 0:
	// nil, nothing checked (runtime.claim_ready_queued_work.max_zero). Else
	// the session lease fence must be the live lease
	// (ErrSessionExecutionLeaseExpired: lease_live). The candidates are the
	// session's batches whose available_at_ms <= now, unclaimed or whose
	// claim has expired, in enqueue order (candidates); the claim takes a
	// prefix of them, at most maxBatches, and none answers nil (prefix); how
	// long a prefix is SelectClaimPrefixAs under any MergeReading (the
	// seed's select_claim_prefix is not shown: prefix_reading). All or
	// nothing: the claim owns every batch it returns (all_or_nothing), and
	// each one's claim fencing token goes up by one (batch_fence). The claim
	// is claimed at now and expires at now + ttl; its id and token are the
	// store's, not a live claim's (claim_lease: the seed's
	// QueuedWorkClaimLease::derive is not shown); its fencing token is its
	// first batch's, before or after that batch's increment (claim_fence).
	ClaimReadyQueuedWork(ctx context.Context, sessionID string, lease SessionExecutionLeaseFence, ownerID string,
		boundary QueuedWorkClaimBoundary, ttlMs uint64, maxBatches int) (*QueuedWorkClaim, error)

	// RenewQueuedWorkClaim sets the expiry of every batch the claim's id and
	// token hold to now + ttl, live or expired: the seed's UPDATE has no
	// expiry condition, and commits before the answer is judged
	// (runtime.renew_queued_work_claim.no_expiry_check). No batch changed:
	// ErrQueuedWorkClaimExpired; every batch of the claim changed: the claim
	// with its expiry at now + ttl; some of them: either (the seed's
	// renewed_claim is not shown: changed). The write stays either way.
	RenewQueuedWorkClaim(ctx context.Context, claim QueuedWorkClaim, ttlMs uint64) (QueuedWorkClaim, error)

	// AbandonQueuedWorkClaim frees the batches the claim (id and token)
	// still holds for the next claimer. Anything else changes nothing and
	// is no error (runtime.abandon_queued_work_claim.frees).
	AbandonQueuedWorkClaim(ctx context.Context, claim QueuedWorkClaim) error

	// CancelQueuedWorkBatch removes the batch and answers it only when it is
	// unclaimed or its claim has expired; else (or unknown) nil, and
	// nothing changes (runtime.cancel_queued_work_batch.free_only).
	CancelQueuedWorkBatch(ctx context.Context, sessionID, batchID string) (*QueuedWorkBatch, error)

	// ListQueuedWork lists every batch of the session, in enqueue order
	// (runtime.list_queued_work.all).
	ListQueuedWork(ctx context.Context, sessionID string) ([]QueuedWorkBatch, error)

	// ListPendingQueuedWork lists the session's batches that are unclaimed
	// or whose claim has expired (delayed ones included), in enqueue order
	// (runtime.list_pending_queued_work.free).
	ListPendingQueuedWork(ctx context.Context, sessionID string) ([]QueuedWorkBatch, error)

	// SaveSessionMeta replaces the session meta (opaque;
	// runtime.save_session_meta.last_wins: the seed's inherent method is
	// not shown).
	SaveSessionMeta(ctx context.Context, meta spec.RawJSON) error

	// LoadSessionMeta returns the last saved meta, or nil
	// (runtime.load_session_meta.last_saved).
	LoadSessionMeta(ctx context.Context) (spec.RawJSON, error)

	// TombstoneNodes marks the nodes tombstoned: they leave load_node and
	// both graph scopes. Unknown ids are ignored
	// (runtime.tombstone_nodes.hides).
	TombstoneNodes(ctx context.Context, ids []string) error

	// Vacuum deletes every tombstoned node and says how many
	// (runtime.vacuum.removes_tombstoned).
	Vacuum(ctx context.Context) (VacuumReport, error)

	// GcUnreachable deletes stored checkpoints the head does not name and
	// says how many; the head's stays (runtime.gc_unreachable.collects: the
	// seed's collector, and the automatic one every commit may run, are not
	// shown, so the count is bounded: at most the stored checkpoints other
	// than the head's).
	GcUnreachable(ctx context.Context) (GcReport, error)

	// StageAttachment stores an attachment of a session, uncommitted. An id
	// already staged keeps its first session, bytes and commit time
	// (runtime.stage_attachment.first_staging). The seed stages attachments
	// through its blob API, outside the trait; the contract adds this
	// operation and LoadAttachment so the commit rule on attachments can be
	// checked.
	StageAttachment(ctx context.Context, sessionID, attachmentID string, data []byte) error

	// LoadAttachment returns the attachment, or nil when unknown
	// (runtime.load_attachment.as_staged).
	LoadAttachment(ctx context.Context, attachmentID string) (*Attachment, error)

	// Close releases the store. Operations after Close fail.
	Close() error
}
