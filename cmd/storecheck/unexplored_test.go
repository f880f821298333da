package main

import (
	"strings"
	"testing"

	"github.com/storecheck/storecheck/internal/stores"
	"github.com/storecheck/storecheck/linearizability/model"
	"github.com/storecheck/storecheck/sim"
	"github.com/storecheck/storecheck/spec"
)

// A rare event a backend's declared choice puts out of reach is reported
// with that reason, not as rare: a continuity backend of opaque revisions
// cannot be seen deleting at the current revision.
func TestAnEventOutOfReachOfADeclaredChoiceSaysWhy(t *testing.T) {
	st, _ := stores.Lookup("continuity")
	note := func(caps spec.Capabilities) string {
		for _, n := range unexplored(st, caps, sim.Coverage{}, sim.Result{Yielded: true, CrashPoints: true}, 8) {
			if strings.Contains(n, model.EventSnapshotDeletedAtRevision) {
				return n
			}
		}
		t.Fatalf("no note for %q", model.EventSnapshotDeletedAtRevision)
		return ""
	}
	if n := note(spec.Capabilities{SnapshotRevision: "opaque"}); !strings.Contains(n, "opaque snapshot revisions") || strings.Contains(n, "rare:") {
		t.Errorf("opaque revisions: %s", n)
	}
	if n := note(spec.Capabilities{}); !strings.Contains(n, "rare: none of the 8 seeds") {
		t.Errorf("sha256 revisions: %s", n)
	}
}
