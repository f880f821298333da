package client

// Faults.

import (
	"context"

	"github.com/storecheck/storecheck/reference/sqlitedb"

	cli "github.com/storecheck/storecheck/spec/client"
)

func (s *Store) InsertFault(ctx context.Context, f cli.Fault) (int64, error) {
	var id int64
	err := s.db.Write(ctx, "insert_fault", func(tx *sqlitedb.Tx) error {
		res, err := tx.ExecContext(ctx, s.rules.WriteFault,
			f.TaskID, f.SessionID, f.Generation, f.Seq, f.DesiredJSON, f.ObservedJSON, f.Intent, f.Attempt,
			f.BackendRef, f.Kind, f.Reason, f.State, ms(f.CreatedAt))
		if err != nil {
			return err
		}
		id, err = res.LastInsertId()
		return err
	})
	return id, err
}

func (s *Store) ListFaults(ctx context.Context, taskID string) ([]cli.Fault, error) {
	var out []cli.Fault
	err := s.db.Read(ctx, "list_faults", func(tx *sqlitedb.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT id, task_id, session_id, generation, seq, desired_json, observed_json,
			intent, attempt, backend_ref, kind, reason, state, created_at FROM faults WHERE task_id = ? ORDER BY id`, taskID)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var (
				f   cli.Fault
				cre int64
			)
			if err := rows.Scan(&f.ID, &f.TaskID, &f.SessionID, &f.Generation, &f.Seq, &f.DesiredJSON, &f.ObservedJSON,
				&f.Intent, &f.Attempt, &f.BackendRef, &f.Kind, &f.Reason, &f.State, &cre); err != nil {
				return err
			}
			f.CreatedAt = at(cre)
			out = append(out, f)
		}
		return rows.Err()
	})
	return out, err
}
