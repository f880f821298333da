package model

import (
	"slices"
	"strings"
	"testing"

	r "github.com/storecheck/storecheck/spec/runtime"
)

// A runtime state names the claimable batches of the session with the
// most: not a batch not yet available, nor one whose claim is live, nor
// another session's.
func TestTheClaimableBatchesOfOneSessionAreAFeature(t *testing.T) {
	batch := func(session string, availableAt int64) rtBatch {
		return rtBatch{B: r.QueuedWorkBatch{SessionID: session, AvailableAtMs: availableAt}}
	}
	claimed := batch("a", 0)
	claimed.Claimed, claimed.ClaimExpires = true, 500
	expired := batch("a", 0)
	expired.Claimed, expired.ClaimExpires = true, 50
	s := RuntimeState{batches: []rtBatch{batch("a", 0), batch("b", 0), batch("a", 200), claimed, expired, batch("b", 0), batch("a", 0)}}
	for _, c := range []struct {
		now  int64
		want string
	}{
		{100, "claimable batches of one session: 2-3"}, // a: 3 (one expired claim), b: 2
		{300, "claimable batches of one session: 4-7"}, // a's delayed one is available
	} {
		if got := (Runtime{}).Features(s, c.now); !slices.Contains(got, c.want) {
			t.Errorf("at %d: %v, want %q", c.now, got, c.want)
		}
	}
	if got := (Runtime{}).Features(RuntimeState{}, 0); slices.ContainsFunc(got, func(f string) bool { return strings.HasPrefix(f, "claimable") }) {
		t.Errorf("an empty queue names %v", got)
	}
}
