package model

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/storecheck/storecheck/spec"
	c "github.com/storecheck/storecheck/spec/continuity"
)

// Continuity is the continuity contract (spec/continuity) as a model.
type Continuity struct {
	// OpaqueRevision is a backend that computes snapshot revisions its own
	// way (capability snapshot_revision "opaque"): the model cannot tell a
	// current revision from another, so delete_session_snapshot_if_current_revision
	// may answer false, io, or true and delete (see the rule
	// continuity.delete_session_snapshot_if_current_revision.revision).
	OpaqueRevision bool
	// AtomicReads is a backend that reads resolve_many in one transaction
	// (capability atomic_reads): it is judged as one read.
	AtomicReads bool
}

type crec struct {
	c.Record
	Fence c.FencingToken
}

type csnap struct {
	Identity   c.Identity
	Generation c.Generation
	Version    c.CheckpointVersion
	Fence      c.FencingToken
	Data       string
}

// ContinuityState is the records and snapshots of a continuity store.
type ContinuityState struct {
	records map[c.Identity]crec
	snaps   map[c.SessionID]csnap
	// h is the XOR of every entry's hash, kept up as each state is made
	// from the one before: porcupine asks for it at every step it caches
	// and every state set compares by it, so it is never recomputed.
	h uint64
}

func (Continuity) Contract() spec.Contract { return c.Contract }

// Configure reads the backend's snapshot revision (capability
// snapshot_revision).
func (m Continuity) Configure(caps spec.Capabilities) Model {
	m.OpaqueRevision = caps.SnapshotRevision == "opaque"
	m.AtomicReads = caps.AtomicReads
	return m
}

func (Continuity) Init() State { return ContinuityState{} }

func (s ContinuityState) Equal(o State) bool {
	t, ok := o.(ContinuityState)
	return ok && s.h == t.h && maps.Equal(s.records, t.records) && maps.Equal(s.snaps, t.snaps)
}

// Hash combines per-entry hashes with XOR, so map order does not matter.
func (s ContinuityState) Hash() uint64 { return s.h }

func recordHash(id c.Identity, r crec) uint64 {
	return fnvOf("r").text(string(id)).text(string(r.AgentRuntimeID)).text(string(r.SessionID)).
		num(uint64(r.Generation)).num(uint64(r.CheckpointVersion)).num(uint64(r.Fence)).sum()
}

func snapHash(sess c.SessionID, sn csnap) uint64 {
	return fnvOf("s").text(string(sess)).text(string(sn.Identity)).
		num(uint64(sn.Generation)).num(uint64(sn.Version)).num(uint64(sn.Fence)).text(sn.Data).sum()
}

// fnvHash is FNV-1a over fields, each ended so that no two field lists
// write the same bytes; without fmt, which cost four fifths of a check.
type fnvHash struct{ h uint64 }

func fnvOf(domain string) fnvHash { return fnvHash{14695981039346656037}.text(domain) }

func (f fnvHash) sum() uint64 { return f.h }

func (f fnvHash) byte(b byte) fnvHash {
	f.h = (f.h ^ uint64(b)) * 1099511628211
	return f
}

func (f fnvHash) text(s string) fnvHash {
	f = f.num(uint64(len(s)))
	for i := 0; i < len(s); i++ {
		f = f.byte(s[i])
	}
	return f
}

func (f fnvHash) num(v uint64) fnvHash {
	for range 8 {
		f = f.byte(byte(v))
		v >>= 8
	}
	return f
}

func (s ContinuityState) String() string {
	var b strings.Builder
	for _, id := range slices.Sorted(maps.Keys(s.records)) {
		r := s.records[id]
		fmt.Fprintf(&b, "record %s: runtime %s session %s gen %d version %d fence %d\n",
			id, r.AgentRuntimeID, r.SessionID, r.Generation, r.CheckpointVersion, r.Fence)
	}
	for _, sess := range slices.Sorted(maps.Keys(s.snaps)) {
		sn := s.snaps[sess]
		fmt.Fprintf(&b, "snapshot %s: %s gen %d version %d fence %d data %q\n",
			sess, sn.Identity, sn.Generation, sn.Version, sn.Fence, sn.Data)
	}
	if b.Len() == 0 {
		return "empty"
	}
	return b.String()
}

