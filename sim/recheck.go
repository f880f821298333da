package sim

import (
	"fmt"
	"strings"
)

// A sweep runs a sampled share of its seeds twice and compares the two
// traces (FoundationDB's simulator re-runs about 5% of its runs): one seed
// is one run only if both the kit and the backend are deterministic, and a
// run that is not gives a reproduce line that reproduces nothing. A mismatch
// is kept whole (Result.Nondeterminism), and the layer that reads it judges
// it by the side that parted (conformance's recheckVerdict).

// recheckShare is one run in recheckShare that is run twice.
const recheckShare = 20

// Rechecked reports whether a sweep runs seed twice: about one seed in
// recheckShare, chosen by the seed alone (so the same sweep rechecks the
// same seeds, and a shard the seeds it holds).
func Rechecked(seed int64) bool { return mix64(uint64(seed))%recheckShare == 0 }

// mix64 is splitmix64's finalizer: neighbouring inputs are spread.
func mix64(z uint64) uint64 {
	z += 0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

// Sides of a divergence: who behaved differently given the same inputs.
const (
	SideBackend = "backend"
	SideKit     = "kit"
)

// Divergence is where two runs of one seed parted: the first line of the
// trace that differs, on each side, and which side is nondeterministic.
type Divergence struct {
	// Step and Process are the first run's (else the second's) at the
	// line that differs.
	Step, Process int
	// First and Second are the two runs' lines there ("" where a run had
	// already ended).
	First, Second string
	// Side is SideBackend or SideKit, and Why says how that was told.
	Side, Why string
}

func (d Divergence) String() string {
	show := func(s string) string {
		if s == "" {
			return "(the run had ended)"
		}
		return strings.TrimSpace(s)
	}
	return fmt.Sprintf("the seed ran twice and parted at step %d on process %d: the %s is nondeterministic (%s); first run: %s; second run: %s",
		d.Step, d.Process, d.Side, d.Why, show(d.First), show(d.Second))
}

// diverge compares two runs of one seed, move by move: nil when they are
// the same. Every line before the first difference is the same on both
// sides, so what differs first was chosen by whoever wrote that line: an
// answer, or a yield point reached, is the backend's (the same request, a
// different reply or path); a request, a fault, a clock jump, a verdict is
// the kit's (it is drawn from the seed and the answers before it, which
// were the same).
func diverge(a, b []Move) *Divergence {
	n := min(len(a), len(b))
	i := 0
	for i < n && a[i] == b[i] {
		i++
	}
	if i == len(a) && i == len(b) {
		return nil
	}
	d := &Divergence{}
	var at Move
	switch {
	case i < len(a):
		at, d.First = a[i], a[i].Text
		if i < len(b) {
			d.Second = b[i].Text
		}
	default:
		at, d.Second = b[i], b[i].Text
	}
	d.Step, d.Process = at.Step, at.Process
	d.Side, d.Why = sideOf(d.First, d.Second)
	return d
}

// sideOf says who wrote the first line that differs.
func sideOf(first, second string) (side, why string) {
	backend := func(s string) bool {
		t := strings.TrimLeft(s, " ")
		if strings.HasSuffix(t, "(refused before the backend)") {
			return false
		}
		return strings.HasPrefix(t, "→ ") || strings.HasPrefix(t, "… ") ||
			strings.Contains(t, "unsynced writes") // what the backend wrote before a power cut
	}
	switch {
	case first != "" && second != "" && backend(first) && backend(second):
		return SideBackend, "it answered the same requests in the same order differently"
	case first != "" && backend(first) && second == "", second != "" && backend(second) && first == "":
		return SideBackend, "one run went on where the other had ended, after the same requests and answers"
	case backend(first) != backend(second) && first != "" && second != "":
		return SideBackend, "the same request was answered in one run and took another path in the other"
	}
	return SideKit, "it drew a different step after the same answers: a bug of storecheck, please report it with this seed"
}
