package client

// Sessions and their task bindings.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/storecheck/storecheck/reference/sqlitedb"

	"github.com/storecheck/storecheck/spec"
	cli "github.com/storecheck/storecheck/spec/client"
)

// storedPair is the session's (generation, seq), and whether it has a row.
func storedPair(ctx context.Context, tx *sqlitedb.Tx, sessionID string) (gen, seq uint64, ok bool, err error) {
	err = tx.QueryRowContext(ctx, `SELECT generation, seq FROM sessions WHERE session_id = ?`, sessionID).Scan(&gen, &seq)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, 0, false, nil
	}
	return gen, seq, err == nil, err
}

// sessionForTask is the session of the task's latest open binding, else of
// its latest binding; found is false when it has none. ("" is a session id
// like any other: a backend_ref of {"task_id":""} files the tuple under it.)
func sessionForTask(ctx context.Context, tx *sqlitedb.Tx, taskID string) (id string, found bool, err error) {
	err = tx.QueryRowContext(ctx, `SELECT session_id FROM session_tasks WHERE task_id = ?
		ORDER BY released_at IS NULL DESC, bound_seq DESC LIMIT 1`, taskID).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return "", false, nil
	}
	return id, err == nil, err
}

// openBinding opens the pair's binding at now and closes the session's other
// open binding; false when the pair was open already.
func (s *Store) openBinding(ctx context.Context, tx *sqlitedb.Tx, op, sessionID, taskID string, now int64) (bool, error) {
	var open bool
	err := tx.QueryRowContext(ctx, `SELECT released_at IS NULL FROM session_tasks WHERE session_id = ? AND task_id = ?`,
		sessionID, taskID).Scan(&open)
	switch {
	case errors.Is(err, sql.ErrNoRows):
	case err != nil:
		return false, err
	case open:
		return false, nil
	}
	closed, args := s.rules.ClosedOnBind(taskID)
	if _, err := tx.ExecContext(ctx, `UPDATE session_tasks SET released_at = ?
		WHERE session_id = ? AND released_at IS NULL AND `+closed, append([]any{now, sessionID}, args...)...); err != nil {
		return false, fmt.Errorf("close the other binding: %w", err)
	}
	// Upsert_session and bind_task both reach here: the other binding is
	// closed, this one not yet open.
	if err := spec.CrashPoint(ctx, op+"/after_close_others"); err != nil {
		return false, err
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO session_tasks (session_id, task_id, bound_at, bound_seq, released_at)
		VALUES (?, ?, ?, (SELECT COALESCE(MAX(bound_seq), 0) + 1 FROM session_tasks), NULL)
		ON CONFLICT(session_id, task_id) DO UPDATE SET bound_at = excluded.bound_at, bound_seq = excluded.bound_seq, released_at = NULL`,
		sessionID, taskID, now)
	return err == nil, err
}

func (s *Store) UpsertSession(ctx context.Context, taskID string, v cli.VersionedSession) (bool, error) {
	now := ms(s.clock.Now())
	sessionID := cli.SessionIDFor(taskID, v.BackendRef)
	var wrote bool
	err := s.db.Write(ctx, "upsert_session", func(tx *sqlitedb.Tx) error {
		gen, seq, ok, err := storedPair(ctx, tx, sessionID)
		if err != nil {
			return err
		}
		if ok && !s.rules.Newer(v.Generation, v.Seq, gen, seq) {
			return nil
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO sessions (session_id, generation, seq, agent_state, delivery_state,
			resource_state, recovery_substate, desired_json, observed_json, backend_ref, mismatch_count, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
			ON CONFLICT(session_id) DO UPDATE SET generation = excluded.generation, seq = excluded.seq,
				agent_state = excluded.agent_state, delivery_state = excluded.delivery_state,
				resource_state = excluded.resource_state, recovery_substate = excluded.recovery_substate,
				desired_json = excluded.desired_json, observed_json = excluded.observed_json,
				backend_ref = excluded.backend_ref, mismatch_count = excluded.mismatch_count, updated_at = excluded.updated_at`,
			sessionID, v.Generation, v.Seq, v.AgentState, v.DeliveryState, v.ResourceState, v.RecoverySubstate,
			v.DesiredJSON, v.ObservedJSON, v.BackendRef, v.MismatchCount, ms(v.UpdatedAt)); err != nil {
			return fmt.Errorf("write session %s: %w", sessionID, err)
		}
		if err := spec.CrashPoint(ctx, "upsert_session/after_session_write"); err != nil {
			return err
		}
		if _, err := s.openBinding(ctx, tx, "upsert_session", sessionID, taskID, now); err != nil {
			return err
		}
		wrote = true
		return nil
	})
	return wrote, err
}

