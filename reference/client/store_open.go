package client

// Opening a store: its marker and version, read before anything is written.

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/jonboulle/clockwork"

	"github.com/storecheck/storecheck/reference/sqlitedb"
	"github.com/storecheck/storecheck/spec"
	cli "github.com/storecheck/storecheck/spec/client"
)

// Open opens (or creates) a store. A file of another marker or version is
// refused with schema_mismatch before anything is written to it: the marker
// is read first on the writer's connection, before its journal mode is set
// (sqlitedb.Options.Check; a connection of its own was 40% of an open), and
// read again in the transaction that writes the schema.
func Open(ctx context.Context, o Options) (*Store, error) {
	if o.Clock == nil {
		o.Clock = clockwork.NewRealClock()
	}
	s := &Store{clock: o.Clock, rules: o.Rules.complete()}
	var check func(ctx context.Context, tx *sqlitedb.Tx) error
	if !sqlitedb.InMemory(o.Path) {
		if _, err := os.Stat(o.Path); err == nil {
			check = func(ctx context.Context, tx *sqlitedb.Tx) error { return s.precheck(ctx, tx, o.Path) }
		}
	}
	db, err := sqlitedb.Open(ctx, sqlitedb.Options{Path: o.Path, BusyTimeout: o.BusyTimeout, Synchronous: o.Synchronous, IOKind: cli.ErrIO, Check: check})
	if err != nil {
		return nil, err
	}
	err = db.Write(ctx, fmt.Sprintf("open %q: schema", o.Path), func(tx *sqlitedb.Tx) error {
		fresh, err := s.checkSchema(ctx, tx, o.Path)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, schema); err != nil {
			return err
		}
		if fresh {
			if _, err := tx.ExecContext(ctx, cli.SchemaMetaDDL); err != nil {
				return err
			}
			_, err = tx.ExecContext(ctx, `INSERT INTO schema_meta(marker, version) VALUES (?, ?)`, cli.SchemaMarker, cli.SchemaVersion)
			return err
		}
		return nil
	})
	if err != nil {
		db.Close()
		return nil, err
	}
	s.db = db
	return s, nil
}

// precheck reads the marker of an existing file before anything is written
// to it (sqlitedb.Options.Check: on the writer's connection, before its
// journal mode is set).
func (s *Store) precheck(ctx context.Context, tx *sqlitedb.Tx, path string) error {
	if _, err := s.checkSchema(ctx, tx, path); err != nil {
		var ke *spec.Error
		if errors.As(err, &ke) {
			return err
		}
		return spec.Errorf(cli.ErrIO, "open %q: read the schema marker: %w", path, err)
	}
	return nil
}

// checkSchema says whether the database is new (no tables at all), and fails
// with schema_mismatch when it carries another marker or version.
func (s *Store) checkSchema(ctx context.Context, tx *sqlitedb.Tx, path string) (fresh bool, err error) {
	var tables, metas int
	counts, err := tx.QueryContext(ctx, `SELECT COUNT(*), COUNT(*) FILTER (WHERE name = 'schema_meta')
		FROM sqlite_master WHERE type = 'table'`)
	if err != nil {
		return false, err
	}
	counts.Next()
	err = counts.Scan(&tables, &metas)
	if cerr := counts.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return false, err
	}
	if tables == 0 {
		return true, nil
	}
	marker, version := "", int64(0)
	if metas == 1 {
		rows, err := tx.QueryContext(ctx, `SELECT marker, version FROM schema_meta`)
		if err != nil {
			return false, err
		}
		n := 0
		for rows.Next() {
			n++
			if err := rows.Scan(&marker, &version); err != nil {
				rows.Close()
				return false, err
			}
		}
		if err := rows.Close(); err != nil {
			return false, err
		}
		if n != 1 {
			marker, version = "", 0
		}
	}
	if !s.rules.SchemaMatches(marker, version) {
		shown := marker
		if shown == "" {
			shown = "(no marker)"
		}
		return false, spec.Errorf(cli.ErrSchemaMismatch, "open %q: the file holds schema %s version %d, this store needs %s version %d",
			path, shown, version, cli.SchemaMarker, cli.SchemaVersion)
	}
	return false, nil
}
