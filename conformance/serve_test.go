package conformance

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
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
	"github.com/storecheck/storecheck/spec/suite"
)

// continuityState is what a continuity store holds of the crash scenarios'
// identities and sessions.
type continuityState struct {
	Records   map[c.Identity]c.Resolution
	Snapshots map[c.SessionID]*c.Snapshot
	MaxFence  c.FencingToken
}

func dumpContinuity(t *testing.T, s c.Store) continuityState {
	t.Helper()
	ctx := context.Background()
	st := continuityState{Snapshots: map[c.SessionID]*c.Snapshot{}}
	var err error
	if st.Records, err = s.ResolveMany(ctx, []c.Identity{"a", "b"}); err != nil {
		t.Fatal(err)
	}
	for _, sess := range []c.SessionID{"s1", "s2", "s3"} {
		if st.Snapshots[sess], err = s.LoadSessionSnapshot(ctx, sess); err != nil {
			t.Fatal(err)
		}
	}
	if st.MaxFence, err = s.MaxFencingToken(ctx); err != nil {
		t.Fatal(err)
	}
	return st
}

func (s continuityState) String() string {
	var b strings.Builder
	for _, id := range []c.Identity{"a", "b"} {
		if r := s.Records[id].Record; r != nil {
			fmt.Fprintf(&b, "%s: %s gen %d version %d; ", id, r.SessionID, r.Generation, r.CheckpointVersion)
		} else {
			fmt.Fprintf(&b, "%s: %s; ", id, s.Records[id].State)
		}
	}
	for _, sess := range []c.SessionID{"s1", "s2", "s3"} {
		if snap := s.Snapshots[sess]; snap != nil {
			fmt.Fprintf(&b, "%s=%q; ", sess, snap.Data)
		}
	}
	fmt.Fprintf(&b, "max fence %d", s.MaxFence)
	return b.String()
}

func equalState(a, b continuityState) bool { return a.String() == b.String() }

// crashScenario is a history of acknowledged writes (setup) and the one
// operation a crash point interrupts.
type crashScenario struct {
	setup func(ctx context.Context, s c.Store) error
	op    func(ctx context.Context, s c.Store) error
}

func rec(id c.Identity, sess c.SessionID, gen c.Generation, v c.CheckpointVersion) c.Record {
	return c.Record{Identity: id, AgentRuntimeID: "rt", SessionID: sess, Generation: gen, CheckpointVersion: v}
}

func snapshot(id c.Identity, sess c.SessionID, gen c.Generation, v c.CheckpointVersion, fence c.FencingToken, data string) c.SnapshotWrite {
	return c.SnapshotWrite{Identity: id, SessionID: sess, Generation: gen, CheckpointVersion: v, FencingToken: fence, Data: []byte(data)}
}

// base: identity a at s1 (generation 1) with a snapshot at version 1, and
// identity b at s3 with one of its own.
func base(ctx context.Context, s c.Store) error {
	return errors.Join(
		s.UpsertContinuityRecord(ctx, rec("a", "s1", 1, 0), 5),
		s.SaveSessionSnapshot(ctx, snapshot("a", "s1", 1, 1, 5, "one")),
		s.UpsertContinuityRecord(ctx, rec("b", "s3", 1, 0), 9),
		s.SaveSessionSnapshot(ctx, snapshot("b", "s3", 1, 1, 9, "b-one")),
	)
}

// attempt: base, then a reset attempt of a to s2 (generation 2) with a
// snapshot of its own.
func attempt(ctx context.Context, s c.Store) error {
	return errors.Join(base(ctx, s),
		s.UpsertContinuityRecord(ctx, rec("a", "s2", 2, 0), 6),
		s.SaveSessionSnapshot(ctx, snapshot("a", "s2", 2, 1, 6, "attempt")))
}

var (
	saveTwo = func(ctx context.Context, s c.Store) error {
		return s.SaveSessionSnapshot(ctx, snapshot("a", "s1", 1, 2, 6, "two"))
	}
	rollback = func(ctx context.Context, s c.Store) error {
		prev := rec("a", "s1", 1, 1)
		return s.RollbackContinuityRecord(ctx, rec("a", "s2", 2, 1), &prev, 6)
	}
	deleteA = func(ctx context.Context, s c.Store) error { return s.DeleteContinuityRecord(ctx, "a", 5) }
)

// crashScenarios has one scenario for every continuity crash point.
var crashScenarios = map[string]crashScenario{
	"save_session_snapshot/after_snapshot_upsert": {base, saveTwo},
	"save_session_snapshot/after_commit":          {base, saveTwo},
	"upsert_continuity_record/after_commit": {base, func(ctx context.Context, s c.Store) error {
		return s.UpsertContinuityRecord(ctx, rec("a", "s2", 2, 0), 7)
	}},
	"rollback_continuity_record/after_snapshots_delete": {attempt, rollback},
	"rollback_continuity_record/after_commit":           {attempt, rollback},
	"delete_continuity_record/after_snapshots_delete":   {base, deleteA},
	"delete_continuity_record/after_commit":             {base, deleteA},
	"delete_session_snapshot_if_current_revision/after_commit": {base, func(ctx context.Context, s c.Store) error {
		ok, err := s.DeleteSessionSnapshotIfCurrentRevision(ctx, "s1", c.SnapshotRevision([]byte("one")))
		if err == nil && !ok {
			err = errors.New("nothing deleted")
		}
		return err
	}},
}

