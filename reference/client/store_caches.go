package client

// The caches: out heads, prose, config.

import (
	"context"
	"database/sql"
	"errors"

	"github.com/storecheck/storecheck/reference/sqlitedb"

	cli "github.com/storecheck/storecheck/spec/client"
)

func (s *Store) put(ctx context.Context, op, query string, args ...any) error {
	return s.db.Write(ctx, op, func(tx *sqlitedb.Tx) error {
		_, err := tx.ExecContext(ctx, query, args...)
		return err
	})
}

// getText reads one optional text value.
func (s *Store) getText(ctx context.Context, op, query string, arg string) (*string, error) {
	var out *string
	err := s.db.Read(ctx, op, func(tx *sqlitedb.Tx) error {
		var v string
		err := tx.QueryRowContext(ctx, query, arg).Scan(&v)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err == nil {
			out = &v
		}
		return err
	})
	return out, err
}

func (s *Store) PutOutHead(ctx context.Context, taskID, head string) error {
	return s.put(ctx, "put_out_head", `INSERT INTO out_head_cache (task_id, head) VALUES (?, ?)
		ON CONFLICT(task_id) DO UPDATE SET head = excluded.head`, taskID, cli.HeadPreview(head))
}

func (s *Store) OutHead(ctx context.Context, taskID string) (*string, error) {
	return s.getText(ctx, "out_head", `SELECT head FROM out_head_cache WHERE task_id = ?`, taskID)
}

func (s *Store) PutProse(ctx context.Context, role, prose, specHash string) error {
	now := ms(s.clock.Now())
	return s.put(ctx, "put_prose", `INSERT INTO prose_cache (role, prose, spec_hash, cached_at) VALUES (?, ?, ?, ?)
		ON CONFLICT(role) DO UPDATE SET prose = excluded.prose, spec_hash = excluded.spec_hash, cached_at = excluded.cached_at`,
		role, prose, specHash, now)
}

func (s *Store) Prose(ctx context.Context, role string) (*cli.Prose, error) {
	var out *cli.Prose
	err := s.db.Read(ctx, "prose", func(tx *sqlitedb.Tx) error {
		var (
			p   cli.Prose
			cat int64
		)
		err := tx.QueryRowContext(ctx, `SELECT prose, spec_hash, cached_at FROM prose_cache WHERE role = ?`, role).Scan(&p.Prose, &p.SpecHash, &cat)
		if errors.Is(err, sql.ErrNoRows) {
			return nil
		}
		if err == nil {
			p.CachedAt = at(cat)
			out = &p
		}
		return err
	})
	return out, err
}

func (s *Store) PutConfig(ctx context.Context, key, value string) error {
	return s.put(ctx, "put_config", `INSERT INTO config_cache (key, value) VALUES (?, ?)
		ON CONFLICT(key) DO UPDATE SET value = excluded.value`, key, value)
}

func (s *Store) Config(ctx context.Context, key string) (*string, error) {
	return s.getText(ctx, "config", `SELECT value FROM config_cache WHERE key = ?`, key)
}
