package runtime

// Session meta, attachments and the durability tier.

import (
	"context"
	"database/sql"
	"errors"

	"github.com/storecheck/storecheck/reference/sqlitedb"

	"github.com/storecheck/storecheck/spec"
	r "github.com/storecheck/storecheck/spec/runtime"
)

func (s *Store) DurabilityTier(ctx context.Context) (r.DurabilityTier, error) {
	err := s.db.Read(ctx, "durability_tier", func(*sqlitedb.Tx) error { return nil })
	return s.tier, err
}

func (s *Store) SaveSessionMeta(ctx context.Context, meta spec.RawJSON) error {
	return s.db.Write(ctx, "save_session_meta", func(tx *sqlitedb.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT OR REPLACE INTO session_meta (singleton, data) VALUES (1, ?)`, raw(meta))
		return err
	})
}

func (s *Store) LoadSessionMeta(ctx context.Context) (spec.RawJSON, error) {
	var data []byte
	err := s.db.Read(ctx, "load_session_meta", func(tx *sqlitedb.Tx) error {
		err := tx.QueryRowContext(ctx, `SELECT data FROM session_meta WHERE singleton = 1`).Scan(&data)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		return err
	})
	return rawOut(data), err
}

func (s *Store) StageAttachment(ctx context.Context, session, id string, data []byte) error {
	return s.db.Write(ctx, "stage_attachment", func(tx *sqlitedb.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO attachments (attachment_id, session_id, data) VALUES (?, ?, ?)
			ON CONFLICT(attachment_id) DO NOTHING`, id, session, bytesOut(data))
		return err
	})
}

func (s *Store) LoadAttachment(ctx context.Context, id string) (*r.Attachment, error) {
	var out *r.Attachment
	err := s.db.Read(ctx, "load_attachment", func(tx *sqlitedb.Tx) error {
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
