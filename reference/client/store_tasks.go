package client

// Tasks.

import (
	"context"
	"database/sql"
	"errors"
	"slices"

	"github.com/storecheck/storecheck/reference/sqlitedb"

	"github.com/storecheck/storecheck/spec"
	cli "github.com/storecheck/storecheck/spec/client"
)

const taskColumns = `task_id, kind, parent_task, hop, attempt, task_state, opened_at, settled_at`

func scanTask(r scanner) (cli.Task, error) {
	var (
		t       cli.Task
		opened  int64
		settled sql.NullInt64
	)
	if err := r.Scan(&t.TaskID, &t.Kind, &t.ParentTask, &t.Hop, &t.Attempt, &t.State, &opened, &settled); err != nil {
		return t, err
	}
	t.OpenedAt = at(opened)
	if settled.Valid {
		st := at(settled.Int64)
		t.SettledAt = &st
	}
	return t, nil
}

func (s *Store) OpenTask(ctx context.Context, cz cli.Causality, kind string) (bool, error) {
	if kind != cli.KindRoot && kind != cli.KindRelay {
		return false, spec.Errorf(cli.ErrInvalidArgument, "task %s: kind %q is neither %s nor %s", cz.Task, kind, cli.KindRoot, cli.KindRelay)
	}
	now := ms(s.clock.Now())
	attempt := s.rules.ReopenAttempt
	// The record is written either way, a fresh open or a refresh of the
	// chain, and the call answers true (client.open_task.refresh).
	var written bool
	err := s.db.Write(ctx, "open_task", func(tx *sqlitedb.Tx) error {
		refreshed, err := changed(ctx, tx, `UPDATE task SET kind = ?, parent_task = ?, hop = ?, attempt = `+attempt+`
			WHERE task_id = ?`, kind, cz.ParentTask, cz.Hop, cz.Attempt, cz.Task)
		if err != nil || refreshed {
			written = refreshed
			return err
		}
		_, err = tx.ExecContext(ctx, `INSERT INTO task (`+taskColumns+`) VALUES (?, ?, ?, ?, ?, 'pending', ?, NULL)`,
			cz.Task, kind, cz.ParentTask, cz.Hop, cz.Attempt, now)
		written = err == nil
		return err
	})
	return written, err
}

func (s *Store) SettleTask(ctx context.Context, taskID string, state cli.TaskState) (bool, error) {
	if !slices.Contains(cli.TerminalTaskStates, state) {
		return false, spec.Errorf(cli.ErrInvalidArgument, "task %s: %q is not a terminal verdict (accepted: %v)", taskID, state, cli.TerminalTaskStates)
	}
	now := ms(s.clock.Now())
	firstWins := ` WHERE ` + s.rules.VerdictOpen
	var settled bool
	err := s.db.Write(ctx, "settle_task", func(tx *sqlitedb.Tx) (err error) {
		settled, err = changed(ctx, tx, `INSERT INTO task (`+taskColumns+`) VALUES (?, '', '', 0, 0, ?, ?, ?)
			ON CONFLICT(task_id) DO UPDATE SET task_state = excluded.task_state, settled_at = excluded.settled_at`+firstWins,
			taskID, string(state), now, now)
		return err
	})
	return settled, err
}

func (s *Store) Task(ctx context.Context, taskID string) (*cli.Task, error) {
	var out *cli.Task
	err := s.db.Read(ctx, "task", func(tx *sqlitedb.Tx) error {
		t, err := scanTask(tx.QueryRowContext(ctx, `SELECT `+taskColumns+` FROM task WHERE task_id = ?`, taskID))
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err == nil {
			out = &t
		}
		return err
	})
	return out, err
}

func (s *Store) OpenTasks(ctx context.Context, lim uint32) ([]cli.Task, error) {
	var out []cli.Task
	err := s.db.Read(ctx, "open_tasks", func(tx *sqlitedb.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT `+taskColumns+` FROM task WHERE settled_at IS NULL
			ORDER BY opened_at, rowid LIMIT ?`, s.rules.OpenTasksLimit(lim))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			t, err := scanTask(rows)
			if err != nil {
				return err
			}
			out = append(out, t)
		}
		return rows.Err()
	})
	return out, err
}

// intentNamesTask matches an intent whose envelope's causality.task is the
// task, as a JSON string.
const intentNamesTask = `json_valid(env_json) AND json_type(env_json, '$.causality.task') = 'text'
	AND json_extract(env_json, '$.causality.task') = ?`

func (s *Store) TaskIsKnown(ctx context.Context, taskID string) (bool, error) {
	var known bool
	err := s.db.Read(ctx, "task_is_known", func(tx *sqlitedb.Tx) error {
		return tx.QueryRowContext(ctx, `SELECT EXISTS(SELECT 1 FROM session_tasks WHERE task_id = ?)
			OR EXISTS(SELECT 1 FROM intents WHERE `+intentNamesTask+`)`, taskID, taskID).Scan(&known)
	})
	return known, err
}

func (s *Store) TaskAttempt(ctx context.Context, taskID string) (int64, error) {
	var attempt int64
	err := s.db.Read(ctx, "task_attempt", func(tx *sqlitedb.Tx) error {
		return tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(attempt), 0) FROM intents WHERE `+intentNamesTask, taskID).Scan(&attempt)
	})
	return attempt, err
}
