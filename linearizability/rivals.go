package linearizability

import (
	"math/rand/v2"
	"slices"

	"github.com/storecheck/storecheck/spec"
	cli "github.com/storecheck/storecheck/spec/client"
	c "github.com/storecheck/storecheck/spec/continuity"
	r "github.com/storecheck/storecheck/spec/runtime"
)

// A rival is an operation that contends with another on the same thing:
// the same identity under another fence, the same lease for another
// owner, the same task's verdict. When one operation waits at a yield point
// in the middle of its work (its check read, its write not yet made), the
// simulator may have another process issue a rival of it, so that a race
// between a check and a write is tried where it matters, not only when two
// random operations happen to meet. A rival is made from the operation
// value alone (references to earlier answers included), so it needs no
// workload state and replays as it was recorded.

// ContinuityRival is a continuity operation that contends with op, or nil.
func ContinuityRival(op spec.Op, rnd *rand.Rand) spec.Op {
	bump := func(f c.FencingToken) c.FencingToken {
		if rnd.IntN(2) == 0 && f > 0 {
			return f - 1
		}
		return f + 1
	}
	switch o := op.(type) {
	case c.UpsertContinuityRecord:
		rec := o.Record
		rec.AgentRuntimeID = rec.AgentRuntimeID + "-rival"
		return c.UpsertContinuityRecord{Record: rec, Fence: bump(o.Fence)}
	case c.SaveSessionSnapshot:
		w := o.Write
		w.CheckpointVersion++
		w.FencingToken = bump(w.FencingToken)
		w.Data = append(slices.Clip(w.Data), "-rival"...)
		return c.SaveSessionSnapshot{Write: w}
	case c.RollbackContinuityRecord:
		return c.UpsertContinuityRecord{Record: o.Attempt, Fence: bump(o.Fence)}
	case c.DeleteContinuityRecord:
		return c.UpsertContinuityRecord{Record: c.Record{Identity: o.Identity, AgentRuntimeID: "rt-rival", SessionID: "session-0"},
			Fence: bump(o.Fence)}
	case c.DeleteSessionSnapshotIfCurrentRevision:
		return o
	}
	return nil
}

// RuntimeRival is a runtime operation that contends with op, or nil.
func RuntimeRival(op spec.Op, rnd *rand.Rand) spec.Op {
	switch o := op.(type) {
	case r.TryClaimSessionExecutionLease:
		o.OwnerID = o.OwnerID + "-rival"
		return o
	case r.RenewSessionExecutionLease:
		return r.TryClaimSessionExecutionLease{SessionID: o.Fence.SessionID, OwnerID: o.Fence.OwnerID + "-rival", TTLMs: o.TTLMs}
	case r.ReleaseSessionExecutionLease:
		return r.TryClaimSessionExecutionLease{SessionID: o.Completion.SessionID, OwnerID: o.Completion.OwnerID + "-rival", TTLMs: 1_000}
	case r.CommitRuntimeState:
		// A second commit from the same base under the same lease: at most
		// one of the two may move the head.
		cm := o.Commit
		if cm.TurnCommit != nil {
			tc := *cm.TurnCommit
			tc.TurnID += "-rival"
			tc.TurnCommitHash += "-rival"
			cm.TurnCommit = &tc
		}
		cm.Checkpoint = append(slices.Clip(cm.Checkpoint), "-rival"...)
		return r.CommitRuntimeState{Commit: cm}
	case r.ClaimReadyQueuedWork:
		o.OwnerID = o.OwnerID + "-rival"
		return o
	case r.CancelQueuedWorkBatch, r.EnqueueQueuedWork, r.AbandonQueuedWorkClaim, r.RenewQueuedWorkClaim:
		return op
	}
	return nil
}

// ClientRival is a client operation that contends with op, or nil.
func ClientRival(op spec.Op, rnd *rand.Rand) spec.Op {
	switch o := op.(type) {
	case cli.SettleTask:
		for _, v := range cli.TerminalTaskStates {
			if v != o.State {
				return cli.SettleTask{TaskID: o.TaskID, State: v}
			}
		}
	case cli.EnqueueIntent:
		return cli.EnqueueIntent{OpID: o.OpID, Envelope: spec.RawJSON(`{"rival":true}`)}
	case cli.AcceptIntent:
		return cli.BumpIntent{OpID: o.OpID, NextAttemptAt: Epoch, LastError: "rival"}
	case cli.BumpIntent, cli.DeferIntent:
		return cli.AcceptIntent{OpID: intentOf(op), Receipt: spec.RawJSON(`{"rival":true}`)}
	case cli.ExhaustIntent:
		return cli.AcceptIntent{OpID: o.OpID, Receipt: spec.RawJSON(`{"rival":true}`)}
	case cli.UpsertSession:
		v := o.Version
		v.Seq++
		v.AgentState += "-rival"
		return cli.UpsertSession{TaskID: o.TaskID, Version: v}
	case cli.BumpSessionVersion:
		return cli.BumpSessionVersion{TaskID: o.TaskID, Generation: o.Generation, Seq: o.Seq + uint64(1+rnd.IntN(2))}
	case cli.OpenTask:
		return cli.SettleTask{TaskID: o.Causality.Task, State: cli.TaskCompleted}
	case cli.BindTask:
		return cli.BindTask{SessionID: o.SessionID + "-rival", TaskID: o.TaskID}
	}
	return nil
}

func intentOf(op spec.Op) string {
	switch o := op.(type) {
	case cli.BumpIntent:
		return o.OpID
	case cli.DeferIntent:
		return o.OpID
	}
	return ""
}
