package sim

import (
	"testing"

	"github.com/storecheck/storecheck/linearizability/model"
	"github.com/storecheck/storecheck/spec"
	c "github.com/storecheck/storecheck/spec/continuity"
)

// failedSyncRun steps an oracle of the continuity model through one
// history, as the engine does: each operation called, then answered (ok or
// a rule's refusal), or, where its commit met the sync made to fail,
// answered io: deferred (the engine's way after a failed sync) or, as the
// kit did before, only indefinite. restart is a start of the run's one
// process (a kill), cut a power cut. It reports the first answer no
// configuration allows, or -1.
type failedSyncStep struct {
	op      spec.Op
	got     model.Outcome
	failed  bool // answered io: its commit met the failed sync
	restart bool
	cut     bool
}

func failedSyncRun(t *testing.T, steps []failedSyncStep, deferFailed bool) int {
	t.Helper()
	o := newOracle(model.Continuity{})
	for i, s := range steps {
		switch {
		case s.restart:
			o.recovered(true, false)
		case s.cut:
			o.recovered(true, true)
		case s.failed:
			o.call(i, s.op, 0, false)
			if deferFailed {
				o.deferred(i, s.op)
			} else {
				o.indefinite(i, s.op)
			}
		default:
			o.call(i, s.op, 0, false)
			if _, _, ok := o.ret(i, s.op, s.got); !ok {
				return i
			}
		}
	}
	return -1
}

func upsert(identity, session string, gen, fence uint64) spec.Op {
	return c.UpsertContinuityRecord{Record: c.Record{Identity: c.Identity(identity), AgentRuntimeID: "rt-0", SessionID: c.SessionID(session),
		Generation: c.Generation(gen)}, Fence: c.FencingToken(fence)}
}

// The Rust example's continuity seed 165, shrunk (the reference over the
// wire does the same): an upsert's commit meets the failed sync of the WAL
// and answers io; a snapshot save then finds no record (SQLite never
// published the commit, so the process's own reads do not see it) and is
// refused on the snapshot's owner; the process is killed, and the store
// opened again recovers the WAL, whose frames the page cache kept: the
// "failed" upsert is there, and a lower generation is stale. Taken as
// indefinite within its span only, the save's answer settled it as never
// applied, and the stale answer was a false alarm; deferred, both are
// allowed. Without the restart, nothing brings it back: the same stale
// answer is refused (the save's answer did settle it for the running
// process).
func TestACommitWhoseSyncFailedMayComeBackAtRecovery(t *testing.T) {
	save := func(identity string, gen, version uint64) spec.Op {
		return c.SaveSessionSnapshot{Write: c.SnapshotWrite{Identity: c.Identity(identity), SessionID: "session-2",
			Generation: c.Generation(gen), CheckpointVersion: c.CheckpointVersion(version), FencingToken: 4}}
	}
	history := func(restart bool) []failedSyncStep {
		s := []failedSyncStep{
			{op: save("agent-1", 1, 1), got: model.OK(nil)},
			{op: upsert("agent-0", "session-0", 3, 6), failed: true},
			{op: save("agent-0", 0, 4), got: model.Fail(c.ErrCorruption)},
		}
		if restart {
			s = append(s, failedSyncStep{restart: true})
		}
		return append(s, failedSyncStep{op: upsert("agent-0", "session-2", 2, 9), got: model.Fail(c.ErrStaleContinuityGeneration)})
	}
	if at := failedSyncRun(t, history(true), true); at >= 0 {
		t.Errorf("deferred: step %d's answer refused, want the recovered upsert allowed", at)
	}
	if at := failedSyncRun(t, history(true), false); at != 4 {
		t.Errorf("indefinite within its span only: step %d refused, want 4 (the false alarm this guards against)", at)
	}
	if at := failedSyncRun(t, history(false), true); at != 3 {
		t.Errorf("deferred, no restart: step %d refused, want 3 (only a recovery brings it back)", at)
	}
}

// The Rust example's continuity seed 179, shrunk: a delete's commit meets
// the failed WAL sync and answers io; the store recovers it at a restart
// (its frames stay in the page cache), and a later delete commits on top,
// synced and answered ok; then the power goes. The failed commit's frames
// were never durable, so the durable WAL has a hole where they were, and
// recovery stops there: the acknowledged delete after them is gone too,
// and the upsert at generation 2 it deleted is back. The model allows it
// (a cut may take the store back to any state since a deferred commit took
// effect); with no failed sync before it, the same loss breaks the
// durability rule.
func TestAPowerCutAfterAFailedSyncMayLoseTheCommitsAfterIt(t *testing.T) {
	del := func(identity string, fence uint64) spec.Op {
		return c.DeleteContinuityRecord{Identity: c.Identity(identity), Fence: c.FencingToken(fence)}
	}
	history := func(failed bool) []failedSyncStep {
		s := []failedSyncStep{{op: upsert("agent-0", "session-1", 2, 6), got: model.OK(nil)}}
		if failed {
			s = append(s, failedSyncStep{op: del("agent-1", 7), failed: true}, failedSyncStep{restart: true})
		}
		return append(s,
			failedSyncStep{op: del("agent-0", 10), got: model.OK(nil)},
			failedSyncStep{cut: true},
			failedSyncStep{op: upsert("agent-0", "session-1", 0, 7), got: model.Fail(c.ErrStaleContinuityGeneration)})
	}
	if at := failedSyncRun(t, history(true), true); at >= 0 {
		t.Errorf("after a failed sync: step %d's answer refused, want the cut's loss allowed", at)
	}
	if at := failedSyncRun(t, history(true), false); at != 5 {
		t.Errorf("indefinite within its span only: step %d refused, want 5 (the false alarm this guards against)", at)
	}
	if at := failedSyncRun(t, history(false), true); at != 3 {
		t.Errorf("no failed sync: step %d refused, want 3 (an acknowledged delete lost)", at)
	}
}
