package model

import (
	"bytes"
	"cmp"
	"slices"
	"strings"

	"github.com/storecheck/storecheck/spec"
	r "github.com/storecheck/storecheck/spec/runtime"
)

// The runtime reads the seed runs as several statements through
// self.conn.call, outside any transaction: each statement may see another
// moment of the store, each at or after the one before it.
//
//   - load_session (runtime.load_session.statements): the head, then the
//     graph (from the head's leaf, or the scope's), then the head's
//     checkpoint by its ref, then the usage deltas;
//   - list_queued_work and list_pending_queued_work
//     (runtime.list_queued_work.statements): the batch rows, then each
//     row's items (queued_work_batch_from_conn(conn, row)). Items never
//     change while their batch is stored, so the only thing a later moment
//     can show is a batch gone (completed by a commit, cancelled) before
//     its items were read: a batch with no items. The rows part lets any
//     batch answer no items; the items part, at a later moment, holds every
//     batch answered so to being gone, or to having had none.
//
// A backend that declares atomic_reads (AtomicReads) is judged by one step.

// runtimePart is a part of a runtime read: a step of its own, and the keys
// of the whole read.
type runtimePart interface {
	spec.Op
	step(s RuntimeState, now int64) []Branch
	keys() []string
}

// The parts of load_session, in the seed's order.
type (
	sessionHead       struct{ Scope r.ReadScope }
	sessionGraph      struct{ Scope r.ReadScope }
	sessionCheckpoint struct{}
	sessionLedger     struct{}
)

// The parts of list_queued_work and list_pending_queued_work.
type (
	queueRows  struct{ List spec.Op }
	queueItems struct{ List spec.Op }
)

// graphPart is what load_session's graph statement answered: the nodes
// (sorted by id), read from the leaf the head statement chose.
type graphPart struct {
	Leaf  string
	Nodes []r.Node
}

// checkpointPart is what the checkpoint statement answered for the ref the
// head statement read.
type checkpointPart struct {
	Ref  string
	Data []byte
}

// itemlessBatches are the ids of the batches a list answered with no items.
type itemlessBatches []string

func (sessionHead) Name() string       { return "load_session/head" }
func (sessionGraph) Name() string      { return "load_session/graph" }
func (sessionCheckpoint) Name() string { return "load_session/checkpoint" }
func (sessionLedger) Name() string     { return "load_session/token_ledger" }
func (q queueRows) Name() string       { return q.List.Name() + "/rows" }
func (q queueItems) Name() string      { return q.List.Name() + "/items" }
func (sessionHead) Result() any        { return nil }
func (sessionGraph) Result() any       { return nil }
func (sessionCheckpoint) Result() any  { return nil }
func (sessionLedger) Result() any      { return nil }
func (queueRows) Result() any          { return nil }
func (queueItems) Result() any         { return nil }
func (sessionHead) keys() []string     { return []string{"head"} }
func (sessionGraph) keys() []string    { return []string{"head"} }
func (sessionCheckpoint) keys() []string {
	return []string{"head"}
}
func (sessionLedger) keys() []string { return []string{"head"} }
func (queueRows) keys() []string     { return []string{"queue"} }
func (queueItems) keys() []string    { return []string{"queue"} }

// Configure reads whether the backend reads atomically (capability
// atomic_reads).
func (m Runtime) Configure(caps spec.Capabilities) Model {
	m.AtomicReads = caps.AtomicReads
	return m
}

// Parts cuts load_session and the two queue lists into the statements the
// seed runs them as, unless the backend reads atomically.
func (m Runtime) Parts(op spec.Op) []spec.Op {
	if m.AtomicReads {
		return nil
	}
	switch o := op.(type) {
	case r.LoadSession:
		return []spec.Op{sessionHead{o.Scope}, sessionGraph{o.Scope}, sessionCheckpoint{}, sessionLedger{}}
	case r.ListQueuedWork, r.ListPendingQueuedWork:
		return []spec.Op{queueRows{op}, queueItems{op}}
	}
	return nil
}

// Split cuts a load_session that found a head into what each statement
// answered, and a list that answered a batch with no items into its rows
// and items. Anything else is one step: no head is one read; a list whose
// every batch has its items is what its rows' moment held, since items
// never change while their batch is stored.
func (m Runtime) Split(op spec.Op, got Outcome) ([]spec.Op, []Outcome, bool) {
	parts := m.Parts(op)
	if parts == nil || got.Kind != "" {
		return nil, nil, false
	}
	switch res := got.Result.(type) {
	case *r.SessionRead:
		if _, ok := op.(r.LoadSession); !ok || res == nil {
			return nil, nil, false
		}
		head := *res
		head.Graph, head.Checkpoint, head.TokenLedger = r.Graph{LeafNodeID: res.Graph.LeafNodeID}, nil, nil
		return parts, []Outcome{OK(&head), OK(graphPart{res.Graph.LeafNodeID, sortedNodes(res.Graph.Nodes)}),
			OK(checkpointPart{res.CheckpointRef, res.Checkpoint}), OK(sortedLedger(res.TokenLedger))}, true
	case []r.QueuedWorkBatch:
		var itemless itemlessBatches
		for _, b := range res {
			if len(b.Items) == 0 {
				itemless = append(itemless, b.BatchID)
			}
		}
		if itemless == nil {
			return nil, nil, false
		}
		return parts, []Outcome{got, OK(itemless)}, true
	}
	return nil, nil, false
}

