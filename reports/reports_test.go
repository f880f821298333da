package reports

import (
	"strings"
	"testing"
)

func TestTextSummary(t *testing.T) {
	r := Run{Backend: "b", Seed: 9, Checks: []Check{
		{Store: "runtime", Layer: "spec", Name: "r1", Outcome: Passed},
		{Store: "continuity", Layer: "spec", Name: "c1", Outcome: Passed},
		{Store: "continuity", Layer: "spec", Name: "c2", Outcome: Failed, Message: "boom"},
		{Store: "continuity", Layer: "spec", Name: "c3", Outcome: Skipped, Message: "no files"},
		{Store: "continuity", Layer: "spec", Name: "c4", Outcome: Skipped, Message: "no files"},
	}}
	var b strings.Builder
	WriteText(&b, r)
	want := `storecheck: backend b, seed 9
  continuity  spec                1 passed    1 failed    2 skipped
  runtime     spec                1 passed    0 failed    0 skipped
FAIL continuity/spec: c2
    boom
skip continuity/spec: no files
`
	if b.String() != want {
		t.Fatalf("got:\n%s\nwant:\n%s", b.String(), want)
	}
	if !r.Failed() {
		t.Fatal("a run with a failed check did not fail")
	}
}
