package suite

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/storecheck/storecheck/spec"
	r "github.com/storecheck/storecheck/spec/runtime"
)

// Reading, tombstoning and collecting the committed graph and checkpoints.
func runtimeGraphSpecs(fx *runtimeFixture) {
	const ls = "runtime.load_session."
	Describe("load_session", func() {
		// graph commits root <- a <- b and root <- c, at leaf b.
		graph := func() {
			GinkgoHelper()
			cm := fx.commitOf(fx.lease(worker), "cp")
			cm.Graph = fx.appendNodes("b", fx.node("root", ""), fx.node("a", "root"), fx.node("b", "a"), fx.node("c", "root"))
			fx.commit(cm)
		}
		It("returns none before the first commit, for either scope", Rules("runtime.load_session.none_before_first_commit"), func() {
			Expect(fx.load(r.FullGraph())).To(BeNil())
			Expect(fx.load(r.ActivePathTo(""))).To(BeNil())
		})
		It("returns every node of the full graph, in any order, with the head's leaf", Rules("runtime.load_session.full_graph", "runtime.load_session.leaf"), func() {
			graph()
			Expect(fx.nodeIDs(fx.load(r.FullGraph()).Graph)).To(ConsistOf("root", "a", "b", "c"), allowed(ls+"full_graph", "the nodes root, a, b, c in any order"))
			Expect(fx.load(r.FullGraph()).Graph.LeafNodeID).To(Equal("b"))
		})
		It("returns the active path to the head's leaf: the leaf and its ancestors, in any order", Rules("runtime.load_session.active_path", "runtime.load_session.leaf"), func() {
			graph()
			fx.expectSame(fx.load(r.ActivePathTo("")).Graph, r.Graph{Nodes: []r.Node{fx.node("root", ""), fx.node("a", "root"), fx.node("b", "a")}, LeafNodeID: "b"}, ls+"active_path")
		})
		It("returns the active path to the leaf the scope names", Rules("runtime.load_session.leaf", "runtime.load_session.active_path"), func() {
			graph()
			read := fx.load(r.ActivePathTo("c"))
			fx.expectSame(read.Graph, r.Graph{Nodes: []r.Node{fx.node("root", ""), fx.node("c", "root")}, LeafNodeID: "c"}, ls+"active_path")
			Expect(read.HeadRevision).To(Equal(uint64(1)))
		})
		It("ends the active path at a tombstoned node or passes over it, and gives no nodes for an unknown leaf", Rules("runtime.load_session.active_path"), func() {
			graph()
			fx.tombstone("a")
			Expect(fx.nodeIDs(fx.load(r.ActivePathTo("b")).Graph)).To(Or(ConsistOf("b"), ConsistOf("b", "root")),
				allowed(ls+"active_path", "b alone (the walk ends at the tombstoned a), or b and root (it passes over a)"))
			read := fx.load(r.ActivePathTo("nowhere"))
			Expect(read.Graph.Nodes).To(BeEmpty())
			Expect(read.Graph.LeafNodeID).To(Equal("nowhere"))
		})
	})

	Describe("load_node", func() {
		It("returns a committed node as committed, its data the same JSON value", Rules("runtime.load_node.live_only", "runtime.opaque_values"), func() {
			cm := fx.commitOf(fx.lease(worker), "cp")
			n := r.Node{NodeID: "n", Data: spec.RawJSON(`{"text": "spaced \u00e9", "k": [1, 2]}`)}
			cm.Graph = fx.appendNodes("n", n)
			fx.commit(cm)
			fx.expectSame(fx.loadNode("n"), &n, "runtime.opaque_values")
		})
		It("returns none for an unknown node and for a tombstoned one", Rules("runtime.load_node.live_only"), func() {
			cm := fx.commitOf(fx.lease(worker), "cp")
			cm.Graph = fx.appendNodes("n", fx.node("n", ""))
			fx.commit(cm)
			Expect(fx.loadNode("unknown")).To(BeNil())
			fx.tombstone("n")
			Expect(fx.loadNode("n")).To(BeNil())
		})
	})

	Describe("tombstone_nodes", func() {
		It("takes the nodes out of load_node and both graph scopes; unknown ids are ignored", Rules("runtime.tombstone_nodes.hides", "runtime.load_session.active_path"), func() {
			cm := fx.commitOf(fx.lease(worker), "cp")
			cm.Graph = fx.appendNodes("b", fx.node("root", ""), fx.node("a", "root"), fx.node("b", "root"))
			fx.commit(cm)
			fx.tombstone("b", "unknown")
			Expect(fx.loadNode("b")).To(BeNil())
			Expect(fx.nodeIDs(fx.load(r.FullGraph()).Graph)).To(ConsistOf("root", "a"))
			// The tombstoned leaf leaves the active path; the walk ends there,
			// or passes over it to its parent (runtime.load_session.active_path).
			path := fx.nodeIDs(r.Graph{Nodes: fx.load(r.ActivePathTo("")).Graph.Nodes})
			Expect(path).To(Or(BeEmpty(), ConsistOf("root")), allowed("runtime.load_session.active_path", "no nodes, or root alone"))
			Expect(fx.loadNode("a")).NotTo(BeNil())
		})
	})

	Describe("vacuum", func() {
		It("removes the tombstoned nodes and reports how many; a second vacuum removes none", Rules("runtime.vacuum.removes_tombstoned"), func() {
			l := fx.lease(worker)
			cm := fx.commitOf(l, "cp")
			cm.Graph = fx.appendNodes("c", fx.node("a", ""), fx.node("b", "a"), fx.node("c", "a"))
			fx.commit(cm)
			Expect(fx.vacuum()).To(BeZero(), "nothing is tombstoned")
			fx.tombstone("b", "c")
			Expect(fx.vacuum()).To(Equal(2))
			Expect(fx.vacuum()).To(BeZero())
			Expect(fx.nodeIDs(fx.load(r.FullGraph()).Graph)).To(Equal([]string{"a"}))
			cm.Graph = fx.appendNodes("b", fx.node("b", "a"))
			fx.commit(cm)
			Expect(fx.loadNode("b")).NotTo(BeNil(), "a vacuumed node id may be appended again")
		})
	})

	Describe("gc_unreachable", func() {
		It("removes checkpoints the head no longer names and reports how many, no more than were stored; the head's stays", Rules("runtime.gc_unreachable.collects"), func() {
			l := fx.lease(worker)
			for _, cp := range []string{"one", "two", "two", "three"} {
				fx.commit(fx.commitOf(l, cp))
			}
			rep, err := fx.s.GcUnreachable(fx.ctx)
			Expect(err).NotTo(HaveOccurred())
			Expect(rep.RemovedCheckpointCount).To(BeNumerically("<=", 3), allowed("runtime.gc_unreachable.collects",
				"0 to 3: 2 for a content address (equal bytes, one checkpoint), 3 for a ref per commit, fewer after an automatic collection"))
			Expect(fx.load(r.FullGraph()).Checkpoint).To(equalBytes([]byte("three")))
			rep, err = fx.s.GcUnreachable(fx.ctx)
			Expect(err).NotTo(HaveOccurred())
			Expect(rep.RemovedCheckpointCount).To(BeZero())
			Expect(fx.load(r.FullGraph()).Checkpoint).To(equalBytes([]byte("three")))
		})
	})
}