func (s ContinuityState) withRecord(id c.Identity, r *crec) ContinuityState {
	next := ContinuityState{records: maps.Clone(s.records), snaps: s.snaps, h: s.h}
	if next.records == nil {
		next.records = map[c.Identity]crec{}
	}
	if old, ok := next.records[id]; ok {
		next.h ^= recordHash(id, old)
	}
	if r == nil {
		delete(next.records, id)
	} else {
		next.records[id] = *r
		next.h ^= recordHash(id, *r)
	}
	return next
}

func (s ContinuityState) withSnapshots(keep func(c.SessionID, csnap) bool, put map[c.SessionID]csnap) ContinuityState {
	next := ContinuityState{records: s.records, snaps: map[c.SessionID]csnap{}, h: s.h}
	for k, v := range s.snaps {
		if keep == nil || keep(k, v) {
			next.snaps[k] = v
		} else {
			next.h ^= snapHash(k, v)
		}
	}
	for k, v := range put {
		if old, ok := next.snaps[k]; ok {
			next.h ^= snapHash(k, old)
		}
		next.snaps[k] = v
		next.h ^= snapHash(k, v)
	}
	return next
}

func (Continuity) Keys(op spec.Op) []string {
	id := func(i c.Identity) string { return "identity:" + string(i) }
	sess := func(s c.SessionID) string { return "session:" + string(s) }
	switch o := op.(type) {
	case c.UpsertContinuityRecord:
		return []string{id(o.Record.Identity)}
	case c.SaveSessionSnapshot:
		return []string{id(o.Write.Identity), sess(o.Write.SessionID)}
	case c.LoadSessionSnapshot:
		return []string{sess(o.SessionID)}
	case c.SessionSnapshotMatchesCurrent:
		return []string{id(o.Candidate.Identity), sess(o.Candidate.SessionID)}
	case c.DeleteSessionSnapshotIfCurrentRevision:
		return []string{sess(o.SessionID)}
	case c.RollbackContinuityRecord:
		keys := []string{id(o.Attempt.Identity)}
		if o.Previous != nil {
			keys = append(keys, id(o.Previous.Identity))
		}
		return keys
	case c.DeleteContinuityRecord:
		return []string{id(o.Identity)}
	case c.ResolveMany:
		keys := make([]string, len(o.Identities))
		for i, x := range o.Identities {
			keys[i] = id(x)
		}
		return keys
	}
	return nil // max_fencing_token reads everything
}

