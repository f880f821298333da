// Package continuity is the continuity store's contract (CONTRACT-06, from
// meerkat-mobkit's LocalContinuityStore in seeds/003).
//
// A continuity record says which runtime and session currently embody an
// agent identity, in which generation, at which checkpoint version, under
// which fencing token. Session snapshots are owned by (identity, generation).
// Writers present a fencing token from a lease provider; the store rejects
// tokens older than the one it holds, so a writer that lost its lease (a
// zombie after a restart, a stalled reset) cannot overwrite newer state.
//
// Every rule is stated on the Store method it governs. Each rule is checked by
// a spec of the same operation name: the records' in
// spec/suite/continuity_records.go, the snapshots' in
// spec/suite/continuity_snapshots.go.
package continuity

import (
	"context"
	"crypto/sha256"
	"encoding/hex"

	"github.com/storecheck/storecheck/spec"
)

// StoreName is the contract's name in reports, flags and the wire protocol.
const StoreName = "continuity"

type (
	// Identity names an agent across restarts ("triage:main").
	Identity string
	// RuntimeID names the runtime currently embodying an identity.
	RuntimeID string
	// SessionID names one session of an identity.
	SessionID string
	// Generation counts resets of an identity; it never goes backwards.
	Generation uint64
	// CheckpointVersion orders checkpoints within one generation.
	CheckpointVersion uint64
	// FencingToken is the write authority a lease provider hands out; a
	// larger token is newer.
	FencingToken uint64
)

// Record is the continuity head of one identity. Its fencing token is kept
// beside it by the store but is not part of the record (as in the seed).
type Record struct {
	Identity          Identity          `json:"identity"`
	AgentRuntimeID    RuntimeID         `json:"agent_runtime_id"`
	SessionID         SessionID         `json:"session_id"`
	Generation        Generation        `json:"generation"`
	CheckpointVersion CheckpointVersion `json:"checkpoint_version"`
}

// Snapshot is a session's saved state: bytes the store does not interpret.
type Snapshot struct {
	Data []byte `json:"data"`
}

// SnapshotWrite is everything save_session_snapshot presents: the owner
// (identity, generation), the session, the checkpoint version the snapshot
// is at, the writer's fence, and the bytes.
type SnapshotWrite struct {
	Identity          Identity          `json:"identity"`
	SessionID         SessionID         `json:"session_id"`
	Generation        Generation        `json:"generation"`
	CheckpointVersion CheckpointVersion `json:"checkpoint_version"`
	FencingToken      FencingToken      `json:"fencing_token"`
	Data              []byte            `json:"data"`
}

// MatchCandidate is a snapshot with its full provenance, as a caller holds it
// when it asks whether it is still the current one.
type MatchCandidate = SnapshotWrite

// ResolveState says whether an identity has a continuity record.
type ResolveState string

const (
	Ready         ResolveState = "ready"
	Uninitialized ResolveState = "uninitialized"
)

// Resolution is resolve_many's answer for one identity: Ready with its
// record, or Uninitialized with none.
type Resolution struct {
	State  ResolveState `json:"state"`
	Record *Record      `json:"record,omitempty"`
}

// The contract's closed set of error kinds.
const (
	// ErrNotFound: no record where one is required, or the record belongs to
	// another session or generation than the writer presented.
	ErrNotFound spec.Kind = "not_found"
	// ErrStaleFencingToken: the presented fence is older than the stored one
	// (or, for rollback, not exactly the stored one).
	ErrStaleFencingToken spec.Kind = "stale_fencing_token"
	// ErrStaleCheckpointVersion: a snapshot that does not advance the
	// record's checkpoint version.
	ErrStaleCheckpointVersion spec.Kind = "stale_checkpoint_version"
	// ErrStaleContinuityGeneration: a write that would take an identity back
	// to an older generation, or a rollback of an attempt that is no longer
	// the current one.
	ErrStaleContinuityGeneration spec.Kind = "stale_continuity_generation"
	// ErrCorruption: stored or presented data contradicts itself (a snapshot
	// row owned by someone else, a rollback whose records name two
	// identities).
	ErrCorruption spec.Kind = "corruption"
	// ErrIO: the store could not do its work (open, query, commit).
	ErrIO spec.Kind = "io"
)

// Kinds is the closed set, in a fixed order.
var Kinds = []spec.Kind{ErrNotFound, ErrStaleFencingToken, ErrStaleCheckpointVersion,
	ErrStaleContinuityGeneration, ErrCorruption, ErrIO}

