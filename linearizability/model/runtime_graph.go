package model

// Reading, tombstoning and collecting the committed graph and checkpoints.

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/storecheck/storecheck/spec"
	r "github.com/storecheck/storecheck/spec/runtime"
)

// stepGraph answers the operations on the graph and checkpoints; false: op is not one of them.
func (m Runtime) stepGraph(s RuntimeState, op spec.Op, now int64) ([]Branch, bool) {
	switch o := op.(type) {
	case r.LoadSession:
		h := s.head
		if h == nil {
			return One(s, OK((*r.SessionRead)(nil))), true
		}
		read := func(nodes []r.Node, leaf string) *r.SessionRead {
			return &r.SessionRead{SessionID: h.Session, HeadRevision: h.Rev, Config: rawOut(h.Config), AgentFrames: rawOut(h.Frames),
				CurrentAgentFrameID: h.Frame, CheckpointRef: h.Ref, Graph: r.Graph{Nodes: nodes, LeafNodeID: leaf},
				Checkpoint: []byte(s.checkpoints[h.Ref]), TokenLedger: slices.Clone(s.ledger)}
		}
		if !o.Scope.ActivePath {
			return []Branch{unordered(s, read(liveNodes(s.nodes), h.Leaf), ruleFullGraph)}, true
		}
		leaf := h.Leaf
		if o.Scope.LeafNodeID != "" {
			leaf = o.Scope.LeafNodeID
		}
		stop, pass := activePath(s.nodes, leaf, false), activePath(s.nodes, leaf, true)
		out := []Branch{unordered(s, read(stop, leaf), ruleActivePath)}
		if len(pass) != len(stop) {
			out = append(out, unordered(s, read(pass, leaf), ruleActivePath))
		}
		return out, true

	case r.LoadNode:
		return One(s, OK(liveNode(s.nodes, o.NodeID))), true

	case r.TombstoneNodes:
		nodes := slices.Clone(s.nodes)
		changed := false
		for i := range nodes {
			if !nodes[i].Tomb && slices.Contains(o.IDs, nodes[i].ID) {
				nodes[i].Tomb, changed = true, true
			}
		}
		if !changed {
			return One(s, OK(nil)), true
		}
		s.nodes = nodes
		return One(s.sealed(pHead), OK(nil)), true

	case r.Vacuum:
		kept := slices.DeleteFunc(slices.Clone(s.nodes), func(n rtNode) bool { return n.Tomb })
		removed := len(s.nodes) - len(kept)
		if removed == 0 {
			return One(s, OK(r.VacuumReport{})), true
		}
		s.nodes = kept
		return One(s.sealed(pHead), OK(r.VacuumReport{RemovedNodeCount: removed})), true

	case r.GcUnreachable:
		return s.collect(), true
	}
	return nil, false
}

func liveNodes(nodes []rtNode) []r.Node {
	out := []r.Node{}
	for _, n := range nodes {
		if !n.Tomb {
			out = append(out, r.Node{NodeID: n.ID, ParentID: n.Parent, Data: rawOut(n.Data)})
		}
	}
	return out
}

func storedNode(nodes []rtNode, id string) *rtNode {
	for i := range nodes {
		if nodes[i].ID == id {
			return &nodes[i]
		}
	}
	return nil
}

func liveNode(nodes []rtNode, id string) *r.Node {
	n := storedNode(nodes, id)
	if n == nil || n.Tomb {
		return nil
	}
	return &r.Node{NodeID: n.ID, ParentID: n.Parent, Data: rawOut(n.Data)}
}

// activePath is the leaf and its ancestors by parent link, root first. A
// node that is not stored ends the walk; a tombstoned one ends it too, or,
// with passOver, is left out and the walk goes on to its parent (the two
// readings of runtime.load_session.active_path).
func activePath(nodes []rtNode, leaf string, passOver bool) []r.Node {
	path := []r.Node{}
	seen := map[string]bool{}
	for id := leaf; id != "" && !seen[id]; {
		seen[id] = true
		n := storedNode(nodes, id)
		if n == nil || n.Tomb && !passOver {
			break
		}
		if !n.Tomb {
			path = append(path, r.Node{NodeID: n.ID, ParentID: n.Parent, Data: rawOut(n.Data)})
		}
		id = n.Parent
	}
	slices.Reverse(path)
	return path
}

// unordered is the branch of a load_session answer whose graph nodes and
// token ledger may come in any order (the seed's loaders are not shown).
func unordered(next State, read *r.SessionRead, rule string) Branch {
	want := Branch{Outcome: OK(sortedRead(read)), Next: next}
	return Branch{Outcome: OK(read), Next: next, Rule: rule, Match: func(got Outcome) (map[string]string, bool) {
		g, ok := got.Result.(*r.SessionRead)
		if got.Kind != "" || !ok {
			return nil, false
		}
		return want.Allows(OK(sortedRead(g)))
	}}
}

// sortedRead is read with its nodes and ledger in one order.
func sortedRead(read *r.SessionRead) *r.SessionRead {
	if read == nil {
		return nil
	}
	c := *read
	c.Graph.Nodes = slices.SortedFunc(slices.Values(c.Graph.Nodes), func(a, b r.Node) int { return strings.Compare(a.NodeID, b.NodeID) })
	c.TokenLedger = slices.SortedFunc(slices.Values(c.TokenLedger), func(a, b r.UsageEntry) int {
		return cmp.Or(strings.Compare(a.Source, b.Source), strings.Compare(a.Model, b.Model))
	})
	return &c
}

// collect is gc_unreachable: every stored checkpoint but the head's goes;
// the count is at most how many there were (fewer when an automatic
// collection or a reading of reachability kept some from it).
func (s RuntimeState) collect() []Branch {
	keep := ""
	if s.head != nil {
		keep = s.head.Ref
	}
	removed := 0
	next := map[string]string{}
	for ref, data := range s.checkpoints {
		if ref == keep {
			next[ref] = data
		} else {
			removed++
		}
	}
	if removed == 0 {
		return One(s, OK(r.GcReport{}))
	}
	s.checkpoints = next
	n := s.sealed(pHead)
	return []Branch{
		{Outcome: OK(r.GcReport{RemovedCheckpointCount: removed}), Next: n},
		{Outcome: OK(fmt.Sprintf("a removed_checkpoint_count from 0 to %d", removed)), Next: n, Rule: ruleGC,
			Match: func(got Outcome) (map[string]string, bool) {
				rep, ok := got.Result.(r.GcReport)
				return nil, ok && got.Kind == "" && rep.RemovedCheckpointCount >= 0 && rep.RemovedCheckpointCount <= removed
			}},
	}
}
