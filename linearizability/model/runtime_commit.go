package model

// commit_runtime_state: its checks in the seed's order and its writes.

import (
	"maps"
	"slices"
	"strings"

	"github.com/storecheck/storecheck/spec"
	r "github.com/storecheck/storecheck/spec/runtime"
)

// stepCommit answers the operations on the commit; false: op is not one of them.
func (m Runtime) stepCommit(s RuntimeState, op spec.Op, now int64) ([]Branch, bool) {
	switch o := op.(type) {
	case r.CommitRuntimeState:
		return s.commit(o.Commit, now), true
	}
	return nil, false
}

// commit is commit_runtime_state: the checks in the seed's order, then every
// write.
func (s RuntimeState) commit(cm r.RuntimeCommit, now int64) []Branch {
	invalid := cm.Graph.Kind != r.GraphUnchanged && cm.Graph.Kind != r.GraphAppend && cm.Graph.Kind != r.GraphReplaceFull
	fail := func(k spec.Kind) []Branch { return s.orInvalid(invalid, One(s, Fail(k))) }
	if s.head != nil && s.head.Session != cm.SessionID {
		return fail(r.ErrSessionBindingMismatch)
	}
	if tc := cm.TurnCommit; tc != nil {
		if tc.SessionID != cm.SessionID {
			return fail(r.ErrRuntimeTurnCommitConflict)
		}
		if t, ok := s.turns[turnKey{tc.SessionID, tc.TurnID}]; ok {
			if t.Hash != tc.TurnCommitHash {
				return fail(r.ErrRuntimeTurnCommitConflict)
			}
			if cm.ReleaseLease != nil {
				if next, ok := s.released(*cm.ReleaseLease); ok {
					return s.orInvalid(invalid, One(next.sealed(pLeases), OK(t.Res)))
				}
			}
			return s.orInvalid(invalid, One(s, OK(t.Res)))
		}
	}
	if cm.Lease == nil || !s.liveLease(cm.SessionID, *cm.Lease, now) {
		return fail(r.ErrSessionExecutionLeaseExpired)
	}
	var actual uint64
	if s.head != nil {
		actual = s.head.Rev
	}
	if e := cm.ExpectedHeadRevision; e != nil && *e != actual {
		return fail(r.ErrHeadRevisionConflict)
	}
	expiredHeld := false
	for _, c := range cm.CompletedQueueClaims {
		if c.SessionID != cm.SessionID {
			return fail(r.ErrQueuedWorkClaimExpired)
		}
		for _, id := range c.BatchIDs {
			held, isLive := s.heldBy(c.SessionID, id, c.ClaimID, c.LeaseToken, now)
			if !held {
				return fail(r.ErrQueuedWorkClaimExpired)
			}
			expiredHeld = expiredHeld || !isLive
		}
	}
	var out []Branch
	if expiredHeld {
		// A claim that expired but still holds its batches: the reference
		// refuses it; the seed's hidden helper may complete it.
		out = append(out, Branch{Outcome: Fail(r.ErrQueuedWorkClaimExpired), Next: s, Rule: ruleCompletedHeld})
	}
	if invalid {
		return append(out, Refused(s, ruleInvalidAnyPoint, r.ErrInvalidArgument)...)
	}
	written := s.written(cm, actual+1, now)
	if expiredHeld {
		for i := range written {
			if written[i].Outcome.Kind == "" {
				written[i].Rule = ruleCompletedHeld
			}
		}
	}
	return append(out, written...)
}

