package suite

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/storecheck/storecheck/spec"
	rt "github.com/storecheck/storecheck/spec/runtime"
)

// Reading, tombstoning and collecting the committed graph and checkpoints.
func runtimeGraphSpecs(fx *runtimeFixture) {
	Describe("load_session", func() {
		// graph commits root <- a <- b and root <- c, at leaf b.
		graph := func() {
			GinkgoHelper()
			cm := fx.commitOf(fx.lease(worker), "cp")
			cm.Graph = fx.appendNodes("b", fx.node("root", ""), fx.node("a", "root"), fx.node("b", "a"), fx.node("c", "root"))
			fx.commit(cm)
		}
		It("returns none before the first commit, for either scope", func() {
			Expect(fx.load(rt.FullGraph())).To(BeNil())
			Expect(fx.load(rt.ActivePathTo(""))).To(BeNil())
		})
		It("returns the full graph in commit order, with the head's leaf", func() {
			graph()
			Expect(fx.nodeIDs(fx.load(rt.FullGraph()).Graph)).To(Equal([]string{"root", "a", "b", "c"}))
			Expect(fx.load(rt.FullGraph()).Graph.LeafNodeID).To(Equal("b"))
		})
		It("returns the active path from the root to the head's leaf, root first", func() {
			graph()
			Expect(fx.load(rt.ActivePathTo("")).Graph).To(Equal(rt.Graph{Nodes: []rt.Node{fx.node("root", ""), fx.node("a", "root"), fx.node("b", "a")}, LeafNodeID: "b"}))
		})
		It("returns the active path to the leaf the scope names", func() {
			graph()
			read := fx.load(rt.ActivePathTo("c"))
			Expect(read.Graph).To(Equal(rt.Graph{Nodes: []rt.Node{fx.node("root", ""), fx.node("c", "root")}, LeafNodeID: "c"}))
			Expect(read.HeadRevision).To(Equal(uint64(1)))
		})
		It("ends the active path at a tombstoned node, and gives no nodes for an unknown leaf", func() {
			graph()
			fx.tombstone("a")
			Expect(fx.nodeIDs(fx.load(rt.ActivePathTo("b")).Graph)).To(Equal([]string{"b"}))
			read := fx.load(rt.ActivePathTo("nowhere"))
			Expect(read.Graph.Nodes).To(BeEmpty())
			Expect(read.Graph.LeafNodeID).To(Equal("nowhere"))
		})
	})

	Describe("load_node", func() {
		It("returns a committed node exactly", func() {
			cm := fx.commitOf(fx.lease(worker), "cp")
			n := rt.Node{NodeID: "n", Data: spec.RawJSON(`{"text": "spaced \u00e9", "k": [1, 2]}`)}
			cm.Graph = fx.appendNodes("n", n)
			fx.commit(cm)
			Expect(fx.loadNode("n")).To(Equal(&n))
		})
		It("returns none for an unknown node and for a tombstoned one", func() {
			cm := fx.commitOf(fx.lease(worker), "cp")
			cm.Graph = fx.appendNodes("n", fx.node("n", ""))
			fx.commit(cm)
			Expect(fx.loadNode("unknown")).To(BeNil())
			fx.tombstone("n")
			Expect(fx.loadNode("n")).To(BeNil())
		})
	})

	Describe("tombstone_nodes", func() {
		It("takes the nodes out of load_node and both graph scopes; unknown ids are ignored", func() {
			cm := fx.commitOf(fx.lease(worker), "cp")
			cm.Graph = fx.appendNodes("b", fx.node("root", ""), fx.node("a", "root"), fx.node("b", "root"))
			fx.commit(cm)
			fx.tombstone("b", "unknown")
			Expect(fx.loadNode("b")).To(BeNil())
			Expect(fx.nodeIDs(fx.load(rt.FullGraph()).Graph)).To(Equal([]string{"root", "a"}))
			Expect(fx.load(rt.ActivePathTo("")).Graph.Nodes).To(BeEmpty())
			Expect(fx.loadNode("a")).NotTo(BeNil())
		})
	})

	Describe("vacuum", func() {
		It("removes the tombstoned nodes and reports how many; a second vacuum removes none", func() {
			l := fx.lease(worker)
			cm := fx.commitOf(l, "cp")
			cm.Graph = fx.appendNodes("c", fx.node("a", ""), fx.node("b", "a"), fx.node("c", "a"))
			fx.commit(cm)
			Expect(fx.vacuum()).To(BeZero(), "nothing is tombstoned")
			fx.tombstone("b", "c")
			Expect(fx.vacuum()).To(Equal(2))
			Expect(fx.vacuum()).To(BeZero())
			Expect(fx.nodeIDs(fx.load(rt.FullGraph()).Graph)).To(Equal([]string{"a"}))
			cm.Graph = fx.appendNodes("b", fx.node("b", "a"))
			fx.commit(cm)
			Expect(fx.loadNode("b")).NotTo(BeNil(), "a vacuumed node id may be appended again")
		})
	})

	Describe("gc_unreachable", func() {
		It("removes the checkpoints the head no longer names and reports how many; the head's stays", func() {
			l := fx.lease(worker)
			for _, cp := range []string{"one", "two", "two", "three"} {
				fx.commit(fx.commitOf(l, cp))
			}
			rep, err := fx.s.GcUnreachable(fx.ctx)
			Expect(err).NotTo(HaveOccurred())
			Expect(rep.RemovedCheckpointCount).To(Equal(2), "equal bytes are one checkpoint")
			Expect(fx.load(rt.FullGraph()).Checkpoint).To(Equal([]byte("three")))
			rep, err = fx.s.GcUnreachable(fx.ctx)
			Expect(err).NotTo(HaveOccurred())
			Expect(rep.RemovedCheckpointCount).To(BeZero())
		})
	})
}
