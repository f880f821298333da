package client

// The intent outbox.

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/storecheck/storecheck/reference/sqlitedb"

	"github.com/storecheck/storecheck/spec"
	cli "github.com/storecheck/storecheck/spec/client"
)

const intentColumns = `op_id, env_json, attempt, state, next_attempt_at, receipt_json, last_error, created_at, updated_at`

func scanIntent(r scanner) (cli.Intent, error) {
	var (
		in             cli.Intent
		env            string
		receipt        sql.NullString
		next, cre, upd int64
	)
	if err := r.Scan(&in.OpID, &env, &in.Attempt, &in.State, &next, &receipt, &in.LastError, &cre, &upd); err != nil {
		return in, err
	}
	in.Envelope = spec.RawJSON(env)
	if receipt.Valid {
		in.Receipt = spec.RawJSON(receipt.String)
	}
	in.NextAttemptAt, in.CreatedAt, in.UpdatedAt = at(next), at(cre), at(upd)
	return in, nil
}

func (s *Store) EnqueueIntent(ctx context.Context, opID string, env spec.RawJSON) (bool, error) {
	if err := validJSON("envelope of intent "+opID, env); err != nil {
		return false, err
	}
	now := ms(s.clock.Now())
	query := `INSERT INTO intents (` + intentColumns + `) VALUES (?, ?, 0, 'pending', ?, NULL, '', ?, ?)
		ON CONFLICT(op_id) DO NOTHING`
	var added bool
	err := s.db.Write(ctx, "enqueue_intent", func(tx *sqlitedb.Tx) (err error) {
		added, err = changed(ctx, tx, query, opID, string(env), now, now, now)
		return err
	})
	return added, err
}

func (s *Store) Intent(ctx context.Context, opID string) (*cli.Intent, error) {
	var out *cli.Intent
	err := s.db.Read(ctx, "intent", func(tx *sqlitedb.Tx) error {
		in, err := scanIntent(tx.QueryRowContext(ctx, `SELECT `+intentColumns+` FROM intents WHERE op_id = ?`, opID))
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		out = &in
		return nil
	})
	return out, err
}

func (s *Store) DueIntents(ctx context.Context, now time.Time, lim uint32) ([]cli.Intent, error) {
	return s.due(ctx, "due_intents", now, s.rules.DueLimit(lim))
}

func (s *Store) FlushOrder(ctx context.Context) ([]cli.Intent, error) {
	return s.due(ctx, "flush_order", s.clock.Now(), s.rules.FlushBatch)
}

// due are at most n intents due at now, in due order.
func (s *Store) due(ctx context.Context, op string, now time.Time, n int) ([]cli.Intent, error) {
	var out []cli.Intent
	err := s.db.Read(ctx, op, func(tx *sqlitedb.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT `+intentColumns+` FROM intents
			WHERE state IN ('pending', 'retrying') AND `+s.rules.Due+` ORDER BY `+s.rules.DueOrder+` LIMIT ?`, ms(now), n)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			in, err := scanIntent(rows)
			if err != nil {
				return err
			}
			out = append(out, in)
		}
		return rows.Err()
	})
	return out, err
}

// settleWrite runs one intent transition and says whether it acted.
func (s *Store) settleWrite(ctx context.Context, op, query string, args ...any) (bool, error) {
	var acted bool
	err := s.db.Write(ctx, op, func(tx *sqlitedb.Tx) (err error) {
		acted, err = changed(ctx, tx, query, args...)
		return err
	})
	return acted, err
}

func (s *Store) BumpIntent(ctx context.Context, opID string, next time.Time, lastError string) (bool, error) {
	now := ms(s.clock.Now())
	return s.settleWrite(ctx, "bump_intent", `UPDATE intents SET state = 'retrying', attempt = attempt + 1,
		next_attempt_at = ?, last_error = ?, updated_at = ? WHERE op_id = ? AND `+s.rules.Retryable, ms(next), lastError, now, opID)
}

func (s *Store) DeferIntent(ctx context.Context, opID string, next time.Time, lastError string) (bool, error) {
	now := ms(s.clock.Now())
	return s.settleWrite(ctx, "defer_intent", `UPDATE intents SET state = 'retrying',
		next_attempt_at = ?, last_error = ?, updated_at = ? WHERE op_id = ? AND `+s.rules.Retryable, ms(next), lastError, now, opID)
}

func (s *Store) AcceptIntent(ctx context.Context, opID string, receipt spec.RawJSON) (bool, error) {
	if err := validJSON("receipt of intent "+opID, receipt); err != nil {
		return false, err
	}
	now := ms(s.clock.Now())
	return s.settleWrite(ctx, "accept_intent", `UPDATE intents SET state = 'accepted', receipt_json = ?, updated_at = ?
		WHERE op_id = ? AND state IN ('pending', 'retrying')`, string(receipt), now, opID)
}

func (s *Store) ExhaustIntent(ctx context.Context, opID string, lastError string) (bool, error) {
	now := ms(s.clock.Now())
	return s.settleWrite(ctx, "exhaust_intent", `UPDATE intents SET state = 'exhausted', last_error = ?, updated_at = ?
		WHERE op_id = ? AND state IN ('pending', 'retrying')`, lastError, now, opID)
}

func (s *Store) DeleteIntent(ctx context.Context, opID string) (bool, error) {
	return s.settleWrite(ctx, "delete_intent", `DELETE FROM intents WHERE op_id = ?`, opID)
}

func (s *Store) PendingIntentCount(ctx context.Context) (int64, error) {
	var n int64
	err := s.db.Read(ctx, "pending_intent_count", func(tx *sqlitedb.Tx) error {
		return tx.QueryRowContext(ctx, `SELECT COUNT(*) FROM intents WHERE state IN ('pending', 'retrying')`).Scan(&n)
	})
	return n, err
}
