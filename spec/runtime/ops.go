package runtime

import (
	"context"
	"fmt"

	"github.com/storecheck/storecheck/spec"
)

// The runtime operations as values, one per Store method. The result each
// one yields from Apply is named on it.

// DurabilityTierOp yields DurabilityTier.
type DurabilityTierOp struct{}

// LoadSession yields *SessionRead (nil before the first commit).
type LoadSession struct {
	Scope ReadScope `json:"scope"`
}

// LoadNode yields *Node (nil when unknown or tombstoned).
type LoadNode struct {
	NodeID string `json:"node_id"`
}

// CommitRuntimeState yields CommitResult.
type CommitRuntimeState struct {
	Commit RuntimeCommit `json:"commit"`
}

// TryClaimSessionExecutionLease yields *SessionExecutionLease (nil when
// another owner holds it).
type TryClaimSessionExecutionLease struct {
	SessionID string `json:"session_id"`
	OwnerID   string `json:"owner_id"`
	TTLMs     uint64 `json:"lease_ttl_ms"`
}

// RenewSessionExecutionLease yields SessionExecutionLease.
type RenewSessionExecutionLease struct {
	Fence SessionExecutionLeaseFence `json:"fence"`
	TTLMs uint64                     `json:"lease_ttl_ms"`
}

// ReleaseSessionExecutionLease yields nil.
type ReleaseSessionExecutionLease struct {
	Completion SessionExecutionLeaseCompletion `json:"completion"`
}

// EnqueueQueuedWork yields QueuedWorkBatch.
type EnqueueQueuedWork struct {
	Draft QueuedWorkBatchDraft `json:"batch"`
}

// ClaimReadyQueuedWork yields *QueuedWorkClaim (nil when nothing is claimed).
type ClaimReadyQueuedWork struct {
	SessionID  string                     `json:"session_id"`
	Lease      SessionExecutionLeaseFence `json:"session_execution_lease"`
	OwnerID    string                     `json:"owner_id"`
	Boundary   QueuedWorkClaimBoundary    `json:"boundary"`
	TTLMs      uint64                     `json:"lease_ttl_ms"`
	MaxBatches int                        `json:"max_batches"`
}

// RenewQueuedWorkClaim yields QueuedWorkClaim.
type RenewQueuedWorkClaim struct {
	Claim QueuedWorkClaim `json:"claim"`
	TTLMs uint64          `json:"lease_ttl_ms"`
}

// AbandonQueuedWorkClaim yields nil.
type AbandonQueuedWorkClaim struct {
	Claim QueuedWorkClaim `json:"claim"`
}

// CancelQueuedWorkBatch yields *QueuedWorkBatch (nil when not cancelled).
type CancelQueuedWorkBatch struct {
	SessionID string `json:"session_id"`
	BatchID   string `json:"batch_id"`
}

// ListQueuedWork yields []QueuedWorkBatch.
type ListQueuedWork struct {
	SessionID string `json:"session_id"`
}

// ListPendingQueuedWork yields []QueuedWorkBatch.
type ListPendingQueuedWork struct {
	SessionID string `json:"session_id"`
}

// SaveSessionMeta yields nil.
type SaveSessionMeta struct {
	Meta spec.RawJSON `json:"meta"`
}

// LoadSessionMeta yields spec.RawJSON (nil when none).
type LoadSessionMeta struct{}

// TombstoneNodes yields nil.
type TombstoneNodes struct {
	IDs []string `json:"ids"`
}

// Vacuum yields VacuumReport.
type Vacuum struct{}

// GcUnreachable yields GcReport.
type GcUnreachable struct{}

// StageAttachment yields nil.
type StageAttachment struct {
	SessionID    string `json:"session_id"`
	AttachmentID string `json:"attachment_id"`
	Data         []byte `json:"data"`
}

// LoadAttachment yields *Attachment (nil when unknown).
type LoadAttachment struct {
	AttachmentID string `json:"attachment_id"`
}

