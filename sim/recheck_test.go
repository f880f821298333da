package sim

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jonboulle/clockwork"

	"github.com/storecheck/storecheck/internal/bugs"
	"github.com/storecheck/storecheck/spec"
)

func TestRecheckedIsAboutOneSeedInTwenty(t *testing.T) {
	n := 0
	for seed := int64(1); seed <= 10000; seed++ {
		if Rechecked(seed) {
			n++
		}
	}
	if n < 400 || n > 600 {
		t.Fatalf("%d of 10000 seeds rechecked, want about 500", n)
	}
}

// The first line two runs differ in names the side that wrote it.
func TestDivergeNamesTheSideThatParted(t *testing.T) {
	base := []Move{{Step: 0, Process: 0, Text: "client 0: resolve_many {}"}, {Step: 0, Process: 0, Text: "  … resolve_many/before_read"}}
	with := func(m ...Move) []Move { return append(append([]Move{}, base...), m...) }
	for _, c := range []struct {
		name     string
		a, b     []Move
		side     string
		first    string
		identity bool
	}{
		{"the same", with(Move{Step: 1, Process: 0, Text: "  → ok"}), with(Move{Step: 1, Process: 0, Text: "  → ok"}), "", "", true},
		{"an answer", with(Move{Step: 1, Process: 0, Text: "  → ok"}), with(Move{Step: 1, Process: 0, Text: "  → stale_fencing_token"}), SideBackend, "  → ok", false},
		{"a yield point", with(Move{Step: 1, Process: 0, Text: "  … resolve_many/after_read"}), with(Move{Step: 1, Process: 0, Text: "  → ok"}), SideBackend, "  … resolve_many/after_read", false},
		{"a request", with(Move{Step: 1, Process: 1, Text: "client 2: upsert {}"}), with(Move{Step: 1, Process: 1, Text: "client 3: upsert {}"}), SideKit, "client 2: upsert {}", false},
		{"a fault", with(Move{Step: 1, Process: 0, Text: "kill p0"}), with(Move{Step: 1, Process: 0, Text: "clock +5s"}), SideKit, "kill p0", false},
		{"a refusal by the kit", with(Move{Step: 1, Process: 0, Text: "  → busy (refused before the backend)"}), with(Move{Step: 1, Process: 0, Text: "  → ok"}), SideBackend, "  → busy (refused before the backend)", false},
		{"one run ended", with(), with(Move{Step: 1, Process: 0, Text: "  → ok"}), SideBackend, "", false},
	} {
		d := diverge(c.a, c.b)
		if c.identity {
			if d != nil {
				t.Errorf("%s: %v", c.name, d)
			}
			continue
		}
		if d == nil || d.Side != c.side || d.First != c.first || d.Step != 1 {
			t.Errorf("%s: got %+v, want the %s at step 1 with first %q", c.name, d, c.side, c.first)
		}
	}
}

// flaky is the reference, except that every seventh operation it is given
// since the test began reaches one more yield point: the count goes on from
// one run to the next, so the same schedule gives another trace.
type flaky struct {
	Launcher
	applies *atomic.Int64
}

func (f flaky) Start(ctx context.Context, n int, path string, clock clockwork.Clock) (Process, error) {
	p, err := f.Launcher.Start(ctx, n, path, clock)
	return flakyProc{p, f.applies}, err
}

type flakyProc struct {
	Process
	applies *atomic.Int64
}

func (p flakyProc) Apply(ctx context.Context, op spec.Op) (any, error) {
	if p.applies.Add(1)%7 == 0 {
		if err := spec.Yield(ctx, "flaky"); err != nil {
			return nil, err
		}
	}
	return p.Process.Apply(ctx, op)
}

// A sweep runs its sampled seeds twice: the reference's runs never part,
// and a backend that behaves differently on the same schedule is named, at
// the step it parted, as the side that is nondeterministic.
func TestASweepRunsSampledSeedsTwice(t *testing.T) {
	var seeds []int64
	for s := int64(1); len(seeds) < 2; s++ {
		if Rechecked(s) {
			seeds = append(seeds, s)
		}
	}
	seeds = append(seeds, seeds[1]+1) // and one it does not recheck
	ctx := context.Background()
	p := Params{Steps: 40, Processes: 1}
	for _, c := range []struct {
		name    string
		backend Launcher
		parted  bool
	}{
		{"the reference", referenceBackend(bugs.Bug{}), false},
		{"a flaky backend", flaky{referenceBackend(bugs.Bug{}), &atomic.Int64{}}, true},
	} {
		rechecked := 0
		err := Sweep(ctx, continuitySubject, c.backend, seeds, p, 1, t.TempDir(), func(r Result) {
			if r.Rechecked {
				rechecked++
			}
			if r.Rechecked != Rechecked(r.Schedule.Seed) {
				t.Errorf("%s: seed %d rechecked %v", c.name, r.Schedule.Seed, r.Rechecked)
			}
			d := r.Nondeterminism
			switch {
			case !c.parted && d != nil:
				t.Errorf("%s: seed %d parted: %v", c.name, r.Schedule.Seed, d)
			case c.parted && r.Rechecked && (d == nil || d.Side != SideBackend || !strings.Contains(d.First+d.Second, "flaky")):
				t.Errorf("%s: seed %d: %v, want the backend named at its extra yield point", c.name, r.Schedule.Seed, d)
			}
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if rechecked != 2 {
			t.Errorf("%s: %d seeds rechecked, want 2", c.name, rechecked)
		}
	}
}
