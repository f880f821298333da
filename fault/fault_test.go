package fault_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/storecheck/storecheck/adapters"
	"github.com/storecheck/storecheck/fault"
	"github.com/storecheck/storecheck/fault/lossyfs"
	refcontinuity "github.com/storecheck/storecheck/reference/continuity"
	"github.com/storecheck/storecheck/spec"
	c "github.com/storecheck/storecheck/spec/continuity"
)

func injected(t *testing.T) (*fault.Parts, c.Store) {
	t.Helper()
	s, err := refcontinuity.Open(context.Background(), refcontinuity.Options{})
	if err != nil {
		t.Fatal(err)
	}
	in := fault.Wrap(adapters.Local[c.Store](s, c.Apply), c.StoreName)
	t.Cleanup(func() { in.Close() })
	return &fault.Parts{Clock: clockwork.NewFakeClock(), Boundary: in}, c.Proxy{Target: in}
}

func inject(t *testing.T, env *fault.Parts, f fault.Fault) {
	t.Helper()
	if err := f.Inject(context.Background(), env); err != nil {
		t.Fatalf("%s: %v", f, err)
	}
}

var rec = c.Record{Identity: "a", AgentRuntimeID: "rt", SessionID: "s"}

// Busy and IOError fail operations before they reach the store, with the
// contract's io kind: definite, nothing happened.
func TestBusyAndIOErrorFailBeforeTheStore(t *testing.T) {
	ctx := context.Background()
	env, s := injected(t)
	inject(t, env, fault.Busy{Op: "upsert_continuity_record", Times: 2})
	inject(t, env, fault.IOError{Op: "max_fencing_token"})
	for range 2 {
		err := s.UpsertContinuityRecord(ctx, rec, 5)
		if !errors.Is(err, c.ErrIO) || !strings.Contains(err.Error(), "SQLITE_BUSY") || !c.Contract.Definite(err) {
			t.Fatalf("want a definite busy io error, got %v", err)
		}
	}
	if _, err := s.MaxFencingToken(ctx); !errors.Is(err, c.ErrIO) || !strings.Contains(err.Error(), "SQLITE_IOERR") {
		t.Fatalf("want an injected io error, got %v", err)
	}
	if m, err := s.MaxFencingToken(ctx); err != nil || m != 0 {
		t.Fatalf("the refused upserts left a trace, or the fault outlived its count: %v %v", m, err)
	}
	if err := s.UpsertContinuityRecord(ctx, rec, 5); err != nil {
		t.Fatalf("the third upsert is past the busy fault: %v", err)
	}
}

// LostReply lets the operation happen and loses its reply: indefinite.
func TestLostReplyIsIndefiniteButTakesEffect(t *testing.T) {
	ctx := context.Background()
	env, s := injected(t)
	inject(t, env, fault.LostReply{Op: "upsert_continuity_record"})
	err := s.UpsertContinuityRecord(ctx, rec, 7)
	if spec.KindOf(err) != spec.ErrTimeout || c.Contract.Definite(err) {
		t.Fatalf("want an indefinite timeout, got %v", err)
	}
	if m, err := s.MaxFencingToken(ctx); err != nil || m != 7 {
		t.Fatalf("the operation whose reply was lost did not happen: %v %v", m, err)
	}
}

