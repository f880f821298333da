package client

import (
	"context"
	"database/sql"
	"errors"
	"os"

	"github.com/storecheck/storecheck/spec"
	cli "github.com/storecheck/storecheck/spec/client"
)

// WriteSchema writes, at path, a new client store file that carries marker
// at version, in this store's layout (a schema_meta row): what a file of
// another program, or of another version of this one, looks like to Open.
// It is the reference's answer to the kit's write_foreign_schema request
// (capability client_schema_writer), with which the kit checks the schema
// gate of any backend whatever its layout. The file must not exist yet.
func WriteSchema(ctx context.Context, path, marker string, version int) error {
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		return spec.Errorf(cli.ErrIO, "write schema %s version %d: %q exists already", marker, version, path)
	}
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		return spec.Errorf(cli.ErrIO, "write schema at %q: %w", path, err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, cli.SchemaMetaDDL); err != nil {
		return spec.Errorf(cli.ErrIO, "write schema at %q: %w", path, err)
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO schema_meta(marker, version) VALUES (?, ?)`, marker, version); err != nil {
		return spec.Errorf(cli.ErrIO, "write schema at %q: %w", path, err)
	}
	if err := db.Close(); err != nil {
		return spec.Errorf(cli.ErrIO, "write schema at %q: %w", path, err)
	}
	return nil
}