func (DurabilityTierOp) Name() string              { return "durability_tier" }
func (LoadSession) Name() string                   { return "load_session" }
func (LoadNode) Name() string                      { return "load_node" }
func (CommitRuntimeState) Name() string            { return "commit_runtime_state" }
func (TryClaimSessionExecutionLease) Name() string { return "try_claim_session_execution_lease" }
func (RenewSessionExecutionLease) Name() string    { return "renew_session_execution_lease" }
func (ReleaseSessionExecutionLease) Name() string  { return "release_session_execution_lease" }
func (EnqueueQueuedWork) Name() string             { return "enqueue_queued_work" }
func (ClaimReadyQueuedWork) Name() string          { return "claim_ready_queued_work" }
func (RenewQueuedWorkClaim) Name() string          { return "renew_queued_work_claim" }
func (AbandonQueuedWorkClaim) Name() string        { return "abandon_queued_work_claim" }
func (CancelQueuedWorkBatch) Name() string         { return "cancel_queued_work_batch" }
func (ListQueuedWork) Name() string                { return "list_queued_work" }
func (ListPendingQueuedWork) Name() string         { return "list_pending_queued_work" }
func (SaveSessionMeta) Name() string               { return "save_session_meta" }
func (LoadSessionMeta) Name() string               { return "load_session_meta" }
func (TombstoneNodes) Name() string                { return "tombstone_nodes" }
func (Vacuum) Name() string                        { return "vacuum" }
func (GcUnreachable) Name() string                 { return "gc_unreachable" }
func (StageAttachment) Name() string               { return "stage_attachment" }
func (LoadAttachment) Name() string                { return "load_attachment" }

// Result is the zero value of what each operation yields (a typed nil for a
// pointer or slice; untyped nil when it yields nothing), so a decoder or a
// checker knows the result's type without a table of its own.
func (DurabilityTierOp) Result() any              { return DurabilityTier("") }
func (LoadSession) Result() any                   { return (*SessionRead)(nil) }
func (LoadNode) Result() any                      { return (*Node)(nil) }
func (CommitRuntimeState) Result() any            { return CommitResult{} }
func (TryClaimSessionExecutionLease) Result() any { return (*SessionExecutionLease)(nil) }
func (RenewSessionExecutionLease) Result() any    { return SessionExecutionLease{} }
func (ReleaseSessionExecutionLease) Result() any  { return nil }
func (EnqueueQueuedWork) Result() any             { return QueuedWorkBatch{} }
func (ClaimReadyQueuedWork) Result() any          { return (*QueuedWorkClaim)(nil) }
func (RenewQueuedWorkClaim) Result() any          { return QueuedWorkClaim{} }
func (AbandonQueuedWorkClaim) Result() any        { return nil }
func (CancelQueuedWorkBatch) Result() any         { return (*QueuedWorkBatch)(nil) }
func (ListQueuedWork) Result() any                { return []QueuedWorkBatch(nil) }
func (ListPendingQueuedWork) Result() any         { return []QueuedWorkBatch(nil) }
func (SaveSessionMeta) Result() any               { return nil }
func (LoadSessionMeta) Result() any               { return spec.RawJSON(nil) }
func (TombstoneNodes) Result() any                { return nil }
func (Vacuum) Result() any                        { return VacuumReport{} }
func (GcUnreachable) Result() any                 { return GcReport{} }
func (StageAttachment) Result() any               { return nil }
func (LoadAttachment) Result() any                { return (*Attachment)(nil) }

// Ops lists one zero value of every operation, in the contract's order.
var Ops = []spec.Op{DurabilityTierOp{}, LoadSession{}, LoadNode{}, CommitRuntimeState{},
	TryClaimSessionExecutionLease{}, RenewSessionExecutionLease{}, ReleaseSessionExecutionLease{},
	EnqueueQueuedWork{}, ClaimReadyQueuedWork{}, RenewQueuedWorkClaim{}, AbandonQueuedWorkClaim{},
	CancelQueuedWorkBatch{}, ListQueuedWork{}, ListPendingQueuedWork{}, SaveSessionMeta{}, LoadSessionMeta{},
	TombstoneNodes{}, Vacuum{}, GcUnreachable{}, StageAttachment{}, LoadAttachment{}}

