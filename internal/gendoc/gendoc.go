// Package gendoc keeps a generated section of a document (the lines
// between <!-- BEGIN GENERATED name --> and <!-- END GENERATED name -->)
// the same as the code that generates it, for the tests that check a
// document against its definitions.
package gendoc

import (
	"os"
	"strings"
	"testing"
)

// UpdateEnv set rewrites each section checked instead of failing.
const UpdateEnv = "STORECHECK_UPDATE_DOCS"

// Check fails t when the section name of the file at path is not body
// (with how to rewrite it: the command run, updating); with UpdateEnv set
// it rewrites the section instead.
func Check(t testing.TB, path, name, body, run string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	begin, end := "<!-- BEGIN GENERATED "+name+" -->\n", "<!-- END GENERATED "+name+" -->"
	page := string(b)
	i, j := strings.Index(page, begin), strings.Index(page, end)
	if i < 0 || j < i {
		t.Fatalf("%s has no %q ... %q section", path, begin, end)
	}
	want := page[:i+len(begin)] + body + page[j:]
	switch {
	case want == page:
	case os.Getenv(UpdateEnv) != "":
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	default:
		t.Errorf("%s's %s is out of date; run %s=1 %s", path, name, UpdateEnv, run)
	}
}