// written is every write of a commit whose checks passed, at revision rev:
// one branch per reading of the checkpoint's ref (the stored ref of equal
// bytes, as a content address gives, the reference's; or a new one).
func (s RuntimeState) written(cm r.RuntimeCommit, rev uint64, now int64) []Branch {
	nodes := s.nodes
	switch cm.Graph.Kind {
	case r.GraphAppend, r.GraphReplaceFull:
		if cm.Graph.Kind == r.GraphAppend {
			nodes = slices.Clip(nodes)
		} else {
			nodes = nil
		}
		for _, n := range cm.Graph.Nodes {
			if slices.ContainsFunc(nodes, func(x rtNode) bool { return x.ID == n.NodeID }) {
				return Refused(s, ruleRepeatedNode, r.ErrGraphNodeConflict, r.ErrIO)
			}
			nodes = append(nodes, rtNode{ID: n.NodeID, Parent: n.ParentID, Data: string(n.Data)})
		}
	}
	next := s
	next.nodes = nodes
	next.ledger = mergeUsage(s.ledger, cm.UsageDeltas)
	if len(cm.CompletedQueueClaims) > 0 {
		next.batches = slices.DeleteFunc(slices.Clone(s.batches), func(q rtBatch) bool {
			for _, c := range cm.CompletedQueueClaims {
				if q.holds(c.SessionID, c.ClaimID, c.LeaseToken) && slices.Contains(c.BatchIDs, q.B.BatchID) {
					return true
				}
			}
			return false
		})
	}
	cloned := false
	for _, id := range cm.CommittedAttachmentIDs {
		if a, ok := next.attachments[id]; ok && a.Session == cm.SessionID && !a.Committed {
			if !cloned {
				next.attachments, cloned = maps.Clone(s.attachments), true
			}
			a.Committed, a.CommittedAt = true, now
			next.attachments[id] = a
		}
	}
	if cm.ReleaseLease != nil {
		next, _ = next.released(*cm.ReleaseLease)
	}
	changed := []int{pHead}
	if cm.ReleaseLease != nil {
		changed = append(changed, pLeases)
	}
	if len(cm.CompletedQueueClaims) > 0 {
		changed = append(changed, pQueue)
	}
	if cloned {
		changed = append(changed, pAttachments)
	}

	data := string(cm.Checkpoint)
	var same, other [][]string
	for _, ref := range slices.Sorted(maps.Keys(s.checkpoints)) {
		if s.checkpoints[ref] == data {
			same = append(same, []string{ref})
		} else {
			other = append(other, []string{ref})
		}
	}
	fresh := next.hole("checkpoint")
	at := func(ref string) RuntimeState {
		n := next
		if _, ok := s.checkpoints[ref]; !ok {
			n.checkpoints = maps.Clone(s.checkpoints)
			if n.checkpoints == nil {
				n.checkpoints = map[string]string{}
			}
			n.checkpoints[ref] = data
		}
		res := r.CommitResult{HeadRevision: rev, CheckpointRef: ref}
		n.head = &rtHead{Session: cm.SessionID, Rev: rev, Config: string(cm.Config), Frames: string(cm.AgentFrames),
			Frame: cm.CurrentAgentFrameID, Ref: ref, Leaf: cm.Graph.LeafNodeID}
		if tc := cm.TurnCommit; tc != nil {
			n.turns = maps.Clone(s.turns)
			if n.turns == nil {
				n.turns = map[turnKey]rtTurn{}
			}
			n.turns[turnKey{tc.SessionID, tc.TurnID}] = rtTurn{Hash: tc.TurnCommitHash, Res: res}
		}
		return n.sealed(changed...)
	}
	var out []Branch
	for _, ref := range same {
		out = append(out, Branch{Outcome: OK(r.CommitResult{HeadRevision: rev, CheckpointRef: ref[0]}), Next: at(ref[0]), Rule: ruleCheckpoint})
	}
	return append(out, Branch{Outcome: OK(r.CommitResult{HeadRevision: rev, CheckpointRef: fresh}), Next: at(fresh), Rule: ruleCheckpoint,
		Distinct: []Distinct{{Holes: []string{fresh}, Taken: other}}})
}

func mergeUsage(ledger []r.UsageEntry, deltas []r.UsageEntry) []r.UsageEntry {
	if len(deltas) == 0 {
		return ledger
	}
	out := slices.Clone(ledger)
	for _, d := range deltas {
		i, found := slices.BinarySearchFunc(out, d, func(a, b r.UsageEntry) int {
			if c := strings.Compare(a.Source, b.Source); c != 0 {
				return c
			}
			return strings.Compare(a.Model, b.Model)
		})
		if !found {
			out = slices.Insert(out, i, r.UsageEntry{Source: d.Source, Model: d.Model})
		}
		u := &out[i].Usage
		u.InputTokens += d.Usage.InputTokens
		u.OutputTokens += d.Usage.OutputTokens
		u.CachedInputTokens += d.Usage.CachedInputTokens
		u.ReasoningTokens += d.Usage.ReasoningTokens
	}
	return out
}
