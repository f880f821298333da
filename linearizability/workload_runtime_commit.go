package linearizability

// The runtime workload's commits: turns, graph deltas, usage, attachments
// and completed claims.

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/storecheck/storecheck/spec"
	r "github.com/storecheck/storecheck/spec/runtime"
)

// attachments are the attachments a commit names: the producer's att-0
// mostly (a commit after its first keeps its first commit time), and now
// and then one the client staged or named before, or any (of another
// session, or unknown: left alone).
func (w *runtimeWorkload) attachments(rnd *rand.Rand, cl *runtimeClient) []string {
	var ids []string
	if rnd.IntN(4) > 0 {
		ids = append(ids, "att-0")
	}
	if rnd.IntN(2) == 0 {
		id := fmt.Sprint("att-", rnd.IntN(4))
		if len(cl.attached) > 0 && rnd.IntN(4) > 0 {
			id = cl.attached[rnd.IntN(len(cl.attached))]
		} else {
			cl.attached = append(cl.attached, id)
		}
		if !slices.Contains(ids, id) {
			ids = append(ids, id)
		}
	}
	return ids
}

// completingCommit is the commit that completes the claim the client just
// made on the bound session.
func (w *runtimeWorkload) completingCommit(rnd *rand.Rand, cl *runtimeClient) spec.Op {
	l := w.sharedLease(rnd, cl, boundSession)
	id := fmt.Sprintf("turn-%d-%d", cl.n, len(cl.turns))
	cm := r.RuntimeCommit{SessionID: boundSession, Lease: &l, Checkpoint: []byte(pick(rnd, checkpoints...)),
		TurnCommit: &r.TurnCommit{SessionID: boundSession, TurnID: id, TurnCommitHash: "hash-" + id},
		Graph:      r.GraphDelta{Kind: r.GraphUnchanged}}
	if cl.claim != nil && cl.claim.SessionID == boundSession {
		cm.CompletedQueueClaims = []r.CompletedQueueClaim{cl.present(*cl.claim).Completed()}
	}
	cm.CommittedAttachmentIDs = w.attachments(rnd, cl)
	return r.CommitRuntimeState{Commit: cm}
}

func (cl *runtimeClient) nodeID(rnd *rand.Rand) string {
	if cl.nodes == 0 || rnd.IntN(4) == 0 {
		return fmt.Sprintf("n-%d-%d", rnd.IntN(8), rnd.IntN(4))
	}
	return fmt.Sprintf("n-%d-%d", cl.n, rnd.IntN(cl.nodes))
}

var checkpoints = []string{"", "cp-a", "cp-b", "cp-c"}

// commit is a commit of session-0 under lease (a turn, usually new), with
// the claim the client believes it holds now and then.
func (w *runtimeWorkload) commit(rnd *rand.Rand, cl *runtimeClient, lease *r.SessionExecutionLeaseFence) spec.Op {
	cm := r.RuntimeCommit{SessionID: boundSession, Lease: lease, Checkpoint: []byte(pick(rnd, checkpoints...))}
	switch p := rnd.IntN(40); {
	case p == 0:
		cm.SessionID = unleasedSession
	case p == 1:
		cm.Lease = nil
	}
	switch p := rnd.IntN(20); {
	case p < 3 && len(cl.turns) > 0:
		t := cl.turns[rnd.IntN(len(cl.turns))]
		if rnd.IntN(3) == 0 {
			t.hash += "-other"
		}
		cm.TurnCommit = &r.TurnCommit{SessionID: cm.SessionID, TurnID: t.turn, TurnCommitHash: t.hash}
	case p < 4:
		cm.TurnCommit = &r.TurnCommit{SessionID: unleasedSession, TurnID: "turn-foreign", TurnCommitHash: "h"}
	case p < 15:
		id := fmt.Sprintf("turn-%d-%d", cl.n, len(cl.turns))
		cm.TurnCommit = &r.TurnCommit{SessionID: cm.SessionID, TurnID: id, TurnCommitHash: "hash-" + id}
	}
	if rnd.IntN(4) == 0 {
		rev := uint64(rnd.IntN(1 + cl.step/4))
		cm.ExpectedHeadRevision = &rev
	}
	switch p := rnd.IntN(20); {
	case p < 10:
		for range 1 + rnd.IntN(2) {
			id := fmt.Sprintf("n-%d-%d", cl.n, cl.nodes)
			cl.nodes++
			cl.appended = remember(cl.appended, id)
			cm.Graph.Nodes = append(cm.Graph.Nodes, r.Node{NodeID: id, ParentID: cm.Graph.LeafNodeID, Data: spec.RawJSON(`{"t":1}`)})
			cm.Graph.LeafNodeID = id
		}
		cm.Graph.Kind = r.GraphAppend
		if rnd.IntN(2) == 0 {
			cm.Graph.Nodes[0].ParentID = cl.nodeID(rnd)
		}
		// Then a load of the leaf it appended: stored when the commit was.
		cl.plan = append(cl.plan, r.LoadNode{NodeID: cm.Graph.LeafNodeID})
	case p < 13:
		// A node it committed before, or one twice in the delta.
		n := r.Node{NodeID: fmt.Sprintf("n-%d-%d", cl.n, rnd.IntN(1+cl.nodes/4))}
		cm.Graph = r.GraphDelta{Kind: r.GraphAppend, Nodes: []r.Node{n}}
		if rnd.IntN(2) == 0 {
			n.NodeID = fmt.Sprintf("n-%d-%d", cl.n, cl.nodes)
			cl.nodes++
			cm.Graph.Nodes = []r.Node{n, n}
		}
	case p < 15:
		id := fmt.Sprintf("n-%d-%d", cl.n, cl.nodes)
		cl.nodes++
		cm.Graph = r.GraphDelta{Kind: r.GraphReplaceFull, Nodes: []r.Node{{NodeID: id}}, LeafNodeID: id}
	case p < 17:
		cm.Graph.Kind = "rebase"
	default:
		cm.Graph = r.GraphDelta{Kind: r.GraphUnchanged, LeafNodeID: cl.nodeID(rnd)}
	}
	if rnd.IntN(3) == 0 {
		cm.Config = spec.RawJSON(pick(rnd, `{"model":"m1"}`, `{"model":"m2"}`))
		cm.AgentFrames = spec.RawJSON(`[{"id":"f1"}]`)
		cm.CurrentAgentFrameID = "f1"
	}
	for range rnd.IntN(3) {
		cm.UsageDeltas = append(cm.UsageDeltas, r.UsageEntry{Source: pick(rnd, "agent", "tool"), Model: pick(rnd, "m1", "m2"),
			Usage: r.Usage{InputTokens: uint64(rnd.IntN(100)), OutputTokens: uint64(rnd.IntN(50)), CachedInputTokens: uint64(rnd.IntN(5))}})
	}
	cm.CommittedAttachmentIDs = w.attachments(rnd, cl)
	if rnd.IntN(8) == 0 {
		cm.CompletedQueueClaims = []r.CompletedQueueClaim{cl.claimOrGuess(rnd).Completed()}
	}
	if cl.ownLease != nil && rnd.IntN(5) == 0 {
		// It lets its own session's lease go with the commit. (Releasing
		// the bound session's would grant it again unseen, and every
		// client's guess of its fence would fall behind for good.)
		f := cl.ownLease.Fence()
		cm.ReleaseLease = &f
	}
	return r.CommitRuntimeState{Commit: cm}
}
