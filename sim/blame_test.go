package sim

import (
	"slices"
	"strings"
	"testing"

	"github.com/storecheck/storecheck/linearizability/model"
	"github.com/storecheck/storecheck/spec"
	c "github.com/storecheck/storecheck/spec/continuity"
)

// A failure after a crash at a crash point names the operation the crash
// left half applied and its steps; after a power cut, the acknowledged
// writes of what the failing operation reads that the cut may have lost;
// with neither, or when neither touched what it reads, it says nothing.
func TestCrashNoteNamesTheHalfAppliedOperationAndTheLostWrites(t *testing.T) {
	up := func(id c.Identity) spec.Op {
		return c.UpsertContinuityRecord{Record: c.Record{Identity: id, AgentRuntimeID: "rt", SessionID: "s", Generation: 1}, Fence: 1}
	}
	read := c.ResolveMany{Identities: []c.Identity{"a"}}
	e := &engine{subj: Subject{Model: model.Continuity{}}, cutAt: -1}
	e.settledOps = []settled{
		{step: 3, client: 1, op: up("a"), acked: true, wrote: true, answeredAt: 4},
		{step: 5, client: 2, op: up("b"), acked: true, wrote: true, answeredAt: 6},
	}
	if note := e.crashNote(read); note != "" {
		t.Fatalf("no crash, no cut: %q", note)
	}
	e.settledOps = append(e.settledOps, settled{step: 7, client: 3, op: up("b"), crashedAt: "upsert/before_commit", answeredAt: 8})
	if note := e.crashNote(read); note != "" {
		t.Fatalf("a crash of an operation on another identity: %q", note)
	}
	e.settledOps = append(e.settledOps, settled{step: 9, client: 4, op: up("a"), crashedAt: "upsert/before_commit", answeredAt: 10})
	note := e.crashNote(read)
	if !strings.Contains(note, "the crash at step 10 inside client 4's upsert_continuity_record") || !strings.Contains(note, "sent at step 9, crash point upsert/before_commit") {
		t.Errorf("the half-applied operation is not named: %q", note)
	}
	e.cutAt = 11
	note = e.crashNote(read)
	if !strings.Contains(note, "the power cut at step 11 lost an acknowledged write") || !strings.Contains(note, "step 3 client 1's upsert_continuity_record") ||
		strings.Contains(note, "client 2's") {
		t.Errorf("the lost write is not named alone: %q", note)
	}
	// Writes before the cut are suspects of the cut, not of their rules.
	if w := e.writers(read); len(w) != 0 {
		t.Errorf("writers after the cut: %v, want none", w)
	}
	e.cutAt = -1
	if w := e.writers(read); len(w) != 1 || w[0].Name() != "upsert_continuity_record" {
		t.Errorf("writers with no cut: %v, want client 1's upsert", w)
	}
}

// A failing read after a crash inside a write it touches blames, beside
// its own rules, the rule that makes the write one transaction; with no
// such crash, or a crash inside a write on another identity, it does not.
func TestAFailureAfterACrashBlamesTheHalfAppliedWrite(t *testing.T) {
	rec := c.Record{Identity: "a", AgentRuntimeID: "rt", SessionID: "s", Generation: 1, CheckpointVersion: 3}
	want := rec
	want.CheckpointVersion = 4
	read := c.ResolveMany{Identities: []c.Identity{"a"}}
	got := model.OK(map[c.Identity]c.Resolution{"a": {State: c.Ready, Record: &rec}})
	allowed := []model.Branch{{Outcome: model.OK(map[c.Identity]c.Resolution{"a": {State: c.Ready, Record: &want}})}}
	save := func(id c.Identity) spec.Op {
		return c.SaveSessionSnapshot{Write: c.SnapshotWrite{Identity: id, SessionID: "s", Generation: 1, CheckpointVersion: 4, FencingToken: 1}}
	}
	const atomic = "continuity.save_session_snapshot.saves_and_advances"
	e := &engine{subj: Subject{Model: model.Continuity{}}, cutAt: -1}
	if b := e.blame(read, got, allowed, nil); slices.Contains(b.Rules, atomic) {
		t.Errorf("no crash, yet the save is blamed: %v", b.Rules)
	}
	e.settledOps = []settled{{step: 1, client: 2, op: save("b"), crashedAt: "save_session_snapshot/snapshot_written", answeredAt: 2}}
	if b := e.blame(read, got, allowed, nil); slices.Contains(b.Rules, atomic) {
		t.Errorf("a crash inside a save of another identity is blamed: %v", b.Rules)
	}
	e.settledOps = append(e.settledOps, settled{step: 3, client: 1, op: save("a"), crashedAt: "save_session_snapshot/snapshot_written", answeredAt: 4})
	if b := e.blame(read, got, allowed, nil); !slices.Contains(b.Rules, atomic) || !strings.Contains(b.Why, "half applied") {
		t.Errorf("the half-applied save is not blamed: %v (%s)", b.Rules, b.Why)
	}
}