// Apply performs op on s and returns the op's result value.
func Apply(ctx context.Context, s Store, op spec.Op) (any, error) {
	switch o := op.(type) {
	case DurabilityTierOp:
		return s.DurabilityTier(ctx)
	case LoadSession:
		return s.LoadSession(ctx, o.Scope)
	case LoadNode:
		return s.LoadNode(ctx, o.NodeID)
	case CommitRuntimeState:
		return s.CommitRuntimeState(ctx, o.Commit)
	case TryClaimSessionExecutionLease:
		return s.TryClaimSessionExecutionLease(ctx, o.SessionID, o.OwnerID, o.TTLMs)
	case RenewSessionExecutionLease:
		return s.RenewSessionExecutionLease(ctx, o.Fence, o.TTLMs)
	case ReleaseSessionExecutionLease:
		return nil, s.ReleaseSessionExecutionLease(ctx, o.Completion)
	case EnqueueQueuedWork:
		return s.EnqueueQueuedWork(ctx, o.Draft)
	case ClaimReadyQueuedWork:
		return s.ClaimReadyQueuedWork(ctx, o.SessionID, o.Lease, o.OwnerID, o.Boundary, o.TTLMs, o.MaxBatches)
	case RenewQueuedWorkClaim:
		return s.RenewQueuedWorkClaim(ctx, o.Claim, o.TTLMs)
	case AbandonQueuedWorkClaim:
		return nil, s.AbandonQueuedWorkClaim(ctx, o.Claim)
	case CancelQueuedWorkBatch:
		return s.CancelQueuedWorkBatch(ctx, o.SessionID, o.BatchID)
	case ListQueuedWork:
		return s.ListQueuedWork(ctx, o.SessionID)
	case ListPendingQueuedWork:
		return s.ListPendingQueuedWork(ctx, o.SessionID)
	case SaveSessionMeta:
		return nil, s.SaveSessionMeta(ctx, o.Meta)
	case LoadSessionMeta:
		return s.LoadSessionMeta(ctx)
	case TombstoneNodes:
		return nil, s.TombstoneNodes(ctx, o.IDs)
	case Vacuum:
		return s.Vacuum(ctx)
	case GcUnreachable:
		return s.GcUnreachable(ctx)
	case StageAttachment:
		return nil, s.StageAttachment(ctx, o.SessionID, o.AttachmentID, o.Data)
	case LoadAttachment:
		return s.LoadAttachment(ctx, o.AttachmentID)
	}
	return nil, fmt.Errorf("runtime: %T is not a runtime operation", op)
}

// Proxy is a Store whose every call becomes an operation value handed to an
// Applier: a process over the wire, a recorder, a fault injector. It is how
// the suite and the checkers drive any backend through one seam.
type Proxy struct {
	Target spec.Applier
}

var _ Store = Proxy{}

// call applies op and answers its result as T; do applies an op that yields
// nothing.
func call[T any](ctx context.Context, c Proxy, op spec.Op) (T, error) {
	return spec.Call[T](ctx, c.Target, StoreName, op)
}

func (c Proxy) do(ctx context.Context, op spec.Op) error { return spec.Do(ctx, c.Target, op) }

func (c Proxy) DurabilityTier(ctx context.Context) (DurabilityTier, error) {
	return call[DurabilityTier](ctx, c, DurabilityTierOp{})
}

func (c Proxy) LoadSession(ctx context.Context, scope ReadScope) (*SessionRead, error) {
	return call[*SessionRead](ctx, c, LoadSession{Scope: scope})
}

func (c Proxy) LoadNode(ctx context.Context, nodeID string) (*Node, error) {
	return call[*Node](ctx, c, LoadNode{NodeID: nodeID})
}

func (c Proxy) CommitRuntimeState(ctx context.Context, commit RuntimeCommit) (CommitResult, error) {
	return call[CommitResult](ctx, c, CommitRuntimeState{Commit: commit})
}

func (c Proxy) TryClaimSessionExecutionLease(ctx context.Context, sessionID, ownerID string, ttlMs uint64) (*SessionExecutionLease, error) {
	return call[*SessionExecutionLease](ctx, c, TryClaimSessionExecutionLease{SessionID: sessionID, OwnerID: ownerID, TTLMs: ttlMs})
}

func (c Proxy) RenewSessionExecutionLease(ctx context.Context, fence SessionExecutionLeaseFence, ttlMs uint64) (SessionExecutionLease, error) {
	return call[SessionExecutionLease](ctx, c, RenewSessionExecutionLease{Fence: fence, TTLMs: ttlMs})
}