func TestPauseHoldsTheNextOperation(t *testing.T) {
	env, s := injected(t)
	inject(t, env, fault.Pause{For: 100 * time.Millisecond})
	start := time.Now()
	if _, err := s.MaxFencingToken(context.Background()); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took < 100*time.Millisecond {
		t.Fatalf("the paused operation took %s", took)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancel()
	inject(t, env, fault.Pause{For: time.Hour})
	if _, err := s.MaxFencingToken(ctx); spec.KindOf(err) != spec.ErrCanceled {
		t.Fatalf("a pause ends with the caller's context: %v", err)
	}
}

func TestClockJump(t *testing.T) {
	env, _ := injected(t)
	before := env.Clock.Now()
	inject(t, env, fault.ClockJump{By: 90 * time.Second})
	if got := env.Clock.Since(before); got != 90*time.Second {
		t.Fatalf("the clock moved %s", got)
	}
	if err := (fault.ClockJump{By: -time.Second}).Inject(context.Background(), env); err == nil {
		t.Fatal("the clock must never go back")
	}
}

// A fault whose part of the env is missing says so rather than doing
// nothing.
func TestFaultsRefuseAnEnvWithoutTheirPart(t *testing.T) {
	for _, f := range []fault.Fault{fault.Kill{}, fault.CrashAt{Point: "x"}, fault.Restart{}, fault.ClockJump{By: time.Second},
		fault.Busy{}, fault.IOError{}, fault.LostReply{}, fault.Pause{For: time.Second}, fault.PowerCut{},
		fault.SyncError{File: "x"}, fault.SyncCrash{File: "x"}} {
		if err := f.Inject(context.Background(), &fault.Parts{}); err == nil {
			t.Errorf("%s injected into an empty env", f)
		}
	}
}

// Every kind of the kit writes the fields a saved schedule has always
// held, and reads them back.
func TestSchedulesKeepTheirFaults(t *testing.T) {
	for want, f := range map[string]fault.Fault{
		`{"type":"kill"}`:    fault.Kill{},
		`{"type":"restart"}`: fault.Restart{},
		`{"type":"crash_at","point":"upsert_continuity_record/after_commit","nth":2}`: fault.CrashAt{Point: "upsert_continuity_record/after_commit", Nth: 2},
		`{"type":"clock_jump","by_ms":1500}`:                                          fault.ClockJump{By: 1500 * time.Millisecond},
		`{"type":"busy","op":"max_fencing_token","times":3}`:                          fault.Busy{Op: "max_fencing_token", Times: 3},
		`{"type":"busy"}`:                                        fault.Busy{},
		`{"type":"io_error","op":"resolve_many"}`:                fault.IOError{Op: "resolve_many"},
		`{"type":"lost_reply"}`:                                  fault.LostReply{},
		`{"type":"pause","op":"x","for_ms":20}`:                  fault.Pause{Op: "x", For: 20 * time.Millisecond},
		`{"type":"power_cut"}`:                                   fault.PowerCut{},
		`{"type":"sync_error","file":"c.db-wal","nth":2}`:        fault.SyncError{File: "c.db-wal", Nth: 2},
		`{"type":"sync_crash","file":"c.db","nth":3,"fates":17}`: fault.SyncCrash{File: "c.db", Nth: 3, Fates: 17},
		`{"type":"power_cut","kept":[{"file":"c.db-wal","n":2},{"file":"c.db","n":1,"sectors":[0,3]}]}`: fault.PowerCut{Kept: lossyfs.Fates{{File: "c.db-wal", N: 2}, {File: "c.db", N: 1, Sectors: []int{0, 3}}}},
	} {
		b, err := fault.Marshal(f)
		if err != nil || string(b) != want {
			t.Errorf("%s written as %s (%v), want %s", f, b, err, want)
		}
		if back, err := fault.Unmarshal([]byte(want)); err != nil || !reflect.DeepEqual(back, f) {
			t.Errorf("%s read back as %v (%v)", want, back, err)
		}
	}
	for _, bad := range []string{`{"type":"crash_at"}`, `{"type":"clock_jump","by_ms":-1}`, `{"type":"kill","op":"x"}`,
		`{"type":"pause","bogus":1}`, `{"type":"nothing"}`, `{"type":"kill"} {}`,
		`{"type":"power_cut","kept":[{"file":"w","n":0}]}`, `{"type":"power_cut","kept":[{"n":1}]}`,
		`{"type":"power_cut","kept":[{"file":"w","n":1},{"file":"w","n":1,"sectors":[1]}]}`,
		`{"type":"power_cut","kept":[{"file":"w","n":1,"sectors":[2,1]}]}`, `{"type":"power_cut","kept":[{"file":"w","n":1,"sectors":[-1,1]}]}`,
		`{"type":"power_cut","file":"w","keep":1,"kept":[{"file":"w","n":2}]}`,
		`{"type":"sync_error"}`, `{"type":"sync_error","file":"w","nth":-1}`, `{"type":"sync_crash","nth":1}`} {
		if f, err := fault.Unmarshal([]byte(bad)); err == nil {
			t.Errorf("%s read as %v", bad, f)
		}
	}
}

// A power cut saved before each write had a fate of its own (a prefix of
// one file's writes) reads back as the fates that keep that prefix.
func TestAPowerCutSavedAsATornPrefixReadsAsItsFates(t *testing.T) {
	f, err := fault.Unmarshal([]byte(`{"type":"power_cut","file":"c.db-wal","keep":2}`))
	want := fault.PowerCut{Kept: lossyfs.Fates{{File: "c.db-wal", N: 1}, {File: "c.db-wal", N: 2}}}
	if err != nil || !reflect.DeepEqual(f, want) {
		t.Fatalf("read as %#v (%v), want %#v", f, err, want)
	}
	if b, _ := fault.Marshal(f); string(b) != `{"type":"power_cut","kept":[{"file":"c.db-wal","n":1},{"file":"c.db-wal","n":2}]}` {
		t.Errorf("written back as %s", b)
	}
}

// A cut shrinks toward every write lost: its torn writes go first, the
// last first, then the later half of its kept writes, down to none.
func TestAPowerCutShrinksTowardEveryWriteLost(t *testing.T) {
	f := fault.Fault(fault.PowerCut{Kept: lossyfs.Fates{{File: "a", N: 1}, {File: "a", N: 2, Sectors: []int{1}}, {File: "b", N: 1}, {File: "b", N: 2, Sectors: []int{0}}, {File: "b", N: 3}}})
	var got []string
	for {
		smaller, ok := fault.Smaller(f)
		if !ok {
			break
		}
		f = smaller
		got = append(got, f.String())
	}
	want := []string{
		"cut the power; of the unsynced writes only these survive: a#1, a#2 (torn: sectors 1), b#1, b#3",
		"cut the power; of the unsynced writes only these survive: a#1, b#1, b#3",
		"cut the power; of the unsynced writes only these survive: a#1",
		"cut the power (every unsynced write is lost)",
	}
	if !slices.Equal(got, want) {
		t.Errorf("shrinks as\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A power cut at a sync shrinks to every write lost, then to the sooner
// sync; a failing sync to the sooner sync.
func TestSyncFaultsShrinkToTheSimplest(t *testing.T) {
	var got []string
	for _, f := range []fault.Fault{fault.SyncCrash{File: "w", Nth: 3, Fates: 9}, fault.SyncError{File: "w", Nth: 2}} {
		for {
			smaller, ok := fault.Smaller(f)
			if !ok {
				break
			}
			f = smaller
			got = append(got, f.String())
		}
	}
	want := []string{
		"cut the power at sync 3 of w (every unsynced write lost)",
		"cut the power at sync 2 of w (every unsynced write lost)",
		"cut the power at sync 1 of w (every unsynced write lost)",
		"fail sync 1 of w (EIO; its dirty data dropped)",
	}
	if !slices.Equal(got, want) {
		t.Errorf("shrinks as\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// The kit's kinds keep the order they were drawn in before the registry:
// a seed's swarm picks their rates, and each decision tries them, in rank
// order, so a change of it would change every seed's run.
func TestTheKitsKindsKeepTheirDrawOrder(t *testing.T) {
	want := []string{"clock_jump", "kill", "crash_at", "restart", "busy", "io_error", "lost_reply", "pause", "power_cut"}
	var got []string
	for _, k := range fault.Kinds() {
		if slices.Contains(want, k.Name) {
			got = append(got, k.Name)
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("the kinds draw in the order %v, want %v", got, want)
	}
}

// A cut's draw gives each unsynced write a fate of its own: across many
// draws some cut loses everything, some keeps a prefix of one file's
// writes, some keeps a later write and loses an earlier one, some keeps
// writes of two files, some tears a write (never one of one sector, never
// wholly or not at all); no fate is ever given to the -shm file; the same
// stream draws the same cuts.
func TestAPowerCutDrawsEachWriteAFateOfItsOwn(t *testing.T) {
	var k *fault.Kind
	for _, kind := range fault.Kinds() {
		if kind.Name == "power_cut" {
			k = kind
		}
	}
	unsynced := map[string][]int{"c.db-wal": {9, 9, 1, 9}, "c.db": {8, 0}, "c.db-shm": {1, 1, 1}}
	draw := func(seed uint64) []string {
		r := rand.New(rand.NewPCG(seed, 1))
		var out []string
		for range 200 {
			f, _ := k.Draw.Make(&fault.Drawing{R: r, Unsynced: func() (map[string][]int, error) { return unsynced, nil }})
			out = append(out, f.String())
			cut := f.(fault.PowerCut)
			for _, kept := range cut.Kept {
				if strings.HasSuffix(kept.File, "-shm") {
					t.Fatalf("%s gives the -shm file a fate", f)
				}
				if n := len(kept.Sectors); n > 0 && (n >= unsynced[kept.File][kept.N-1] || unsynced[kept.File][kept.N-1] < 2) {
					t.Fatalf("%s tears %s#%d, of %d sectors, keeping %v", f, kept.File, kept.N, unsynced[kept.File][kept.N-1], kept.Sectors)
				}
			}
		}
		return out
	}
	got := draw(7)
	if !slices.Equal(got, draw(7)) {
		t.Fatal("the same stream drew other cuts")
	}
	seen := map[string]bool{}
	for _, s := range got {
		switch {
		case s == "cut the power (every unsynced write is lost)":
			seen["all lost"] = true
		case strings.Contains(s, "survive: c.db-wal#1, c.db-wal#2") && !strings.Contains(s, "c.db#") && !strings.Contains(s, "torn"):
			seen["a prefix"] = true
		}
		if strings.Contains(s, "c.db#") && strings.Contains(s, "c.db-wal#") {
			seen["two files"] = true
		}
		if strings.Contains(s, "c.db-wal#3") && !strings.Contains(s, "c.db-wal#2") {
			seen["a later write without an earlier"] = true
		}
		if strings.Contains(s, "torn: sectors") {
			seen["torn"] = true
		}
	}
	for _, want := range []string{"all lost", "a prefix", "two files", "a later write without an earlier", "torn"} {
		if !seen[want] {
			t.Errorf("200 draws never drew a cut with %s:\n%s", want, strings.Join(got[:20], "\n"))
		}
	}
}