// SnapshotRevision is the revision delete_session_snapshot_if_current_revision
// compares: the lowercase hex SHA-256 of the snapshot's bytes. (The seed uses
// meerkat's session_projection_cas_token, which the seed does not show; a
// content hash keeps the rule: a delete names exactly the bytes it saw.)
func SnapshotRevision(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// Store is the continuity contract. Every method is one operation; a failed
// operation changes nothing.
type Store interface {
	// ResolveMany answers for each distinct identity asked: Ready with its
	// record, or Uninitialized. The answers are one consistent read.
	ResolveMany(ctx context.Context, identities []Identity) (map[Identity]Resolution, error)

	// LoadSessionSnapshot returns the session's snapshot, or nil when there
	// is none.
	LoadSessionSnapshot(ctx context.Context, session SessionID) (*Snapshot, error)

	// SessionSnapshotMatchesCurrent is true only when a snapshot of the
	// candidate's session exists with the candidate's identity, generation,
	// checkpoint version and bytes; the identity's record is at that same
	// session, generation and checkpoint version; the record's fence equals
	// the candidate's fence; and the snapshot's own fence is not above it
	// (the row's fence is provenance and may precede the current authority).
	SessionSnapshotMatchesCurrent(ctx context.Context, candidate MatchCandidate) (bool, error)

	// DeleteSessionSnapshotIfCurrentRevision deletes the session's snapshot
	// only when its SnapshotRevision equals expectedRevision, and says
	// whether it deleted. No snapshot, or another revision: false, nothing
	// changes.
	DeleteSessionSnapshotIfCurrentRevision(ctx context.Context, session SessionID, expectedRevision string) (bool, error)

	// SaveSessionSnapshot stores a snapshot and, in the same transaction,
	// moves the identity's record to the snapshot's checkpoint version and
	// fence. When the identity has a record:
	//   - another session or generation than the record's: ErrNotFound;
	//   - a fence lower than the record's: ErrStaleFencingToken;
	//   - a checkpoint version not above the record's: ErrStaleCheckpointVersion.
	// A snapshot row for the session owned by another identity or generation:
	// ErrCorruption, and the old bytes stay. With no record the snapshot is
	// still saved (a restore may write the snapshot before the record).
	SaveSessionSnapshot(ctx context.Context, w SnapshotWrite) error

	// UpsertContinuityRecord writes the identity's record under fence. When
	// a record exists:
	//   - a fence lower than the stored one: ErrStaleFencingToken;
	//   - a generation lower than the stored one: ErrStaleContinuityGeneration,
	//     even with a newer fence (a newer fence never authorises going back).
	// The checkpoint version never goes backwards within one generation
	// (the stored one is kept when higher: a same-generation session rebind
	// keeps the durable checkpoint head); a new generation takes the
	// presented version. The stored fence becomes the presented one.
	UpsertContinuityRecord(ctx context.Context, record Record, fence FencingToken) error

	// RollbackContinuityRecord abandons a reset attempt. previous, when
	// given, must name the attempt's identity, else ErrCorruption. The
	// identity's record must exist (ErrNotFound), its fence must equal fence
	// exactly (ErrStaleFencingToken), and its runtime, session and
	// generation must be the attempt's (ErrStaleContinuityGeneration); the
	// attempt's checkpoint version is not compared (it may have advanced).
	// Then, in one transaction: the snapshots of the attempt's generation go
	// (older generations' snapshots stay as the restored row's authority),
	// and the previous record comes back under fence, or the record is
	// deleted when there was none. A newer attempt is never clobbered: its
	// fence differs.
	RollbackContinuityRecord(ctx context.Context, attempt Record, previous *Record, fence FencingToken) error

	// DeleteContinuityRecord deletes the identity's record and all its
	// snapshots in one transaction. A fence lower than the stored one:
	// ErrStaleFencingToken, and everything stays.
	DeleteContinuityRecord(ctx context.Context, identity Identity, fence FencingToken) error

	// MaxFencingToken is the highest fence the store holds, over records and
	// snapshots both (0 when empty); it survives closing and reopening. A
	// lease provider seeds its counter from it on restart, so it never hands
	// out a token the store will reject as stale (the v0.7.8 restart abort).
	MaxFencingToken(ctx context.Context) (FencingToken, error)

	// Close releases the store. Operations after Close fail.
	Close() error
}

// Vocabularies are the contract's word sets (spec.Vocabulary).
var Vocabularies = []spec.Vocabulary{
	{Name: "ResolveState", Fields: []string{"Resolution.state"}, Words: []spec.Word{
		{Word: string(Ready), Means: "the identity has a continuity record: `record` holds it"},
		{Word: string(Uninitialized), Means: "the identity has none: `record` is absent (or null)"},
	}},
}