// ruleSessionStatements and ruleListStatements are the rules that let a
// read's statements see successive moments.
const (
	ruleSessionStatements = "runtime.load_session.statements"
	ruleListStatements    = "runtime.list_queued_work.statements"
)

func (p sessionHead) step(s RuntimeState, _ int64) []Branch {
	h := s.head
	if h == nil {
		return []Branch{{Outcome: OK((*r.SessionRead)(nil)), Next: s, Rule: ruleSessionStatements}}
	}
	leaf := h.Leaf
	if p.Scope.ActivePath && p.Scope.LeafNodeID != "" {
		leaf = p.Scope.LeafNodeID
	}
	return []Branch{{Outcome: OK(&r.SessionRead{SessionID: h.Session, HeadRevision: h.Rev, Config: rawOut(h.Config),
		AgentFrames: rawOut(h.Frames), CurrentAgentFrameID: h.Frame, CheckpointRef: h.Ref, Graph: r.Graph{LeafNodeID: leaf}}),
		Next: s, Rule: ruleSessionStatements}}
}

// step reads the graph from the leaf the head statement answered (the
// answer carries it): every live node, or the active path by either walk
// over a tombstoned node (runtime.load_session.active_path).
func (p sessionGraph) step(s RuntimeState, _ int64) []Branch {
	nodes := func(leaf string, passOver bool) []r.Node {
		if !p.Scope.ActivePath {
			return sortedNodes(liveNodes(s.nodes))
		}
		return sortedNodes(activePath(s.nodes, leaf, passOver))
	}
	leaf := ""
	if s.head != nil {
		leaf = s.head.Leaf
	}
	if p.Scope.ActivePath && p.Scope.LeafNodeID != "" {
		leaf = p.Scope.LeafNodeID
	}
	return []Branch{{Outcome: OK(graphPart{leaf, nodes(leaf, false)}), Next: s, Rule: ruleSessionStatements,
		Match: func(got Outcome) (map[string]string, bool) {
			g, ok := got.Result.(graphPart)
			if got.Kind != "" || !ok {
				return nil, false
			}
			if spec.SameResult(nodes(g.Leaf, false), g.Nodes) || p.Scope.ActivePath && spec.SameResult(nodes(g.Leaf, true), g.Nodes) {
				return nil, true
			}
			return nil, false
		}}}
}

// step reads the checkpoint of the ref the head statement answered: its
// bytes, or none when it is gone by now (a later commit moved the head and
// a collection took it: get_checkpoint_conn's None).
func (sessionCheckpoint) step(s RuntimeState, _ int64) []Branch {
	var want checkpointPart
	if s.head != nil {
		want = checkpointPart{s.head.Ref, []byte(s.checkpoints[s.head.Ref])}
	}
	return []Branch{{Outcome: OK(want), Next: s, Rule: ruleSessionStatements,
		Match: func(got Outcome) (map[string]string, bool) {
			g, ok := got.Result.(checkpointPart)
			if got.Kind != "" || !ok {
				return nil, false
			}
			return nil, bytes.Equal([]byte(s.checkpoints[g.Ref]), g.Data)
		}}}
}

func (sessionLedger) step(s RuntimeState, _ int64) []Branch {
	return []Branch{{Outcome: OK(sortedLedger(s.ledger)), Next: s, Rule: ruleSessionStatements}}
}

// step is the list's answer with any batch's items allowed to be missing
// (the items part checks that such a batch was gone).
func (p queueRows) step(s RuntimeState, now int64) []Branch {
	want := Runtime{}.step(s, p.List, now)[0]
	return []Branch{{Outcome: want.Outcome, Next: s, Rule: ruleListStatements,
		Match: func(got Outcome) (map[string]string, bool) {
			gb, ok := got.Result.([]r.QueuedWorkBatch)
			eb := batchesOf(want.Outcome.Result)
			if got.Kind != "" || !ok || len(gb) != len(eb) {
				return nil, false
			}
			adjusted := slices.Clone(eb)
			for i := range adjusted {
				if len(gb[i].Items) == 0 {
					adjusted[i].Items = nil
				}
			}
			b := Branch{Outcome: OK(adjusted), Next: s}
			if !s.fence0Known {
				b = learnFence0(b)
			}
			return b.Allows(got)
		}}}
}

// step holds every batch answered without items to being gone now, or to
// having none.
func (queueItems) step(s RuntimeState, _ int64) []Branch {
	return []Branch{{Outcome: OK("every batch answered without items is gone, or has none"), Next: s, Rule: ruleListStatements,
		Match: func(got Outcome) (map[string]string, bool) {
			ids, ok := got.Result.(itemlessBatches)
			if got.Kind != "" || !ok {
				return nil, false
			}
			for _, q := range s.batches {
				if len(q.B.Items) > 0 && slices.Contains(ids, q.B.BatchID) {
					return nil, false
				}
			}
			return nil, true
		}}}
}

func sortedNodes(nodes []r.Node) []r.Node {
	return slices.SortedFunc(slices.Values(nodes), func(a, b r.Node) int { return strings.Compare(a.NodeID, b.NodeID) })
}

func sortedLedger(ledger []r.UsageEntry) []r.UsageEntry {
	return slices.SortedFunc(slices.Values(ledger), func(a, b r.UsageEntry) int {
		return cmp.Or(strings.Compare(a.Source, b.Source), strings.Compare(a.Model, b.Model))
	})
}
