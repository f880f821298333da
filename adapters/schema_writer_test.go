package adapters_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/storecheck/storecheck/spec"
	cli "github.com/storecheck/storecheck/spec/client"
	"github.com/storecheck/storecheck/spec/suite"
)

// A backend that declares client_schema_writer writes, over the wire, a
// client file of another marker or version that its own open then refuses
// with schema_mismatch, and one of its own that opens; the harness of the
// exec adapter hands the suite that writer. A backend that does not declare
// it has no writer, and the request is a bad_request.
func TestWriteForeignSchemaOverTheWire(t *testing.T) {
	e := start(t, "serve")
	if !e.Info().Capabilities.ClientSchemaWriter {
		t.Fatal("storecheck serve does not declare client_schema_writer")
	}
	h := suite.HarnessOf(e)
	if h.WriteClientSchema == nil {
		t.Fatal("the exec harness has no WriteClientSchema")
	}
	dir := t.TempDir()
	for _, tc := range []struct {
		marker  string
		version int
		refused bool
	}{
		{"onlyne-server", cli.SchemaVersion, true},
		{cli.SchemaMarker, cli.SchemaVersion - 1, true},
		{cli.SchemaMarker, 0, true},
		{cli.SchemaMarker, cli.SchemaVersion, false},
	} {
		path := filepath.Join(dir, tc.marker+"-"+string(rune('0'+tc.version))+".db")
		if err := h.WriteClientSchema(path, tc.marker, tc.version); err != nil {
			t.Fatalf("write %s version %d: %v", tc.marker, tc.version, err)
		}
		tgt, err := e.Open(context.Background(), cli.StoreName, spec.OpenOptions{Path: path})
		if tc.refused {
			if !errors.Is(err, cli.ErrSchemaMismatch) {
				t.Errorf("%s version %d: open answered %v, want schema_mismatch", tc.marker, tc.version, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s version %d: %v", tc.marker, tc.version, err)
		}
		tgt.Close()
	}
	if err := e.WriteForeignSchema(context.Background(), "continuity", filepath.Join(dir, "x.db"), "m", 1); spec.KindOf(err) != spec.ErrBadRequest {
		t.Errorf("write_foreign_schema of the continuity store: %v, want bad_request", err)
	}
	now := start(t, "now")
	if now.Info().Capabilities.ClientSchemaWriter || suite.HarnessOf(now).WriteClientSchema != nil {
		t.Error("a backend that does not declare client_schema_writer has a writer")
	}
	if err := now.WriteForeignSchema(context.Background(), "continuity", filepath.Join(dir, "y.db"), "m", 1); spec.KindOf(err) != spec.ErrBadRequest {
		t.Errorf("write_foreign_schema to a backend that does not declare it: %v, want bad_request", err)
	}
}