// expectedStates runs a scenario in process, in memory: the state its
// acknowledged writes leave, and the state after its operation too.
func expectedStates(t *testing.T, sc crashScenario) (before, after continuityState) {
	t.Helper()
	ctx := context.Background()
	s, err := refcontinuity.Open(ctx, refcontinuity.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := sc.setup(ctx, s); err != nil {
		t.Fatal(err)
	}
	before = dumpContinuity(t, s)
	if err := sc.op(ctx, s); err != nil {
		t.Fatal(err)
	}
	return before, dumpContinuity(t, s)
}

// Crash a served reference (Serve, as "storecheck serve") at every
// continuity crash point, inside the
// operation: the operation in flight is indefinite; after a restart on the
// same file every acknowledged write is there, and the interrupted
// operation is either wholly there (a crash after its commit) or not at all.
func TestCrashAtEveryContinuityCrashPoint(t *testing.T) {
	e := startServe(t)
	declared := e.Info().Capabilities.CrashPoints[c.StoreName]
	if !slices.Equal(declared, refcontinuity.CrashPoints) {
		t.Fatalf("serve's hello declares %v, the store has %v", declared, refcontinuity.CrashPoints)
	}
	ctx := context.Background()
	for _, point := range declared {
		t.Run(point, func(t *testing.T) {
			sc, ok := crashScenarios[point]
			if !ok {
				t.Fatalf("no crash scenario for crash point %s", point)
			}
			before, after := expectedStates(t, sc)
			if equalState(before, after) {
				t.Fatalf("the scenario's operation changes nothing: a crash could not show a half-applied write")
			}
			want := before
			if strings.HasSuffix(point, "/after_commit") {
				want = after
			}
			clock := clockwork.NewFakeClockAt(suite.Epoch)
			path := filepath.Join(t.TempDir(), "continuity.db")
			tgt, err := e.Open(ctx, c.StoreName, spec.OpenOptions{Path: path, Clock: clock})
			if err != nil {
				t.Fatal(err)
			}
			rec := &adapters.Recorder{Target: tgt, Contract: c.Contract}
			s := c.Proxy{Target: rec}
			if err := sc.setup(ctx, s); err != nil {
				t.Fatalf("setup: %v", err)
			}
			env := &fault.Parts{Process: e, Clock: clock}
			if err := (fault.CrashAt{Point: point}).Inject(ctx, env); err != nil {
				t.Fatal(err)
			}
			err = sc.op(ctx, s)
			if spec.KindOf(err) != spec.ErrCrashed {
				t.Fatalf("the operation at the crash point returned %v, want kind crashed", err)
			}
			hist := rec.History()
			if last := hist[len(hist)-1]; last.Definite {
				t.Errorf("the operation in flight at the crash is recorded as definite: %+v", last)
			}
			for _, h := range hist[:len(hist)-1] {
				if !h.Definite || h.Err != nil {
					t.Fatalf("an acknowledged write is not definite: %+v", h)
				}
			}
			if e.Err() != nil {
				t.Fatalf("an injected crash counted as a backend failure: %v", e.Err())
			}
			if err := (fault.Restart{}).Inject(ctx, env); err != nil {
				t.Fatal(err)
			}
			tgt, err = e.Open(ctx, c.StoreName, spec.OpenOptions{Path: path, Clock: clock})
			if err != nil {
				t.Fatal(err)
			}
			defer tgt.Close()
			got := dumpContinuity(t, c.Proxy{Target: tgt})
			if !equalState(got, want) {
				t.Errorf("after the crash and a restart:\n got  %s\n want %s\n (before the operation: %s; after it: %s)", got, want, before, after)
			}
		})
	}
}

// Kill the backend between operations, restart it: every acknowledged
// write is there; Kill is a fault, not a backend failure.
func TestKillBetweenOperationsKeepsAcknowledgedWrites(t *testing.T) {
	e := startServe(t)
	ctx := context.Background()
	clock := clockwork.NewFakeClockAt(suite.Epoch)
	path := filepath.Join(t.TempDir(), "continuity.db")
	open := func() c.Store {
		tgt, err := e.Open(ctx, c.StoreName, spec.OpenOptions{Path: path, Clock: clock})
		if err != nil {
			t.Fatal(err)
		}
		return c.Proxy{Target: tgt}
	}
	s := open()
	if err := attempt(ctx, s); err != nil {
		t.Fatal(err)
	}
	want := dumpContinuity(t, s)
	env := &fault.Parts{Process: e, Clock: clock}
	for _, f := range []fault.Fault{fault.Kill{}, fault.ClockJump{By: time.Hour}, fault.Restart{}} {
		if err := f.Inject(ctx, env); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
	}
	if err := s.UpsertContinuityRecord(ctx, rec("a", "s2", 2, 0), 6); spec.KindOf(err) != spec.ErrCrashed {
		t.Fatalf("an operation on a handle of the killed process: %v, want kind crashed", err)
	}
	if got := dumpContinuity(t, open()); !equalState(got, want) {
		t.Errorf("after kill and restart:\n got  %s\n want %s", got, want)
	}
	if e.Err() != nil {
		t.Errorf("an injected kill counted as a backend failure: %v", e.Err())
	}
}
