// Package runtime is the reference runtime store: the contract of
// spec/runtime on SQLite, after the lash sqlite store's RuntimePersistence.
// Every operation is one transaction through sqlitedb (BEGIN IMMEDIATE for
// writes), so its checks and writes cannot interleave with another writer's,
// from this process or another, and a failed operation leaves no trace.
package runtime

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/storecheck/storecheck/reference/sqlitedb"
	"github.com/storecheck/storecheck/spec"
	r "github.com/storecheck/storecheck/spec/runtime"
)

const schema = `
CREATE TABLE IF NOT EXISTS session_head (
	singleton              INTEGER PRIMARY KEY CHECK (singleton = 1),
	session_id             TEXT NOT NULL,
	head_revision          INTEGER NOT NULL,
	config                 BLOB,
	agent_frames           BLOB,
	current_agent_frame_id TEXT NOT NULL,
	checkpoint_ref         TEXT NOT NULL,
	leaf_node_id           TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS checkpoints (
	checkpoint_ref TEXT PRIMARY KEY,
	data           BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS graph_nodes (
	seq        INTEGER PRIMARY KEY AUTOINCREMENT,
	node_id    TEXT NOT NULL UNIQUE,
	parent_id  TEXT NOT NULL,
	data       BLOB,
	tombstoned INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS usage_deltas (
	seq                 INTEGER PRIMARY KEY AUTOINCREMENT,
	source              TEXT NOT NULL,
	model               TEXT NOT NULL,
	input_tokens        INTEGER NOT NULL,
	output_tokens       INTEGER NOT NULL,
	cached_input_tokens INTEGER NOT NULL,
	reasoning_tokens    INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS runtime_turn_commits (
	session_id       TEXT NOT NULL,
	turn_id          TEXT NOT NULL,
	turn_commit_hash TEXT NOT NULL,
	head_revision    INTEGER NOT NULL,
	checkpoint_ref   TEXT NOT NULL,
	committed_at_ms  INTEGER NOT NULL,
	PRIMARY KEY (session_id, turn_id)
);
CREATE TABLE IF NOT EXISTS session_execution_leases (
	session_id    TEXT PRIMARY KEY,
	owner_id      TEXT,
	lease_token   TEXT,
	fencing_token INTEGER NOT NULL,
	claimed_at_ms INTEGER NOT NULL,
	expires_at_ms INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS queued_work_batches (
	enqueue_seq         INTEGER PRIMARY KEY AUTOINCREMENT,
	batch_id            TEXT NOT NULL,
	session_id          TEXT NOT NULL,
	source_key          TEXT,
	delivery_policy     TEXT NOT NULL,
	slot_policy         TEXT NOT NULL,
	merge_key           TEXT NOT NULL,
	available_at_ms     INTEGER NOT NULL,
	enqueued_at_ms      INTEGER NOT NULL,
	claim_id            TEXT,
	claim_owner_id      TEXT,
	claim_token         TEXT,
	claim_fencing_token INTEGER NOT NULL DEFAULT 0,
	claim_claimed_at_ms INTEGER NOT NULL DEFAULT 0,
	claim_expires_at_ms INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS queued_work_batches_by_id ON queued_work_batches(batch_id);
CREATE UNIQUE INDEX IF NOT EXISTS queued_work_batches_by_source ON queued_work_batches(session_id, source_key)
	WHERE source_key IS NOT NULL;
CREATE TABLE IF NOT EXISTS queued_work_items (
	batch_id   TEXT NOT NULL,
	item_index INTEGER NOT NULL,
	item_id    TEXT NOT NULL,
	payload    BLOB,
	PRIMARY KEY (batch_id, item_index)
);
CREATE TABLE IF NOT EXISTS session_meta (
	singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
	data      BLOB
);
CREATE TABLE IF NOT EXISTS attachments (
	attachment_id   TEXT PRIMARY KEY,
	session_id      TEXT NOT NULL,
	data            BLOB NOT NULL,
	committed_at_ms INTEGER
);`

// CrashPoints are the places inside this store's write transactions where a
// crash would leave a half-done operation if the transaction were not
// atomic (see spec.CrashPoint), and after every commit.
var CrashPoints = []string{
	"commit_runtime_state/after_graph",
	"commit_runtime_state/after_head",
	"commit_runtime_state/after_claims_delete",
	"commit_runtime_state/after_commit",
	"claim_ready_queued_work/after_batches_update",
	"claim_ready_queued_work/after_commit",
	"try_claim_session_execution_lease/after_commit",
	"renew_session_execution_lease/after_commit",
	"release_session_execution_lease/after_commit",
	"enqueue_queued_work/after_commit",
	"renew_queued_work_claim/after_commit",
	"abandon_queued_work_claim/after_commit",
	"cancel_queued_work_batch/after_commit",
	"tombstone_nodes/after_commit",
	"save_session_meta/after_commit",
	"stage_attachment/after_commit",
	"vacuum/after_commit",
	"gc_unreachable/after_commit",
}

// Options says how to open the store.
type Options struct {
	// Path is the database file; "" or ":memory:" is an in-memory store.
	Path string
	// BusyTimeout bounds the wait for another connection's lock (default 5s).
	BusyTimeout time.Duration
	// Clock is the store's only time source (default: the real clock).
	Clock clockwork.Clock
	// Rules are the decisions the store takes (Rules{}: the contract's).
	Rules Rules
	// Synchronous is SQLite's synchronous setting (sqlitedb.Options); ""
	// leaves SQLite's default, as the seeds do. Only deliberate bugs set it.
	Synchronous string
}