func (m Continuity) Step(st State, op spec.Op, _ int64) []Branch {
	s := st.(ContinuityState)
	switch o := op.(type) {
	case c.UpsertContinuityRecord:
		r := o.Record
		cur, ok := s.records[r.Identity]
		version := r.CheckpointVersion
		if ok {
			if o.Fence < cur.Fence {
				return Refused(s, "continuity.upsert_continuity_record.fence_not_lower", c.ErrStaleFencingToken)
			}
			if r.Generation < cur.Generation {
				return Refused(s, "continuity.upsert_continuity_record.generation_not_lower", c.ErrStaleContinuityGeneration)
			}
			if r.Generation == cur.Generation && cur.CheckpointVersion > version {
				version = cur.CheckpointVersion
			}
		}
		r.CheckpointVersion = version
		return One(s.withRecord(r.Identity, &crec{Record: r, Fence: o.Fence}), OK(nil))

	case c.SaveSessionSnapshot:
		w := o.Write
		cur, hasRecord := s.records[w.Identity]
		if hasRecord {
			switch {
			case cur.SessionID != w.SessionID || cur.Generation != w.Generation:
				return Refused(s, "continuity.save_session_snapshot.record_must_match", c.ErrNotFound)
			case w.FencingToken < cur.Fence:
				return Refused(s, "continuity.save_session_snapshot.fence_not_lower", c.ErrStaleFencingToken)
			case w.CheckpointVersion <= cur.CheckpointVersion:
				return Refused(s, "continuity.save_session_snapshot.version_must_advance", c.ErrStaleCheckpointVersion)
			}
		}
		if sn, ok := s.snaps[w.SessionID]; ok && (sn.Identity != w.Identity || sn.Generation != w.Generation) {
			return Refused(s, "continuity.save_session_snapshot.snapshot_owner", c.ErrCorruption)
		}
		next := s.withSnapshots(nil, map[c.SessionID]csnap{w.SessionID: {
			Identity: w.Identity, Generation: w.Generation, Version: w.CheckpointVersion, Fence: w.FencingToken, Data: string(w.Data)}})
		if hasRecord {
			cur.CheckpointVersion, cur.Fence = w.CheckpointVersion, w.FencingToken
			next = next.withRecord(w.Identity, &cur)
		}
		return One(next, OK(nil))

	case c.LoadSessionSnapshot:
		if sn, ok := s.snaps[o.SessionID]; ok {
			return One(s, OK(&c.Snapshot{Data: []byte(sn.Data)}))
		}
		return One(s, OK((*c.Snapshot)(nil)))

	case c.ResolveMany:
		out := map[c.Identity]c.Resolution{}
		for _, id := range o.Identities {
			if r, ok := s.records[id]; ok {
				rec := r.Record
				out[id] = c.Resolution{State: c.Ready, Record: &rec}
			} else {
				out[id] = c.Resolution{State: c.Uninitialized}
			}
		}
		return One(s, OK(out))

	case c.SessionSnapshotMatchesCurrent:
		m := o.Candidate
		sn, ok1 := s.snaps[m.SessionID]
		r, ok2 := s.records[m.Identity]
		match := ok1 && ok2 &&
			sn.Identity == m.Identity && sn.Generation == m.Generation && sn.Version == m.CheckpointVersion && sn.Data == string(m.Data) &&
			r.SessionID == m.SessionID && r.Generation == m.Generation && r.CheckpointVersion == m.CheckpointVersion &&
			r.Fence == m.FencingToken && sn.Fence <= m.FencingToken
		return One(s, OK(match))

	case c.DeleteSessionSnapshotIfCurrentRevision:
		sn, ok := s.snaps[o.SessionID]
		if !ok {
			return One(s, OK(false))
		}
		deleted := s.withSnapshots(func(k c.SessionID, _ csnap) bool { return k != o.SessionID }, nil)
		if m.OpaqueRevision {
			const rule = "continuity.delete_session_snapshot_if_current_revision.revision"
			return []Branch{
				{Outcome: OK(false), Next: s, Rule: rule},
				{Outcome: Fail(c.ErrIO), Next: s, Rule: rule},
				{Outcome: OK(true), Next: deleted, Rule: rule},
			}
		}
		if c.SnapshotRevision([]byte(sn.Data)) != o.ExpectedRevision {
			return []Branch{{Outcome: OK(false), Next: s, Rule: "continuity.delete_session_snapshot_if_current_revision.other_revision_keeps"}}
		}
		return []Branch{{Outcome: OK(true), Next: deleted, Rule: "continuity.delete_session_snapshot_if_current_revision.revision"}}

	case c.RollbackContinuityRecord:
		a := o.Attempt
		if o.Previous != nil && o.Previous.Identity != a.Identity {
			return Refused(s, "continuity.rollback_continuity_record.previous_same_identity", c.ErrCorruption)
		}
		cur, ok := s.records[a.Identity]
		switch {
		case !ok:
			return Refused(s, "continuity.rollback_continuity_record.record_required", c.ErrNotFound)
		case cur.Fence != o.Fence:
			return Refused(s, "continuity.rollback_continuity_record.fence_exact", c.ErrStaleFencingToken)
		case cur.AgentRuntimeID != a.AgentRuntimeID || cur.SessionID != a.SessionID || cur.Generation != a.Generation:
			return Refused(s, "continuity.rollback_continuity_record.attempt_current", c.ErrStaleContinuityGeneration)
		}
		next := s.withSnapshots(func(_ c.SessionID, sn csnap) bool {
			return sn.Identity != a.Identity || sn.Generation != a.Generation
		}, nil)
		if o.Previous == nil {
			return One(next.withRecord(a.Identity, nil), OK(nil))
		}
		return One(next.withRecord(a.Identity, &crec{Record: *o.Previous, Fence: o.Fence}), OK(nil))

	case c.DeleteContinuityRecord:
		if cur, ok := s.records[o.Identity]; ok && o.Fence < cur.Fence {
			return Refused(s, "continuity.delete_continuity_record.fence_not_lower", c.ErrStaleFencingToken)
		}
		next := s.withSnapshots(func(_ c.SessionID, sn csnap) bool { return sn.Identity != o.Identity }, nil)
		return One(next.withRecord(o.Identity, nil), OK(nil))

	case c.MaxFencingToken:
		var max c.FencingToken
		for _, r := range s.records {
			max = maxOf(max, r.Fence)
		}
		for _, sn := range s.snaps {
			max = maxOf(max, sn.Fence)
		}
		return One(s, OK(max))
	}
	return One(s, Fail(spec.Kind("unknown_operation")))
}

