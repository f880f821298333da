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
// Payloads the kit does not interpret (graph node data, checkpoint bytes,
// config, agent frames, session meta, queued payloads) are opaque values: a
// store keeps them byte for byte. An empty opaque JSON value reads back as
// nil (JSON has no empty document); checkpoint and attachment bytes read back
// as empty bytes, never nil.
//
// Times are Unix milliseconds of the store's injected clock, read once at
// the start of each operation (now). A lease or claim is live while
// now < expires_at_ms: one whose expiry equals now has expired.
//
// Every rule is stated on the Store method it governs. Each rule is checked by
// a spec in spec/suite/runtime.go of the same operation name.
package runtime

import (
	"context"
	"crypto/sha256"
	"encoding/hex"

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
	// GraphAppend adds the delta's nodes after the stored ones and sets the
	// leaf. A node id the store already holds (tombstoned or not, or twice
	// in the delta) fails ErrGraphNodeConflict: an append never overwrites.
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

// CheckpointRef is the reference a commit gives its checkpoint: "sha256:"
// and the lowercase hex SHA-256 of the bytes. (The seed's blob layout and
// manifest are the backend's own; a content address keeps the rule that a
// reference names exactly one content.)
func CheckpointRef(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
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
	// (source, model), each count the sum of the deltas', ordered by source
	// then model.
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
// it has had.
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
	// FencingToken is the first batch's claim fencing token after the claim.
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
	// ErrGraphNodeConflict: an append of a node id the graph already holds.
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

// SelectClaimPrefix is the prefix rule of claim_ready_queued_work (the
// seed's select_claim_prefix, which it does not show), over the claimable
// batches in enqueue order. It returns how many of them one claim takes:
//
//  1. at most maxBatches;
//  2. a batch not deliverable at the boundary (DeliverNextTurn at
//     BoundaryStep) ends the prefix: later batches never jump the queue;
//  3. an exclusive first batch is claimed alone;
//  4. a later batch joins only while it is mergeable with the same merge key
//     as a mergeable first batch; the first that is not ends the prefix.
func SelectClaimPrefix(candidates []QueuedWorkBatch, boundary QueuedWorkClaimBoundary, maxBatches int) int {
	n := 0
	for i, b := range candidates {
		if n >= maxBatches || (boundary == BoundaryStep && b.DeliveryPolicy != DeliverInterrupt) {
			break
		}
		if i > 0 && (candidates[0].SlotPolicy != SlotMergeable || b.SlotPolicy != SlotMergeable || b.MergeKey != candidates[0].MergeKey) {
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
// operation changes nothing.
type Store interface {
	// DurabilityTier says what an acknowledged commit survives (see
	// DurabilityTier). A Durable store, closed and opened again on its
	// path, finds every commit it acknowledged.
	DurabilityTier(ctx context.Context) (DurabilityTier, error)

	// LoadSession returns nil before the first commit. Then: the bound
	// session, the head revision, config, agent frames, current frame, the
	// head's checkpoint and its reference, the merged token ledger, and the
	// graph of the scope:
	//   - full graph: every node that is not tombstoned, in the order they
	//     were committed, with the head's leaf;
	//   - active path: the leaf (the scope's, else the head's) and its
	//     ancestors by parent link, root first, with that leaf. The walk
	//     stops at a node that is missing or tombstoned (it and its
	//     ancestors are left out); an unknown leaf gives no nodes.
	LoadSession(ctx context.Context, scope ReadScope) (*SessionRead, error)

	// LoadNode returns the node, or nil when it is unknown or tombstoned.
	LoadNode(ctx context.Context, nodeID string) (*Node, error)

	// CommitRuntimeState moves the head. Every check and write is one
	// transaction: an error leaves no trace of the commit. The checks, in
	// this order:
	//   1. a store bound to another session (by its first commit):
	//      ErrSessionBindingMismatch;
	//   2. a turn commit of another session than the commit's:
	//      ErrRuntimeTurnCommitConflict. A turn (session, turn) already
	//      committed: with the same hash the first result is answered
	//      unchanged, nothing else is checked or written, except that the
	//      lease is still released when asked; with another hash,
	//      ErrRuntimeTurnCommitConflict;
	//   3. no lease, or one whose session, owner, token or fencing token is
	//      not the session's live lease's: ErrSessionExecutionLeaseExpired;
	//   4. ExpectedHeadRevision, when set, not the stored revision (0 before
	//      the first commit): ErrHeadRevisionConflict;
	//   5. a completed claim of another session, or one any of whose batches
	//      is not held by that claim id and token with a live claim:
	//      ErrQueuedWorkClaimExpired;
	//   6. an append that repeats a node id: ErrGraphNodeConflict.
	// Then: the revision goes up by one; the graph delta applies; the
	// checkpoint is stored under CheckpointRef and becomes the head's;
	// config, frames and current frame are replaced; the usage deltas are
	// appended; the completed claims' batches are deleted; the named
	// attachments of this session not yet committed are marked committed at
	// now (an attachment committed before keeps its first time; another
	// session's or an unknown id is left alone); the turn's result is
	// recorded; the lease is released when asked.
	CommitRuntimeState(ctx context.Context, commit RuntimeCommit) (CommitResult, error)

	// TryClaimSessionExecutionLease grants the session's lease to owner:
	//   - no live lease: a new one, with the token LeaseToken (ids.go), fencing token the
	//     previous one's + 1 (1 for the first; a release or an expiry does
	//     not reset the count), claimed at now, expiring at now + ttl;
	//   - a live lease of owner: extended to now + ttl, keeping its token,
	//     fencing token and claim time;
	//   - a live lease of another owner: nil, and nothing changes.
	TryClaimSessionExecutionLease(ctx context.Context, sessionID, ownerID string, ttlMs uint64) (*SessionExecutionLease, error)

	// RenewSessionExecutionLease extends the lease to now + ttl only when
	// its owner, token and fencing token all match the fence and it is
	// live; else ErrSessionExecutionLeaseExpired.
	RenewSessionExecutionLease(ctx context.Context, fence SessionExecutionLeaseFence, ttlMs uint64) (SessionExecutionLease, error)

	// ReleaseSessionExecutionLease clears the lease only when owner, token
	// and fencing token match; a mismatch changes nothing and is no error.
	// The fencing token count stays.
	ReleaseSessionExecutionLease(ctx context.Context, completion SessionExecutionLeaseCompletion) error

	// EnqueueQueuedWork adds a batch at the end of the session's queue,
	// enqueued at now, claim fencing token 0, with the batch id BatchID and item ids ItemID (ids.go) (never
	// reused by the store) and its payloads as items in order. A draft
	// whose (session, source key) is already queued answers the queued
	// batch and adds nothing.
	EnqueueQueuedWork(ctx context.Context, draft QueuedWorkBatchDraft) (QueuedWorkBatch, error)

	// ClaimReadyQueuedWork claims ready batches for owner. maxBatches 0: nil,
	// nothing checked. Else the session lease fence must be the live lease
	// (ErrSessionExecutionLeaseExpired). The claimable batches are the
	// session's whose available_at_ms <= now, unclaimed or whose claim has
	// expired, in enqueue order; SelectClaimPrefix says how many the claim
	// takes; none: nil. All or nothing: the claim owns every batch it
	// returns, and each one's claim fencing token goes up by one. The
	// claim expires at now + ttl; its id and token are ClaimID and
	// ClaimToken (ids.go).
	ClaimReadyQueuedWork(ctx context.Context, sessionID string, lease SessionExecutionLeaseFence, ownerID string,
		boundary QueuedWorkClaimBoundary, ttlMs uint64, maxBatches int) (*QueuedWorkClaim, error)

	// RenewQueuedWorkClaim extends a claim to now + ttl only when every one
	// of its batches is still held by its claim id and token with a live
	// claim; else ErrQueuedWorkClaimExpired.
	RenewQueuedWorkClaim(ctx context.Context, claim QueuedWorkClaim, ttlMs uint64) (QueuedWorkClaim, error)

	// AbandonQueuedWorkClaim frees the batches the claim (id and token)
	// still holds for the next claimer. Anything else changes nothing and
	// is no error.
	AbandonQueuedWorkClaim(ctx context.Context, claim QueuedWorkClaim) error

	// CancelQueuedWorkBatch removes the batch and answers it only when it is
	// unclaimed or its claim has expired; else (or unknown) nil, and
	// nothing changes.
	CancelQueuedWorkBatch(ctx context.Context, sessionID, batchID string) (*QueuedWorkBatch, error)

	// ListQueuedWork lists every batch of the session, in enqueue order.
	ListQueuedWork(ctx context.Context, sessionID string) ([]QueuedWorkBatch, error)

	// ListPendingQueuedWork lists the session's batches that are unclaimed
	// or whose claim has expired (delayed ones included), in enqueue order.
	ListPendingQueuedWork(ctx context.Context, sessionID string) ([]QueuedWorkBatch, error)

	// SaveSessionMeta replaces the session meta (opaque).
	SaveSessionMeta(ctx context.Context, meta spec.RawJSON) error

	// LoadSessionMeta returns the last saved meta, or nil.
	LoadSessionMeta(ctx context.Context) (spec.RawJSON, error)

	// TombstoneNodes marks the nodes tombstoned: they leave load_node and
	// both graph scopes. Unknown ids are ignored.
	TombstoneNodes(ctx context.Context, ids []string) error

	// Vacuum deletes every tombstoned node and says how many.
	Vacuum(ctx context.Context) (VacuumReport, error)

	// GcUnreachable deletes every stored checkpoint the head does not name
	// and says how many. (Recorded turn results keep their references.)
	GcUnreachable(ctx context.Context) (GcReport, error)

	// StageAttachment stores an attachment of a session, uncommitted. An id
	// already staged keeps its first session, bytes and commit time. (The
	// seed stages attachments through its blob API, outside the trait; the
	// contract adds this operation and LoadAttachment so the commit rule on
	// attachments can be checked.)
	StageAttachment(ctx context.Context, sessionID, attachmentID string, data []byte) error

	// LoadAttachment returns the attachment, or nil when unknown.
	LoadAttachment(ctx context.Context, attachmentID string) (*Attachment, error)

	// Close releases the store. Operations after Close fail.
	Close() error
}