func (c Proxy) ReleaseSessionExecutionLease(ctx context.Context, completion SessionExecutionLeaseCompletion) error {
	return c.do(ctx, ReleaseSessionExecutionLease{Completion: completion})
}

func (c Proxy) EnqueueQueuedWork(ctx context.Context, draft QueuedWorkBatchDraft) (QueuedWorkBatch, error) {
	return call[QueuedWorkBatch](ctx, c, EnqueueQueuedWork{Draft: draft})
}

func (c Proxy) ClaimReadyQueuedWork(ctx context.Context, sessionID string, lease SessionExecutionLeaseFence, ownerID string,
	boundary QueuedWorkClaimBoundary, ttlMs uint64, maxBatches int) (*QueuedWorkClaim, error) {
	return call[*QueuedWorkClaim](ctx, c, ClaimReadyQueuedWork{SessionID: sessionID, Lease: lease, OwnerID: ownerID, Boundary: boundary, TTLMs: ttlMs, MaxBatches: maxBatches})
}

func (c Proxy) RenewQueuedWorkClaim(ctx context.Context, claim QueuedWorkClaim, ttlMs uint64) (QueuedWorkClaim, error) {
	return call[QueuedWorkClaim](ctx, c, RenewQueuedWorkClaim{Claim: claim, TTLMs: ttlMs})
}

func (c Proxy) AbandonQueuedWorkClaim(ctx context.Context, claim QueuedWorkClaim) error {
	return c.do(ctx, AbandonQueuedWorkClaim{Claim: claim})
}

func (c Proxy) CancelQueuedWorkBatch(ctx context.Context, sessionID, batchID string) (*QueuedWorkBatch, error) {
	return call[*QueuedWorkBatch](ctx, c, CancelQueuedWorkBatch{SessionID: sessionID, BatchID: batchID})
}

func (c Proxy) ListQueuedWork(ctx context.Context, sessionID string) ([]QueuedWorkBatch, error) {
	return call[[]QueuedWorkBatch](ctx, c, ListQueuedWork{SessionID: sessionID})
}

func (c Proxy) ListPendingQueuedWork(ctx context.Context, sessionID string) ([]QueuedWorkBatch, error) {
	return call[[]QueuedWorkBatch](ctx, c, ListPendingQueuedWork{SessionID: sessionID})
}

func (c Proxy) SaveSessionMeta(ctx context.Context, meta spec.RawJSON) error {
	return c.do(ctx, SaveSessionMeta{Meta: meta})
}

func (c Proxy) LoadSessionMeta(ctx context.Context) (spec.RawJSON, error) {
	return call[spec.RawJSON](ctx, c, LoadSessionMeta{})
}

func (c Proxy) TombstoneNodes(ctx context.Context, ids []string) error {
	return c.do(ctx, TombstoneNodes{IDs: ids})
}

func (c Proxy) Vacuum(ctx context.Context) (VacuumReport, error) {
	return call[VacuumReport](ctx, c, Vacuum{})
}

func (c Proxy) GcUnreachable(ctx context.Context) (GcReport, error) {
	return call[GcReport](ctx, c, GcUnreachable{})
}

func (c Proxy) StageAttachment(ctx context.Context, sessionID, attachmentID string, data []byte) error {
	return c.do(ctx, StageAttachment{SessionID: sessionID, AttachmentID: attachmentID, Data: data})
}

func (c Proxy) LoadAttachment(ctx context.Context, attachmentID string) (*Attachment, error) {
	return call[*Attachment](ctx, c, LoadAttachment{AttachmentID: attachmentID})
}

// Close closes the target when it can be closed.
func (c Proxy) Close() error { return spec.CloseTarget(c.Target) }

// Contract describes the runtime store to the generic parts of the kit.
var Contract = spec.Contract{Name: StoreName, Ops: Ops, Kinds: Kinds, Rules: Rules, Vocabularies: Vocabularies, Refusals: Refusals,
	DurabilityDeclared: true}

// Crash ends the target as a killed process would (see adapters.Crasher),
// when it can; otherwise it closes it.
func (c Proxy) Crash() error { return spec.CrashTarget(c.Target) }
