package main

import (
	"os"
	"strings"
	"testing"

	"github.com/storecheck/storecheck/internal/stores"
)

// The whole suite passes against "storecheck serve" through the exec
// adapter: storecheck run -- storecheck serve.
func TestRunPassesServeThroughTheExecAdapter(t *testing.T) {
	t.Parallel() // a subprocess a run: the longest tests overlap
	out, errs, code := storecheck(t, "file", "run", "--seed", "3", "--ops", "500", "--", os.Args[0], "serve")
	if code != exitPassed {
		t.Fatalf("exit %d, want 0\n%s\n%s", code, out, errs)
	}
	for _, store := range stores.Names() {
		m := tally(store, "spec").FindStringSubmatch(out)
		if m == nil || m[1] == "0" || m[2] != "0" || m[3] != powerLossSkips() {
			t.Fatalf("want a %s line with passes, no failures and no skips (but the power-loss spec's, where FUSE is missing):\n%s", store, out)
		}
		// Its concurrent history too, over the wire, decided.
		if m := tally(store, "linearizability").FindStringSubmatch(out); m == nil || m[1] != "1" || strings.Contains(out, "inconclusive") {
			t.Errorf("want a %s linearizability line that passed:\n%s", store, out)
		}
	}
}
