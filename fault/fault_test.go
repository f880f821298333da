package fault_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/storecheck/storecheck/adapters"
	"github.com/storecheck/storecheck/fault"
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
		fault.Busy{}, fault.IOError{}, fault.LostReply{}, fault.Pause{For: time.Second}, fault.PowerCut{}} {
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
		`{"type":"busy"}`:                                 fault.Busy{},
		`{"type":"io_error","op":"resolve_many"}`:         fault.IOError{Op: "resolve_many"},
		`{"type":"lost_reply"}`:                           fault.LostReply{},
		`{"type":"pause","op":"x","for_ms":20}`:           fault.Pause{Op: "x", For: 20 * time.Millisecond},
		`{"type":"power_cut"}`:                            fault.PowerCut{},
		`{"type":"power_cut","file":"c.db-wal","keep":2}`: fault.PowerCut{File: "c.db-wal", Keep: 2},
	} {
		b, err := fault.Marshal(f)
		if err != nil || string(b) != want {
			t.Errorf("%s written as %s (%v), want %s", f, b, err, want)
		}
		if back, err := fault.Unmarshal([]byte(want)); err != nil || back != f {
			t.Errorf("%s read back as %v (%v)", want, back, err)
		}
	}
	for _, bad := range []string{`{"type":"crash_at"}`, `{"type":"clock_jump","by_ms":-1}`, `{"type":"kill","op":"x"}`,
		`{"type":"pause","bogus":1}`, `{"type":"nothing"}`, `{"type":"kill"} {}`} {
		if f, err := fault.Unmarshal([]byte(bad)); err == nil {
			t.Errorf("%s read as %v", bad, f)
		}
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
