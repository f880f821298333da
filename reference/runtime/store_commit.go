package runtime

// commit_runtime_state: its checks in the seed's order and its writes.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/storecheck/storecheck/reference/sqlitedb"

	"github.com/storecheck/storecheck/spec"
	r "github.com/storecheck/storecheck/spec/runtime"
)

func (s *Store) CommitRuntimeState(ctx context.Context, cm r.RuntimeCommit) (r.CommitResult, error) {
	now := s.now()
	var res r.CommitResult
	err := s.db.Write(ctx, "commit_runtime_state", func(tx *sqlitedb.Tx) error {
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
func writeHead(ctx context.Context, tx *sqlitedb.Tx, cm r.RuntimeCommit, res r.CommitResult) error {
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
func (s *Store) checkCompletedClaims(ctx context.Context, tx *sqlitedb.Tx, cm r.RuntimeCommit, now int64) error {
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
func (s *Store) heldBy(ctx context.Context, tx *sqlitedb.Tx, session, batchID, claimID, token string, now int64) error {
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
func (s *Store) applyGraph(ctx context.Context, tx *sqlitedb.Tx, d r.GraphDelta) error {
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
