package client

// The event log.

import (
	"context"

	"github.com/storecheck/storecheck/reference/sqlitedb"

	"github.com/storecheck/storecheck/spec"
	cli "github.com/storecheck/storecheck/spec/client"
)

func (s *Store) AppendEvent(ctx context.Context, eventType string, data spec.RawJSON) (int64, error) {
	if err := validJSON("data of event "+eventType, data); err != nil {
		return 0, err
	}
	now := ms(s.clock.Now())
	var seq int64
	err := s.db.Write(ctx, "append_event", func(tx *sqlitedb.Tx) error {
		res, err := tx.ExecContext(ctx, s.rules.WriteEvent, eventType, string(data), now)
		if err != nil {
			return err
		}
		seq, err = res.LastInsertId()
		return err
	})
	return seq, err
}

func (s *Store) EventsSince(ctx context.Context, seq int64, lim uint32) ([]cli.Event, error) {
	var out []cli.Event
	err := s.db.Read(ctx, "events_since", func(tx *sqlitedb.Tx) error {
		rows, err := tx.QueryContext(ctx, `SELECT seq, type, data_json, created_at FROM events WHERE seq > ? ORDER BY seq LIMIT ?`, seq, s.rules.EventsLimit(lim))
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var (
				e    cli.Event
				data string
				cre  int64
			)
			if err := rows.Scan(&e.Seq, &e.Type, &data, &cre); err != nil {
				return err
			}
			e.Data, e.CreatedAt = spec.RawJSON(data), at(cre)
			out = append(out, e)
		}
		return rows.Err()
	})
	return out, err
}

func (s *Store) EventHead(ctx context.Context) (int64, error) {
	var head int64
	err := s.db.Read(ctx, "event_head", func(tx *sqlitedb.Tx) error {
		return tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(seq), 0) FROM events`).Scan(&head)
	})
	return head, err
}