// Parts cuts a resolve_many of several identities into one read per
// identity: the seed reads them one statement at a time, outside any
// transaction (continuity.resolve_many.one_read_per_identity), unless the
// backend reads atomically.
func (m Continuity) Parts(op spec.Op) []spec.Op {
	o, ok := op.(c.ResolveMany)
	if !ok || m.AtomicReads {
		return nil
	}
	// A set, not a scan: a big draw asks for tens of thousands.
	ids := distinct(o.Identities)
	if len(ids) < 2 {
		return nil
	}
	parts := make([]spec.Op, len(ids))
	for i, id := range ids {
		parts[i] = c.ResolveMany{Identities: []c.Identity{id}}
	}
	return parts
}

// Split is Parts with each identity's answer.
func (m Continuity) Split(op spec.Op, got Outcome) ([]spec.Op, []Outcome, bool) {
	parts := m.Parts(op)
	answer, isMap := got.Result.(map[c.Identity]c.Resolution)
	if parts == nil || got.Kind != "" || !isMap || len(answer) != len(parts) {
		return nil, nil, false
	}
	outs := make([]Outcome, len(parts))
	for i, p := range parts {
		id := p.(c.ResolveMany).Identities[0]
		r, found := answer[id]
		if !found {
			return nil, nil, false
		}
		outs[i] = OK(map[c.Identity]c.Resolution{id: r})
	}
	return parts, outs, true
}

func maxOf(a, b c.FencingToken) c.FencingToken {
	if a > b {
		return a
	}
	return b
}

// The continuity store's rare events.
const (
	EventStaleFenceRefused           = "stale fence refused"
	EventGenerationRegressionRefused = "generation regression refused despite a newer fence"
	EventRebindKeptCheckpoint        = "session rebind kept the checkpoint head"
	EventSnapshotOwnedElsewhere      = "snapshot owned by another identity or generation"
	EventRollbackRestored            = "rollback restored the previous record"
	EventRollbackDeletedFirstAttempt = "rollback deleted a first attempt"
	EventRollbackRefusedNewer        = "rollback refused to clobber a newer attempt"
	EventSnapshotDeletedAtRevision   = "snapshot deleted at its revision"
)

// ContinuityEvents is every event Events names, in a fixed order.
var ContinuityEvents = []string{EventStaleFenceRefused, EventGenerationRegressionRefused, EventRebindKeptCheckpoint, EventSnapshotOwnedElsewhere, EventRollbackRestored, EventRollbackDeletedFirstAttempt, EventRollbackRefusedNewer, EventSnapshotDeletedAtRevision}

// Events names the rare continuity events op reaches from s: the rules the
// seed's comments were written about, taken on their interesting branch.
func (m Continuity) Events(st State, op spec.Op, nowMS int64, out Outcome) []string {
	s := st.(ContinuityState)
	var ev []string
	switch o := op.(type) {
	case c.UpsertContinuityRecord:
		cur, ok := s.records[o.Record.Identity]
		switch {
		case out.Kind == c.ErrStaleFencingToken:
			ev = append(ev, EventStaleFenceRefused)
		case out.Kind == c.ErrStaleContinuityGeneration:
			ev = append(ev, EventGenerationRegressionRefused)
		case ok && out.Kind == "" && cur.Generation == o.Record.Generation && cur.SessionID != o.Record.SessionID &&
			cur.CheckpointVersion > o.Record.CheckpointVersion:
			ev = append(ev, EventRebindKeptCheckpoint)
		}
	case c.SaveSessionSnapshot:
		switch out.Kind {
		case c.ErrCorruption:
			ev = append(ev, EventSnapshotOwnedElsewhere)
		case c.ErrStaleFencingToken:
			ev = append(ev, EventStaleFenceRefused)
		}
	case c.RollbackContinuityRecord:
		switch {
		case out.Kind == "" && o.Previous != nil:
			ev = append(ev, EventRollbackRestored)
		case out.Kind == "":
			ev = append(ev, EventRollbackDeletedFirstAttempt)
		case out.Kind == c.ErrStaleFencingToken:
			ev = append(ev, EventRollbackRefusedNewer)
		}
	case c.DeleteContinuityRecord:
		if out.Kind == c.ErrStaleFencingToken {
			ev = append(ev, EventStaleFenceRefused)
		}
	case c.DeleteSessionSnapshotIfCurrentRevision:
		if out.Result == true {
			ev = append(ev, EventSnapshotDeletedAtRevision)
		}
	}
	return append(ev, continuitySizes(op, out)...)
}