// Store is the reference runtime store.
type Store struct {
	db    *sqlitedb.DB
	clock clockwork.Clock
	tier  r.DurabilityTier
	rules Rules
}

var _ r.Store = (*Store)(nil)

// Open opens (or creates) a store.
func Open(ctx context.Context, o Options) (*Store, error) {
	db, err := sqlitedb.Open(ctx, sqlitedb.Options{Path: o.Path, BusyTimeout: o.BusyTimeout, Synchronous: o.Synchronous, Schema: schema, IOKind: r.ErrIO})
	if err != nil {
		return nil, err
	}
	s := &Store{db: db, clock: o.Clock, tier: r.Durable, rules: o.Rules.complete()}
	if s.clock == nil {
		s.clock = clockwork.NewRealClock()
	}
	if sqlitedb.InMemory(o.Path) {
		s.tier = r.Ephemeral
	}
	return s, nil
}

// WithRules is s deciding by rs: the same database (closing either closes
// it) and clock, other rules.
func (s *Store) WithRules(rs Rules) *Store {
	v := *s
	v.rules = rs.complete()
	return &v
}

// Close closes the store.
func (s *Store) Close() error { return s.db.Close() }

// now is the operation's one reading of the clock, in Unix milliseconds.
func (s *Store) now() int64 { return s.clock.Now().UnixMilli() }

// free is the condition on queued_work_batches that no live claim holds a
// batch at now (by the expiry rule).
func (s *Store) free(now int64) Cond {
	return Cond{SQL: "(claim_token IS NULL OR claim_expires_at_ms <= ?)", Args: []any{s.rules.ExpiredBy(now)}}
}

// ready is the condition that a batch's available_at has come at now.
func ready(now int64) Cond { return Cond{SQL: "available_at_ms <= ?", Args: []any{now}} }

// The ids this store mints where the seed's derivations are not shown (rule
// runtime.minted_ids): the contract leaves them to the store, and these are
// the reference's own choices.

