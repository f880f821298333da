package main

import (
	"os"
	"strconv"
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
		// The long specs are skipped too, each saying so: the run did not
		// ask for them.
		long := strings.Count(out, "skip "+store+"/spec: a long spec, not run: ")
		if want, _ := strconv.Atoi(powerLossSkips()); m == nil || m[1] == "0" || m[2] != "0" || m[3] != strconv.Itoa(want+long) {
			t.Fatalf("want a %s line with passes, no failures and no skips (but the power-loss spec's, where FUSE is missing, and the long specs'):\n%s", store, out)
		}
		// Its concurrent history too, over the wire, decided.
		if m := tally(store, "linearizability").FindStringSubmatch(out); m == nil || m[1] != "1" || strings.Contains(out, "inconclusive") {
			t.Errorf("want a %s linearizability line that passed:\n%s", store, out)
		}
	}
}
