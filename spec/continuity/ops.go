package continuity

import (
	"context"
	"fmt"

	"github.com/storecheck/storecheck/spec"
)

// The continuity operations as values, one per Store method. The result each
// one yields from Apply is named on it, and is the type its Result method
// returns.

// ResolveMany yields map[Identity]Resolution.
type ResolveMany struct {
	Identities []Identity `json:"identities"`
}

// LoadSessionSnapshot yields *Snapshot (nil when none).
type LoadSessionSnapshot struct {
	SessionID SessionID `json:"session_id"`
}

// SessionSnapshotMatchesCurrent yields bool.
type SessionSnapshotMatchesCurrent struct {
	Candidate MatchCandidate `json:"candidate"`
}

// DeleteSessionSnapshotIfCurrentRevision yields bool.
type DeleteSessionSnapshotIfCurrentRevision struct {
	SessionID        SessionID `json:"session_id"`
	ExpectedRevision string    `json:"expected_revision"`
}

// SaveSessionSnapshot yields nil.
type SaveSessionSnapshot struct {
	Write SnapshotWrite `json:"write"`
}

// UpsertContinuityRecord yields nil.
type UpsertContinuityRecord struct {
	Record Record       `json:"record"`
	Fence  FencingToken `json:"fence"`
}

// RollbackContinuityRecord yields nil.
type RollbackContinuityRecord struct {
	Attempt  Record       `json:"attempt"`
	Previous *Record      `json:"previous"`
	Fence    FencingToken `json:"fence"`
}

// DeleteContinuityRecord yields nil.
type DeleteContinuityRecord struct {
	Identity Identity     `json:"identity"`
	Fence    FencingToken `json:"fence"`
}

// MaxFencingToken yields FencingToken.
type MaxFencingToken struct{}

func (ResolveMany) Name() string                   { return "resolve_many" }
func (LoadSessionSnapshot) Name() string           { return "load_session_snapshot" }
func (SessionSnapshotMatchesCurrent) Name() string { return "session_snapshot_matches_current" }
func (DeleteSessionSnapshotIfCurrentRevision) Name() string {
	return "delete_session_snapshot_if_current_revision"
}
func (SaveSessionSnapshot) Name() string      { return "save_session_snapshot" }
func (UpsertContinuityRecord) Name() string   { return "upsert_continuity_record" }
func (RollbackContinuityRecord) Name() string { return "rollback_continuity_record" }
func (DeleteContinuityRecord) Name() string   { return "delete_continuity_record" }
func (MaxFencingToken) Name() string          { return "max_fencing_token" }

func (ResolveMany) Result() any                   { return map[Identity]Resolution(nil) }
func (LoadSessionSnapshot) Result() any           { return (*Snapshot)(nil) }
func (SessionSnapshotMatchesCurrent) Result() any { return false }
func (DeleteSessionSnapshotIfCurrentRevision) Result() any {
	return false
}
func (SaveSessionSnapshot) Result() any      { return nil }
func (UpsertContinuityRecord) Result() any   { return nil }
func (RollbackContinuityRecord) Result() any { return nil }
func (DeleteContinuityRecord) Result() any   { return nil }
func (MaxFencingToken) Result() any          { return FencingToken(0) }

// Ops lists one zero value of every operation, in the contract's order.
var Ops = []spec.Op{ResolveMany{}, LoadSessionSnapshot{}, SessionSnapshotMatchesCurrent{},
	DeleteSessionSnapshotIfCurrentRevision{}, SaveSessionSnapshot{}, UpsertContinuityRecord{},
	RollbackContinuityRecord{}, DeleteContinuityRecord{}, MaxFencingToken{}}

// Apply performs op on s and returns the op's result value.
func Apply(ctx context.Context, s Store, op spec.Op) (any, error) {
	switch o := op.(type) {
	case ResolveMany:
		return s.ResolveMany(ctx, o.Identities)
	case LoadSessionSnapshot:
		return s.LoadSessionSnapshot(ctx, o.SessionID)
	case SessionSnapshotMatchesCurrent:
		return s.SessionSnapshotMatchesCurrent(ctx, o.Candidate)
	case DeleteSessionSnapshotIfCurrentRevision:
		return s.DeleteSessionSnapshotIfCurrentRevision(ctx, o.SessionID, o.ExpectedRevision)
	case SaveSessionSnapshot:
		return nil, s.SaveSessionSnapshot(ctx, o.Write)
	case UpsertContinuityRecord:
		return nil, s.UpsertContinuityRecord(ctx, o.Record, o.Fence)
	case RollbackContinuityRecord:
		return nil, s.RollbackContinuityRecord(ctx, o.Attempt, o.Previous, o.Fence)
	case DeleteContinuityRecord:
		return nil, s.DeleteContinuityRecord(ctx, o.Identity, o.Fence)
	case MaxFencingToken:
		return s.MaxFencingToken(ctx)
	}
	return nil, fmt.Errorf("continuity: %T is not a continuity operation", op)
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

func (c Proxy) ResolveMany(ctx context.Context, ids []Identity) (map[Identity]Resolution, error) {
	return call[map[Identity]Resolution](ctx, c, ResolveMany{Identities: ids})
}

func (c Proxy) LoadSessionSnapshot(ctx context.Context, session SessionID) (*Snapshot, error) {
	return call[*Snapshot](ctx, c, LoadSessionSnapshot{SessionID: session})
}

func (c Proxy) SessionSnapshotMatchesCurrent(ctx context.Context, cand MatchCandidate) (bool, error) {
	return call[bool](ctx, c, SessionSnapshotMatchesCurrent{Candidate: cand})
}

func (c Proxy) DeleteSessionSnapshotIfCurrentRevision(ctx context.Context, session SessionID, rev string) (bool, error) {
	return call[bool](ctx, c, DeleteSessionSnapshotIfCurrentRevision{SessionID: session, ExpectedRevision: rev})
}

func (c Proxy) SaveSessionSnapshot(ctx context.Context, w SnapshotWrite) error {
	return c.do(ctx, SaveSessionSnapshot{Write: w})
}

func (c Proxy) UpsertContinuityRecord(ctx context.Context, r Record, fence FencingToken) error {
	return c.do(ctx, UpsertContinuityRecord{Record: r, Fence: fence})
}

func (c Proxy) RollbackContinuityRecord(ctx context.Context, attempt Record, previous *Record, fence FencingToken) error {
	return c.do(ctx, RollbackContinuityRecord{Attempt: attempt, Previous: previous, Fence: fence})
}

func (c Proxy) DeleteContinuityRecord(ctx context.Context, id Identity, fence FencingToken) error {
	return c.do(ctx, DeleteContinuityRecord{Identity: id, Fence: fence})
}

func (c Proxy) MaxFencingToken(ctx context.Context) (FencingToken, error) {
	return call[FencingToken](ctx, c, MaxFencingToken{})
}

// Close closes the target when it can be closed.
func (c Proxy) Close() error { return spec.CloseTarget(c.Target) }

// Contract describes the continuity store to the generic parts of the kit.
var Contract = spec.Contract{Name: StoreName, Ops: Ops, Kinds: Kinds, Rules: Rules, Vocabularies: Vocabularies, Refusals: Refusals}

// Crash ends the target as a killed process would (see adapters.Crasher),
// when it can; otherwise it closes it.
func (c Proxy) Crash() error { return spec.CrashTarget(c.Target) }
