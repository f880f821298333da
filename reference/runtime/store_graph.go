package runtime

// Reading, tombstoning and collecting the committed graph and checkpoints.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/storecheck/storecheck/reference/sqlitedb"

	r "github.com/storecheck/storecheck/spec/runtime"
)

// head is the session_head row.
type head struct {
	sessionID, currentFrame, checkpointRef, leaf string
	revision                                     uint64
	config, frames                               []byte
}

func loadHead(ctx context.Context, tx *sqlitedb.Tx) (*head, error) {
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
	err := s.db.Read(ctx, "load_session", func(tx *sqlitedb.Tx) error {
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

func liveNodes(ctx context.Context, tx *sqlitedb.Tx) ([]r.Node, error) {
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

func loadLiveNode(ctx context.Context, tx *sqlitedb.Tx, id string) (*r.Node, error) {
	return loadNode(ctx, tx, id, `tombstoned = 0`)
}

// loadNode loads the node id when it meets the condition visible (nil:
// no such node).
func loadNode(ctx context.Context, tx *sqlitedb.Tx, id, visible string) (*r.Node, error) {
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
func activePath(ctx context.Context, tx *sqlitedb.Tx, leaf string) ([]r.Node, error) {
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
func tokenLedger(ctx context.Context, tx *sqlitedb.Tx) ([]r.UsageEntry, error) {
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
	err := s.db.Read(ctx, "load_node", func(tx *sqlitedb.Tx) (err error) {
		n, err = loadNode(ctx, tx, nodeID, s.rules.NodeVisible)
		return err
	})
	return n, err
}

func (s *Store) TombstoneNodes(ctx context.Context, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	return s.db.Write(ctx, "tombstone_nodes", func(tx *sqlitedb.Tx) error {
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
	err := s.db.Write(ctx, op, func(tx *sqlitedb.Tx) error {
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