// checkpointRef is the ref of a checkpoint: a content address, "sha256:" and
// the lowercase hex SHA-256 of the bytes, so equal bytes are one checkpoint.
func checkpointRef(data []byte) string {
	sum := sha256.Sum256(data)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// batchID is the id of the store's seq-th enqueued batch (the enqueue
// sequence, never reused).
func batchID(session string, seq int64) string { return fmt.Sprintf("%s:batch:%d", session, seq) }

// claimID is the id of a claim whose first batch is first, at that batch's
// claim fencing token after the claim.
func claimID(session, first string, fence uint64) string {
	return fmt.Sprintf("%s:claim:%s:%d", session, first, fence)
}

// claimToken is the token of a claim made by owner at now.
func claimToken(claimID, owner string, now int64) string {
	return fmt.Sprintf("%s:%s:%d", claimID, owner, now)
}

// expiry is now + ttl, saturating.
func expiry(now int64, ttl uint64) int64 {
	if ttl > uint64(math.MaxInt64-now) {
		return math.MaxInt64
	}
	return now + int64(ttl)
}

// raw stores an opaque JSON value: empty is NULL.
func raw(v spec.RawJSON) any {
	if len(v) == 0 {
		return nil
	}
	return []byte(v)
}

// rawOut reads an opaque JSON value back: NULL or empty is nil.
func rawOut(b []byte) spec.RawJSON {
	if len(b) == 0 {
		return nil
	}
	return spec.RawJSON(b)
}

// bytesOut reads bytes back: never nil.
func bytesOut(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return b
}

func (s *Store) DurabilityTier(ctx context.Context) (r.DurabilityTier, error) {
	err := s.db.Read(ctx, "durability_tier", func(*sql.Tx) error { return nil })
	return s.tier, err
}

// head is the session_head row.
type head struct {
	sessionID, currentFrame, checkpointRef, leaf string
	revision                                     uint64
	config, frames                               []byte
}

func loadHead(ctx context.Context, tx *sql.Tx) (*head, error) {
	var h head
	err := tx.QueryRowContext(ctx, `SELECT session_id, head_revision, config, agent_frames, current_agent_frame_id,
		checkpoint_ref, leaf_node_id FROM session_head WHERE singleton = 1`).
		Scan(&h.sessionID, &h.revision, &h.config, &h.frames, &h.currentFrame, &h.checkpointRef, &h.leaf)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &h, nil
}

func (s *Store) LoadSession(ctx context.Context, scope r.ReadScope) (*r.SessionRead, error) {
	var out *r.SessionRead
	err := s.db.Read(ctx, "load_session", func(tx *sql.Tx) error {
		h, err := loadHead(ctx, tx)
		if err != nil || h == nil {
			return err
		}
		read := r.SessionRead{SessionID: h.sessionID, HeadRevision: h.revision, Config: rawOut(h.config),
			AgentFrames: rawOut(h.frames), CurrentAgentFrameID: h.currentFrame, CheckpointRef: h.checkpointRef,
			Graph: r.Graph{LeafNodeID: h.leaf}}
		if scope.ActivePath {
			if scope.LeafNodeID != "" {
				read.Graph.LeafNodeID = scope.LeafNodeID
			}
			read.Graph.Nodes, err = activePath(ctx, tx, read.Graph.LeafNodeID)
		} else {
			read.Graph.Nodes, err = liveNodes(ctx, tx)
		}
		if err != nil {
			return err
		}
		var data []byte
		err = tx.QueryRowContext(ctx, `SELECT data FROM checkpoints WHERE checkpoint_ref = ?`, h.checkpointRef).Scan(&data)
		if err != nil {
			return fmt.Errorf("head checkpoint %s: %w", h.checkpointRef, err)
		}
		read.Checkpoint = bytesOut(data)
		if read.TokenLedger, err = tokenLedger(ctx, tx); err != nil {
			return err
		}
		out = &read
		return nil
	})
	return out, err
}

func liveNodes(ctx context.Context, tx *sql.Tx) ([]r.Node, error) {
	rows, err := tx.QueryContext(ctx, `SELECT node_id, parent_id, data FROM graph_nodes WHERE tombstoned = 0 ORDER BY seq`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	nodes := []r.Node{}
	for rows.Next() {
		var n r.Node
		var data []byte
		if err := rows.Scan(&n.NodeID, &n.ParentID, &data); err != nil {
			return nil, err
		}
		n.Data = rawOut(data)
		nodes = append(nodes, n)
	}
	return nodes, rows.Err()
}

func loadLiveNode(ctx context.Context, tx *sql.Tx, id string) (*r.Node, error) {
	return loadNode(ctx, tx, id, `tombstoned = 0`)
}

// loadNode loads the node id when it meets the condition visible (nil:
// no such node).
func loadNode(ctx context.Context, tx *sql.Tx, id, visible string) (*r.Node, error) {
	n := r.Node{NodeID: id}
	var data []byte
	err := tx.QueryRowContext(ctx, `SELECT parent_id, data FROM graph_nodes WHERE node_id = ? AND `+visible, id).
		Scan(&n.ParentID, &data)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	n.Data = rawOut(data)
	return &n, nil
}

// activePath walks from leaf to the root by parent links and returns the
// path root first; a missing or tombstoned node ends the walk.
func activePath(ctx context.Context, tx *sql.Tx, leaf string) ([]r.Node, error) {
	var path []r.Node
	seen := map[string]bool{}
	for id := leaf; id != "" && !seen[id]; {
		seen[id] = true
		n, err := loadLiveNode(ctx, tx, id)
		if err != nil {
			return nil, err
		}
		if n == nil {
			break
		}
		path = append(path, *n)
		id = n.ParentID
	}
	out := make([]r.Node, len(path))
	for i, n := range path {
		out[len(path)-1-i] = n
	}
	return out, nil
}

// tokenLedger merges the usage deltas per (source, model).
func tokenLedger(ctx context.Context, tx *sql.Tx) ([]r.UsageEntry, error) {
	rows, err := tx.QueryContext(ctx, `SELECT source, model, SUM(input_tokens), SUM(output_tokens),
		SUM(cached_input_tokens), SUM(reasoning_tokens) FROM usage_deltas GROUP BY source, model ORDER BY source, model`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	ledger := []r.UsageEntry{}
	for rows.Next() {
		var e r.UsageEntry
		if err := rows.Scan(&e.Source, &e.Model, &e.Usage.InputTokens, &e.Usage.OutputTokens,
			&e.Usage.CachedInputTokens, &e.Usage.ReasoningTokens); err != nil {
			return nil, err
		}
		ledger = append(ledger, e)
	}
	return ledger, rows.Err()
}

func (s *Store) LoadNode(ctx context.Context, nodeID string) (*r.Node, error) {
	var n *r.Node
	err := s.db.Read(ctx, "load_node", func(tx *sql.Tx) (err error) {
		n, err = loadNode(ctx, tx, nodeID, s.rules.NodeVisible)
		return err
	})
	return n, err
}

func (s *Store) CommitRuntimeState(ctx context.Context, cm r.RuntimeCommit) (r.CommitResult, error) {
	now := s.now()
	var res r.CommitResult
	err := s.db.Write(ctx, "commit_runtime_state", func(tx *sql.Tx) error {
		h, err := loadHead(ctx, tx)
		if err != nil {
			return err
		}
		if h != nil && h.sessionID != cm.SessionID {
			return spec.Errorf(r.ErrSessionBindingMismatch, "the store is bound to session %s, not %s", h.sessionID, cm.SessionID)
		}
		if tc := cm.TurnCommit; tc != nil {
			if tc.SessionID != cm.SessionID {
				return spec.Errorf(r.ErrRuntimeTurnCommitConflict, "turn %s of session %s in a commit of session %s",
					tc.TurnID, tc.SessionID, cm.SessionID)
			}
			var hash string
			var prior r.CommitResult
			err := tx.QueryRowContext(ctx, `SELECT turn_commit_hash, head_revision, checkpoint_ref FROM runtime_turn_commits
				WHERE session_id = ? AND turn_id = ?`, tc.SessionID, tc.TurnID).Scan(&hash, &prior.HeadRevision, &prior.CheckpointRef)
			switch {
			case errors.Is(err, sql.ErrNoRows):
			case err != nil:
				return err
			case s.rules.SameTurn(hash, tc.TurnCommitHash):
				res = prior
				if cm.ReleaseLease != nil {
					return s.releaseLease(ctx, tx, *cm.ReleaseLease)
				}
				return nil
			default:
				return spec.Errorf(r.ErrRuntimeTurnCommitConflict, "turn %s of session %s was committed with hash %s, not %s",
					tc.TurnID, tc.SessionID, hash, tc.TurnCommitHash)
			}
		}
		if err := s.rules.CommitLease(cm.Lease, func(f r.SessionExecutionLeaseFence) error {
			return s.ensureLease(ctx, tx, cm.SessionID, f, now)
		}); err != nil {
			return err
		}
		var actual uint64
		if h != nil {
			actual = h.revision
		}
		if !s.rules.HeadRevision(cm.ExpectedHeadRevision, actual) {
			return spec.Errorf(r.ErrHeadRevisionConflict, "expected head revision %d, actual %d", *cm.ExpectedHeadRevision, actual)
		}
		res = r.CommitResult{HeadRevision: s.rules.NextRevision(actual), CheckpointRef: checkpointRef(cm.Checkpoint)}
		if err := s.checkCompletedClaims(ctx, tx, cm, now); err != nil {
			return err
		}
		if err := s.applyGraph(ctx, tx, cm.Graph); err != nil {
			return err
		}
		if err := spec.CrashPoint(ctx, "commit_runtime_state/after_graph"); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO checkpoints (checkpoint_ref, data) VALUES (?, ?)`,
			res.CheckpointRef, bytesOut(cm.Checkpoint)); err != nil {
			return fmt.Errorf("store checkpoint: %w", err)
		}
		for _, u := range cm.UsageDeltas {
			if _, err := tx.ExecContext(ctx, `INSERT INTO usage_deltas (source, model, input_tokens, output_tokens,
				cached_input_tokens, reasoning_tokens) VALUES (?, ?, ?, ?, ?, ?)`, u.Source, u.Model,
				u.Usage.InputTokens, u.Usage.OutputTokens, u.Usage.CachedInputTokens, u.Usage.ReasoningTokens); err != nil {
				return fmt.Errorf("append usage: %w", err)
			}
		}
		if err := writeHead(ctx, tx, cm, res); err != nil {
			return err
		}
		if err := spec.CrashPoint(ctx, "commit_runtime_state/after_head"); err != nil {
			return err
		}
		for _, c := range cm.CompletedQueueClaims {
			for _, id := range c.BatchIDs {
				if err := deleteBatch(ctx, tx, c.SessionID, id, `AND claim_id = ? AND claim_token = ?`, c.ClaimID, c.LeaseToken); err != nil {
					return err
				}
			}
		}
		if err := spec.CrashPoint(ctx, "commit_runtime_state/after_claims_delete"); err != nil {
			return err
		}
		for _, id := range cm.CommittedAttachmentIDs {
			if _, err := tx.ExecContext(ctx, `UPDATE attachments SET committed_at_ms = `+s.rules.AttachmentCommittedAt+`
				WHERE attachment_id = ? AND session_id = ?`, now, id, cm.SessionID); err != nil {
				return fmt.Errorf("commit attachment: %w", err)
			}
		}
		if tc := cm.TurnCommit; tc != nil {
			if _, err := tx.ExecContext(ctx, `INSERT INTO runtime_turn_commits (session_id, turn_id, turn_commit_hash,
				head_revision, checkpoint_ref, committed_at_ms) VALUES (?, ?, ?, ?, ?, ?)`,
				tc.SessionID, tc.TurnID, tc.TurnCommitHash, res.HeadRevision, res.CheckpointRef, now); err != nil {
				return fmt.Errorf("record turn: %w", err)
			}
		}
		if cm.ReleaseLease != nil {
			return s.releaseLease(ctx, tx, *cm.ReleaseLease)
		}
		return nil
	})
	if err != nil {
		return r.CommitResult{}, err
	}
	return res, nil
}

// writeHead writes the head the commit moves to, at the graph delta's leaf.
func writeHead(ctx context.Context, tx *sql.Tx, cm r.RuntimeCommit, res r.CommitResult) error {
	_, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO session_head (singleton, session_id, head_revision, config,
		agent_frames, current_agent_frame_id, checkpoint_ref, leaf_node_id) VALUES (1, ?, ?, ?, ?, ?, ?, ?)`,
		cm.SessionID, res.HeadRevision, raw(cm.Config), raw(cm.AgentFrames), cm.CurrentAgentFrameID,
		res.CheckpointRef, cm.Graph.LeafNodeID)
	if err != nil {
		return fmt.Errorf("write head: %w", err)
	}
	return nil
}

// checkCompletedClaims is check 5 of commit_runtime_state.
func (s *Store) checkCompletedClaims(ctx context.Context, tx *sql.Tx, cm r.RuntimeCommit, now int64) error {
	for _, c := range cm.CompletedQueueClaims {
		if c.SessionID != cm.SessionID {
			return spec.Errorf(r.ErrQueuedWorkClaimExpired, "claim %s is of session %s, the commit of session %s", c.ClaimID, c.SessionID, cm.SessionID)
		}
		for _, id := range c.BatchIDs {
			if err := s.heldBy(ctx, tx, c.SessionID, id, c.ClaimID, c.LeaseToken, now); err != nil {
				return err
			}
		}
	}
	return nil
}

// heldBy checks that a live claim with this id and token holds the batch.
func (s *Store) heldBy(ctx context.Context, tx *sql.Tx, session, batchID, claimID, token string, now int64) error {
	var id, tok sql.NullString
	var expires int64
	err := tx.QueryRowContext(ctx, `SELECT claim_id, claim_token, claim_expires_at_ms FROM queued_work_batches
		WHERE session_id = ? AND batch_id = ?`, session, batchID).Scan(&id, &tok, &expires)
	if errors.Is(err, sql.ErrNoRows) {
		return spec.Errorf(r.ErrQueuedWorkClaimExpired, "claim %s: batch %s of session %s is not queued", claimID, batchID, session)
	}
	if err != nil {
		return err
	}
	if id.String != claimID || tok.String != token || !s.rules.live(expires, now) {
		return spec.Errorf(r.ErrQueuedWorkClaimExpired, "claim %s no longer holds batch %s of session %s", claimID, batchID, session)
	}
	return nil
}

// applyGraph applies a commit's graph delta to the nodes (the leaf is the
// head's).
func (s *Store) applyGraph(ctx context.Context, tx *sql.Tx, d r.GraphDelta) error {
	switch d.Kind {
	case r.GraphUnchanged:
		return nil
	case r.GraphAppend:
	case r.GraphReplaceFull:
		if _, err := tx.ExecContext(ctx, `DELETE FROM graph_nodes`); err != nil {
			return err
		}
	default:
		return spec.Errorf(r.ErrInvalidArgument, "unknown graph delta kind %q", d.Kind)
	}
	for _, n := range d.Nodes {
		res, err := tx.ExecContext(ctx, s.rules.WriteNode, n.NodeID, n.ParentID, raw(n.Data))
		if err != nil {
			return err
		}
		if written, err := res.RowsAffected(); err != nil {
			return err
		} else if written == 0 {
			return spec.Errorf(r.ErrGraphNodeConflict, "graph node %s is already stored", n.NodeID)
		}
	}
	return nil
}

// lease is a session_execution_leases row.
type lease struct {
	owner, token         sql.NullString
	fence                uint64
	claimedAt, expiresAt int64
}

func loadLease(ctx context.Context, tx *sql.Tx, session string) (*lease, error) {
	var l lease
	err := tx.QueryRowContext(ctx, `SELECT owner_id, lease_token, fencing_token, claimed_at_ms, expires_at_ms
		FROM session_execution_leases WHERE session_id = ?`, session).Scan(&l.owner, &l.token, &l.fence, &l.claimedAt, &l.expiresAt)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &l, nil
}

// row is l as Rules see it (nil: no row).
func (l *lease) row() *Lease {
	if l == nil {
		return nil
	}
	return &Lease{OwnerID: l.owner.String, Token: l.token.String, Held: l.token.Valid, Fence: l.fence,
		ClaimedAtMs: l.claimedAt, ExpiresAtMs: l.expiresAt}
}

// matches says whether the row is the lease the fence names.
func (l *lease) matches(f r.SessionExecutionLeaseFence) bool {
	return l != nil && l.token.Valid && l.owner.String == f.OwnerID && l.token.String == f.LeaseToken && l.fence == f.FencingToken
}

// ensureLease checks that fence is the session's live lease.
func (s *Store) ensureLease(ctx context.Context, tx *sql.Tx, session string, f r.SessionExecutionLeaseFence, now int64) error {
	if f.SessionID != session {
		return spec.Errorf(r.ErrSessionExecutionLeaseExpired, "a lease of session %s presented for session %s", f.SessionID, session)
	}
	l, err := loadLease(ctx, tx, session)
	if err != nil {
		return err
	}
	if !l.matches(f) || !s.rules.live(l.expiresAt, now) {
		return spec.Errorf(r.ErrSessionExecutionLeaseExpired, "session %s: the lease of %s (fence %d) is not the live lease",
			session, f.OwnerID, f.FencingToken)
	}
	return nil
}

func (s *Store) releaseLease(ctx context.Context, tx *sql.Tx, c r.SessionExecutionLeaseCompletion) error {
	match := s.rules.Releases(c)
	_, err := tx.ExecContext(ctx, `UPDATE session_execution_leases SET owner_id = NULL, lease_token = NULL,
		claimed_at_ms = 0, expires_at_ms = 0
		WHERE session_id = ? AND `+match.SQL, append([]any{c.SessionID}, match.Args...)...)
	if err != nil {
		return fmt.Errorf("release lease: %w", err)
	}
	return nil
}

// StoredLease reads the session's lease row (nil: none), in a read
// transaction of its own: what a lease claim decides on.
func (s *Store) StoredLease(ctx context.Context, session string) (*Lease, error) {
	var cur *lease
	err := s.db.Read(ctx, "stored_lease", func(tx *sql.Tx) (err error) {
		cur, err = loadLease(ctx, tx, session)
		return err
	})
	return cur.row(), err
}

// TryClaimSessionExecutionLease reads the lease row, decides
// (Rules.TryClaim) and writes, in one transaction.
func (s *Store) TryClaimSessionExecutionLease(ctx context.Context, session, owner string, ttl uint64) (*r.SessionExecutionLease, error) {
	now := s.now()
	var out *r.SessionExecutionLease
	err := s.db.Write(ctx, "try_claim_session_execution_lease", func(tx *sql.Tx) error {
		cur, err := loadLease(ctx, tx, session)
		if err != nil {
			return err
		}
		l, granted := s.rules.TryClaim(session, cur.row(), owner, now, ttl)
		if l == nil {
			return nil
		}
		if granted {
			_, err = tx.ExecContext(ctx, `INSERT INTO session_execution_leases (session_id, owner_id, lease_token,
				fencing_token, claimed_at_ms, expires_at_ms) VALUES (?, ?, ?, ?, ?, ?)
				ON CONFLICT(session_id) DO UPDATE SET owner_id = excluded.owner_id, lease_token = excluded.lease_token,
					fencing_token = excluded.fencing_token, claimed_at_ms = excluded.claimed_at_ms,
					expires_at_ms = excluded.expires_at_ms`, session, l.OwnerID, l.Token, l.Fence, l.ClaimedAtMs, l.ExpiresAtMs)
		} else {
			_, err = tx.ExecContext(ctx, `UPDATE session_execution_leases SET expires_at_ms = ? WHERE session_id = ?`,
				l.ExpiresAtMs, session)
		}
		if err != nil {
			return err
		}
		out = &r.SessionExecutionLease{SessionID: session, OwnerID: l.OwnerID, LeaseToken: l.Token, FencingToken: l.Fence,
			ClaimedAtMs: l.ClaimedAtMs, ExpiresAtMs: l.ExpiresAtMs}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (s *Store) RenewSessionExecutionLease(ctx context.Context, f r.SessionExecutionLeaseFence, ttl uint64) (r.SessionExecutionLease, error) {
	now := s.now()
	var out r.SessionExecutionLease
	err := s.db.Write(ctx, "renew_session_execution_lease", func(tx *sql.Tx) error {
		cur, err := loadLease(ctx, tx, f.SessionID)
		if err != nil {
			return err
		}
		if !cur.matches(f) || !s.rules.Renewable(cur.expiresAt, now) {
			return spec.Errorf(r.ErrSessionExecutionLeaseExpired, "session %s: the lease of %s (fence %d) is not the live lease",
				f.SessionID, f.OwnerID, f.FencingToken)
		}
		expires := expiry(now, ttl)
		if _, err := tx.ExecContext(ctx, `UPDATE session_execution_leases SET expires_at_ms = ? WHERE session_id = ?`,
			expires, f.SessionID); err != nil {
			return err
		}
		out = r.SessionExecutionLease{SessionID: f.SessionID, OwnerID: f.OwnerID, LeaseToken: f.LeaseToken,
			FencingToken: f.FencingToken, ClaimedAtMs: cur.claimedAt, ExpiresAtMs: expires}
		return nil
	})
	if err != nil {
		return r.SessionExecutionLease{}, err
	}
	return out, nil
}

func (s *Store) ReleaseSessionExecutionLease(ctx context.Context, c r.SessionExecutionLeaseCompletion) error {
	return s.db.Write(ctx, "release_session_execution_lease", func(tx *sql.Tx) error {
		return s.releaseLease(ctx, tx, c)
	})
}

const batchColumns = `batch_id, session_id, COALESCE(source_key, ''), delivery_policy, slot_policy, merge_key,
	available_at_ms, enqueued_at_ms, claim_fencing_token`

// queryBatches runs a query over batchColumns and loads each batch's items.
func queryBatches(ctx context.Context, tx *sql.Tx, query string, args ...any) ([]r.QueuedWorkBatch, error) {
	rows, err := tx.QueryContext(ctx, `SELECT `+batchColumns+` FROM queued_work_batches `+query, args...)
	if err != nil {
		return nil, err
	}
	batches := []r.QueuedWorkBatch{}
	for rows.Next() {
		var b r.QueuedWorkBatch
		if err := rows.Scan(&b.BatchID, &b.SessionID, &b.SourceKey, &b.DeliveryPolicy, &b.SlotPolicy, &b.MergeKey,
			&b.AvailableAtMs, &b.EnqueuedAtMs, &b.ClaimFencingToken); err != nil {
			rows.Close()
			return nil, err
		}
		batches = append(batches, b)
	}
	if err := errors.Join(rows.Err(), rows.Close()); err != nil {
		return nil, err
	}
	for i := range batches {
		if batches[i].Items, err = loadItems(ctx, tx, batches[i].BatchID); err != nil {
			return nil, err
		}
	}
	return batches, nil
}

func loadItems(ctx context.Context, tx *sql.Tx, batchID string) ([]r.QueuedWorkItem, error) {
	rows, err := tx.QueryContext(ctx, `SELECT item_id, payload FROM queued_work_items WHERE batch_id = ? ORDER BY item_index`, batchID)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	items := []r.QueuedWorkItem{}
	for rows.Next() {
		var it r.QueuedWorkItem
		var payload []byte
		if err := rows.Scan(&it.ItemID, &payload); err != nil {
			return nil, err
		}
		it.Payload = rawOut(payload)
		items = append(items, it)
	}
	return items, rows.Err()
}

func loadBatch(ctx context.Context, tx *sql.Tx, session, batchID string) (*r.QueuedWorkBatch, error) {
	bs, err := queryBatches(ctx, tx, `WHERE session_id = ? AND batch_id = ?`, session, batchID)
	if err != nil || len(bs) == 0 {
		return nil, err
	}
	return &bs[0], nil
}

// deleteBatch deletes a batch and its items when cond (extra WHERE terms
// over args) holds.
func deleteBatch(ctx context.Context, tx *sql.Tx, session, batchID, cond string, args ...any) error {
	res, err := tx.ExecContext(ctx, `DELETE FROM queued_work_batches WHERE session_id = ? AND batch_id = ? `+cond,
		append([]any{session, batchID}, args...)...)
	if err != nil {
		return fmt.Errorf("delete batch %s: %w", batchID, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return err
	}
	_, err = tx.ExecContext(ctx, `DELETE FROM queued_work_items WHERE batch_id = ?`, batchID)
	return err
}

func (s *Store) EnqueueQueuedWork(ctx context.Context, d r.QueuedWorkBatchDraft) (r.QueuedWorkBatch, error) {
	now := s.now()
	var out r.QueuedWorkBatch
	if d.DeliveryPolicy != r.DeliverNextTurn && d.DeliveryPolicy != r.DeliverInterrupt {
		return out, spec.Errorf(r.ErrInvalidArgument, "unknown delivery policy %q", d.DeliveryPolicy)
	}
	if d.SlotPolicy != r.SlotExclusive && d.SlotPolicy != r.SlotMergeable {
		return out, spec.Errorf(r.ErrInvalidArgument, "unknown slot policy %q", d.SlotPolicy)
	}
	err := s.db.Write(ctx, "enqueue_queued_work", func(tx *sql.Tx) error {
		var sourceKey any
		if d.SourceKey != "" {
			sourceKey = d.SourceKey
			var existing string
			err := tx.QueryRowContext(ctx, `SELECT batch_id FROM queued_work_batches WHERE session_id = ? AND source_key = ?`,
				d.SessionID, d.SourceKey).Scan(&existing)
			switch {
			case errors.Is(err, sql.ErrNoRows):
			case err != nil:
				return err
			default:
				b, err := loadBatch(ctx, tx, d.SessionID, existing)
				if err != nil {
					return err
				}
				out = *b
				return nil
			}
		}
		res, err := tx.ExecContext(ctx, `INSERT INTO queued_work_batches (batch_id, session_id, source_key, delivery_policy,
			slot_policy, merge_key, available_at_ms, enqueued_at_ms) VALUES ('', ?, ?, ?, ?, ?, ?, ?)`,
			d.SessionID, sourceKey, d.DeliveryPolicy, d.SlotPolicy, d.MergeKey, d.AvailableAtMs, now)
		if err != nil {
			return err
		}
		seq, err := res.LastInsertId()
		if err != nil {
			return err
		}
		// The enqueue sequence is never reused (AUTOINCREMENT), so neither
		// is the batch id.
		id := batchID(d.SessionID, seq)
		if _, err := tx.ExecContext(ctx, `UPDATE queued_work_batches SET batch_id = ? WHERE enqueue_seq = ?`, id, seq); err != nil {
			return err
		}
		for i, p := range d.Payloads {
			if _, err := tx.ExecContext(ctx, `INSERT INTO queued_work_items (batch_id, item_index, item_id, payload) VALUES (?, ?, ?, ?)`,
				id, i, r.ItemID(id, i), raw(p)); err != nil {
				return err
			}
		}
		b, err := loadBatch(ctx, tx, d.SessionID, id)
		if err != nil {
			return err
		}
		out = *b
		return nil
	})
	return out, err
}

// errClaimLost rolls back a claim that lost a batch to another claimer.
var errClaimLost = errors.New("a batch of the claim was claimed by another")

func (s *Store) ClaimReadyQueuedWork(ctx context.Context, session string, leaseFence r.SessionExecutionLeaseFence, owner string,
	boundary r.QueuedWorkClaimBoundary, ttl uint64, maxBatches int) (*r.QueuedWorkClaim, error) {
	now := s.now()
	maxBatches = s.rules.ClaimCap(maxBatches)
	if maxBatches == 0 {
		return nil, nil
	}
	if boundary != r.BoundaryTurn && boundary != r.BoundaryStep {
		return nil, spec.Errorf(r.ErrInvalidArgument, "unknown claim boundary %q", boundary)
	}
	var out *r.QueuedWorkClaim
	err := s.db.Write(ctx, "claim_ready_queued_work", func(tx *sql.Tx) error {
		if err := s.ensureLease(ctx, tx, session, leaseFence, now); err != nil {
			return err
		}
		claimable := s.rules.Claimable(ready(now), s.free(now))
		candidates, err := queryBatches(ctx, tx, `WHERE session_id = ? AND `+claimable.SQL+` ORDER BY enqueue_seq LIMIT ?`,
			append(append([]any{session}, claimable.Args...), maxBatches)...)
		if err != nil {
			return err
		}
		n := r.SelectClaimPrefix(candidates, boundary, maxBatches)
		if n == 0 {
			return nil
		}
		selected := candidates[:n]
		fence := selected[0].ClaimFencingToken + 1
		claim := r.QueuedWorkClaim{SessionID: session, OwnerID: owner, FencingToken: fence, ClaimedAtMs: now,
			ExpiresAtMs: expiry(now, ttl), ClaimID: claimID(session, selected[0].BatchID, fence)}
		claim.LeaseToken = claimToken(claim.ClaimID, owner, now)
		// The guard repeats the free condition: a row another claimer
		// holds is never taken, and the claim stands only as a whole.
		free, updated := s.free(now), 0
		for _, b := range selected {
			res, err := tx.ExecContext(ctx, `UPDATE queued_work_batches SET claim_id = ?, claim_owner_id = ?, claim_token = ?,
				claim_fencing_token = `+s.rules.ClaimFence+`, claim_claimed_at_ms = ?, claim_expires_at_ms = ?
				WHERE session_id = ? AND batch_id = ? AND `+free.SQL,
				append([]any{claim.ClaimID, owner, claim.LeaseToken, now, claim.ExpiresAtMs, session, b.BatchID}, free.Args...)...)
			if err != nil {
				return err
			}
			changed, err := res.RowsAffected()
			if err != nil {
				return err
			}
			updated += int(changed)
		}
		if !s.rules.ClaimStands(len(selected), updated) {
			return errClaimLost
		}
		if err := spec.CrashPoint(ctx, "claim_ready_queued_work/after_batches_update"); err != nil {
			return err
		}

		for _, b := range selected {
			loaded, err := loadBatch(ctx, tx, session, b.BatchID)
			if err != nil {
				return err
			}
			claim.Batches = append(claim.Batches, *loaded)
		}
		out = &claim
		return nil
	})
	if errors.Is(err, errClaimLost) {
		return nil, nil
	}
	return out, err
}

// RenewQueuedWorkClaim is the seed's: one UPDATE of every batch the claim's
// id and token hold, with no expiry condition, committed; then the answer is
// judged by how many batches it changed (the seed's renewed_claim, not
// shown: the reference answers the claim only when it changed exactly the
// claim's batches).
func (s *Store) RenewQueuedWorkClaim(ctx context.Context, c r.QueuedWorkClaim, ttl uint64) (r.QueuedWorkClaim, error) {
	now := s.now()
	expires := expiry(now, ttl)
	var changed int64
	err := s.db.Write(ctx, "renew_queued_work_claim", func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE queued_work_batches SET claim_expires_at_ms = ?
			WHERE session_id = ? AND claim_id = ? AND claim_token = ?`, expires, c.SessionID, c.ClaimID, c.LeaseToken)
		if err != nil {
			return err
		}
		changed, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return r.QueuedWorkClaim{}, err
	}
	if changed == 0 || changed != int64(len(c.Batches)) {
		return r.QueuedWorkClaim{}, spec.Errorf(r.ErrQueuedWorkClaimExpired, "claim %s of session %s: the renewal changed %d of its %d batches",
			c.ClaimID, c.SessionID, changed, len(c.Batches))
	}
	c.ExpiresAtMs = expires
	return c, nil
}

func (s *Store) AbandonQueuedWorkClaim(ctx context.Context, c r.QueuedWorkClaim) error {
	return s.db.Write(ctx, "abandon_queued_work_claim", func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `UPDATE queued_work_batches SET claim_id = NULL, claim_owner_id = NULL,
			claim_token = NULL, claim_claimed_at_ms = 0, claim_expires_at_ms = 0
			WHERE session_id = ? AND claim_id = ? AND claim_token = ?`, c.SessionID, c.ClaimID, c.LeaseToken)
		return err
	})
}

func (s *Store) CancelQueuedWorkBatch(ctx context.Context, session, batchID string) (*r.QueuedWorkBatch, error) {
	now := s.now()
	var out *r.QueuedWorkBatch
	err := s.db.Write(ctx, "cancel_queued_work_batch", func(tx *sql.Tx) error {
		cancellable := s.rules.Cancellable(s.free(now))
		cond := `AND ` + cancellable.SQL
		bs, err := queryBatches(ctx, tx, `WHERE session_id = ? AND batch_id = ? `+cond, append([]any{session, batchID}, cancellable.Args...)...)
		if err != nil || len(bs) == 0 {
			return err
		}
		out = &bs[0]
		return deleteBatch(ctx, tx, session, batchID, cond, cancellable.Args...)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (s *Store) ListQueuedWork(ctx context.Context, session string) ([]r.QueuedWorkBatch, error) {
	var out []r.QueuedWorkBatch
	err := s.db.Read(ctx, "list_queued_work", func(tx *sql.Tx) (err error) {
		out, err = queryBatches(ctx, tx, `WHERE session_id = ? ORDER BY enqueue_seq`, session)
		return err
	})
	return out, err
}

func (s *Store) ListPendingQueuedWork(ctx context.Context, session string) ([]r.QueuedWorkBatch, error) {
	now := s.now()
	var out []r.QueuedWorkBatch
	err := s.db.Read(ctx, "list_pending_queued_work", func(tx *sql.Tx) (err error) {
		free := s.free(now)
		out, err = queryBatches(ctx, tx, `WHERE session_id = ? AND `+free.SQL+` ORDER BY enqueue_seq`, append([]any{session}, free.Args...)...)
		return err
	})
	return out, err
}

func (s *Store) SaveSessionMeta(ctx context.Context, meta spec.RawJSON) error {
	return s.db.Write(ctx, "save_session_meta", func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO session_meta (singleton, data) VALUES (1, ?)`, raw(meta))
		return err
	})
}

func (s *Store) LoadSessionMeta(ctx context.Context) (spec.RawJSON, error) {
	var data []byte
	err := s.db.Read(ctx, "load_session_meta", func(tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx, `SELECT data FROM session_meta WHERE singleton = 1`).Scan(&data)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		return err
	})
	return rawOut(data), err
}

func (s *Store) TombstoneNodes(ctx context.Context, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	return s.db.Write(ctx, "tombstone_nodes", func(tx *sql.Tx) error {
		for _, id := range ids {
			if _, err := tx.ExecContext(ctx, `UPDATE graph_nodes SET tombstoned = 1 WHERE node_id = ?`, id); err != nil {
				return err
			}
		}
		return nil
	})
}

// removed runs a DELETE and counts the rows it removed.
func (s *Store) removed(ctx context.Context, op, query string) (int, error) {
	var n int64
	err := s.db.Write(ctx, op, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, query)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	return int(n), err
}

func (s *Store) Vacuum(ctx context.Context) (r.VacuumReport, error) {
	n, err := s.removed(ctx, "vacuum", `DELETE FROM graph_nodes WHERE tombstoned = 1`)
	return r.VacuumReport{RemovedNodeCount: n}, err
}

func (s *Store) GcUnreachable(ctx context.Context) (r.GcReport, error) {
	n, err := s.removed(ctx, "gc_unreachable", `DELETE FROM checkpoints
		WHERE checkpoint_ref NOT IN (SELECT checkpoint_ref FROM session_head)`)
	return r.GcReport{RemovedCheckpointCount: n}, err
}

func (s *Store) StageAttachment(ctx context.Context, session, id string, data []byte) error {
	return s.db.Write(ctx, "stage_attachment", func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO attachments (attachment_id, session_id, data) VALUES (?, ?, ?)
			ON CONFLICT(attachment_id) DO NOTHING`, id, session, bytesOut(data))
		return err
	})
}

func (s *Store) LoadAttachment(ctx context.Context, id string) (*r.Attachment, error) {
	var out *r.Attachment
	err := s.db.Read(ctx, "load_attachment", func(tx *sql.Tx) error {
		a := r.Attachment{AttachmentID: id}
		var committed sql.NullInt64
		err := tx.QueryRowContext(ctx, `SELECT session_id, data, committed_at_ms FROM attachments WHERE attachment_id = ?`, id).
			Scan(&a.SessionID, &a.Data, &committed)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		a.Data = bytesOut(a.Data)
		if committed.Valid {
			a.CommittedAtMs = &committed.Int64
		}
		out = &a
		return nil
	})
	return out, err
}