func (s *Store) BumpSessionVersion(ctx context.Context, taskID string, generation, seq uint64) (bool, error) {
	now := ms(s.clock.Now())
	var moved bool
	err := s.db.Write(ctx, "bump_session_version", func(tx *sqlitedb.Tx) error {
		sessionID, found, err := sessionForTask(ctx, tx, taskID)
		if err != nil || !found {
			return err
		}
		gen, sq, ok, err := storedPair(ctx, tx, sessionID)
		if err != nil || !ok || !s.rules.Newer(generation, seq, gen, sq) {
			return err
		}
		moved, err = changed(ctx, tx, `UPDATE sessions SET generation = ?, seq = ?, updated_at = ? WHERE session_id = ?`,
			generation, seq, now, sessionID)
		return err
	})
	return moved, err
}

func (s *Store) GetSession(ctx context.Context, taskID string) (*cli.SessionRecord, error) {
	var out *cli.SessionRecord
	err := s.db.Read(ctx, "get_session", func(tx *sqlitedb.Tx) error {
		sessionID, found, err := sessionForTask(ctx, tx, taskID)
		if err != nil || !found {
			return err
		}
		r := cli.SessionRecord{SessionID: sessionID, TaskID: taskID}
		var upd int64
		err = tx.QueryRowContext(ctx, `SELECT generation, seq, agent_state, delivery_state, resource_state, recovery_substate,
			desired_json, observed_json, backend_ref, mismatch_count, updated_at FROM sessions WHERE session_id = ?`, sessionID).
			Scan(&r.Generation, &r.Seq, &r.AgentState, &r.DeliveryState, &r.ResourceState, &r.RecoverySubstate,
				&r.DesiredJSON, &r.ObservedJSON, &r.BackendRef, &r.MismatchCount, &upd)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		r.UpdatedAt = at(upd)
		out = &r
		return nil
	})
	return out, err
}

func (s *Store) BindTask(ctx context.Context, sessionID, taskID string) (bool, error) {
	now := ms(s.clock.Now())
	var opened bool
	err := s.db.Write(ctx, "bind_task", func(tx *sqlitedb.Tx) (err error) {
		opened, err = s.openBinding(ctx, tx, "bind_task", sessionID, taskID, now)
		return err
	})
	return opened, err
}

func (s *Store) ReleaseBinding(ctx context.Context, sessionID, taskID string) (bool, error) {
	now := ms(s.clock.Now())
	return s.settleWrite(ctx, "release_binding", `UPDATE session_tasks SET released_at = ?
		WHERE session_id = ? AND task_id = ? AND released_at IS NULL`, now, sessionID, taskID)
}

func (s *Store) ActiveSessions(ctx context.Context) ([]cli.LiveSession, error) {
	where := s.rules.Active
	var out []cli.LiveSession
	err := s.db.Read(ctx, "active_sessions", func(tx *sqlitedb.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT s.session_id, s.resource_state,
			COALESCE((SELECT b.task_id FROM session_tasks AS b WHERE b.session_id = s.session_id AND b.released_at IS NULL
				ORDER BY b.bound_seq DESC LIMIT 1), '')
			FROM sessions AS s WHERE `+where+` ORDER BY s.session_id`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var (
				l        cli.LiveSession
				resource string
			)
			if err := rows.Scan(&l.SessionID, &resource, &l.TaskID); err != nil {
				return err
			}
			l.Suspended = resource == cli.ResourceClosed
			out = append(out, l)
		}
		return rows.Err()
	})
	return out, err
}
