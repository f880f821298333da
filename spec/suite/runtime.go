package suite

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/types"

	"github.com/storecheck/storecheck/spec"
	r "github.com/storecheck/storecheck/spec/runtime"
)

// The ids and ttls of the runtime specs; rt-prefixed where the continuity
// specs name a session too.
const (
	rtSession = "session-a"
	rtOther   = "session-b"
	worker    = "worker-1"
	rival     = "worker-2"
	leaseTTL  = uint64(60_000)
	claimTTL  = uint64(1_000)
)

// runtimeFixture is what the store's specs share: the harness, the spec's
// fresh clock and path, its open store, and the helpers as methods.
type runtimeFixture struct {
	h Harness
	*fresh
	s r.Store
}

// The runtime contract's rules, one Describe per operation (see spec/runtime
// for the rules as the contract states them, and its rule table, rules.go),
// grouped in runtime_*.go. Every spec names the rules it checks; where the
// seed is silent a spec accepts every answer the rule's latitude allows, and
// its failure says what was allowed.
func runtimeSpecs(h Harness) {
	fx := &runtimeFixture{h: h}

	BeforeEach(func() {
		if fx.h.Runtime == nil {
			Skip("backend does not implement the runtime store")
		}
		fx.fresh = newFresh(fx.h, "runtime.db")
		fx.s = fx.open(fx.path)
	})

	runtimeLeaseSpecs(fx)
	runtimeCommitSpecs(fx)
	runtimeGraphSpecs(fx)
	runtimeQueueSpecs(fx)
	runtimeMiscSpecs(fx)
}

// open opens a store on path and closes it when the spec ends.
func (fx *runtimeFixture) open(path string) r.Store {
	GinkgoHelper()
	return openForSpec(fx.fresh, fx.h.Runtime, path, "runtime", func(st r.Store, once *closeOnce) r.Store {
		return runtimeHandle{st, once}
	})
}

func (fx *runtimeFixture) advance(ms uint64) { fx.clock.Advance(time.Duration(ms) * time.Millisecond) }

func (fx *runtimeFixture) now() int64 { return fx.clock.Now().UnixMilli() }

func (fx *runtimeFixture) u64(v uint64) *uint64 { return &v }

// Leases.

func (fx *runtimeFixture) tryClaimOn(st r.Store, sess, owner string) *r.SessionExecutionLease {
	GinkgoHelper()
	l, err := st.TryClaimSessionExecutionLease(fx.ctx, sess, owner, leaseTTL)
	Expect(err).NotTo(HaveOccurred(), "try_claim_session_execution_lease %s %s", sess, owner)
	return l
}

func (fx *runtimeFixture) tryClaim(owner string) *r.SessionExecutionLease {
	GinkgoHelper()
	return fx.tryClaimOn(fx.s, rtSession, owner)
}

func (fx *runtimeFixture) lease(owner string) *r.SessionExecutionLease {
	GinkgoHelper()
	l := fx.tryClaim(owner)
	Expect(l).NotTo(BeNil(), "%s claims the session lease", owner)
	return l
}

func (fx *runtimeFixture) fenceOf(l *r.SessionExecutionLease) *r.SessionExecutionLeaseFence {
	fence := l.Fence()
	return &fence
}

// fenceVariants are fences that differ from l's in one field each.
func (fx *runtimeFixture) fenceVariants(l *r.SessionExecutionLease) map[string]r.SessionExecutionLeaseFence {
	out := map[string]r.SessionExecutionLeaseFence{}
	for what, m := range map[string]func(*r.SessionExecutionLeaseFence){
		"another owner":         func(x *r.SessionExecutionLeaseFence) { x.OwnerID = rival },
		"another token":         func(x *r.SessionExecutionLeaseFence) { x.LeaseToken = "forged" },
		"another fencing token": func(x *r.SessionExecutionLeaseFence) { x.FencingToken++ },
		"another session":       func(x *r.SessionExecutionLeaseFence) { x.SessionID = rtOther },
	} {
		fence := l.Fence()
		m(&fence)
		out[what] = fence
	}
	return out
}

// Commits.

func (fx *runtimeFixture) commitOf(l *r.SessionExecutionLease, checkpoint string) r.RuntimeCommit {
	cm := r.RuntimeCommit{SessionID: rtSession, Graph: r.GraphDelta{Kind: r.GraphUnchanged},
		Checkpoint: []byte(checkpoint), Config: spec.RawJSON(`{"model":"m-1"}`)}
	if l != nil {
		cm.Lease = fx.fenceOf(l)
	}
	return cm
}

func (fx *runtimeFixture) commitOn(st r.Store, cm r.RuntimeCommit) r.CommitResult {
	GinkgoHelper()
	res, err := st.CommitRuntimeState(fx.ctx, cm)
	Expect(err).NotTo(HaveOccurred(), "commit_runtime_state")
	return res
}

func (fx *runtimeFixture) commit(cm r.RuntimeCommit) r.CommitResult {
	GinkgoHelper()
	return fx.commitOn(fx.s, cm)
}

func (fx *runtimeFixture) node(id, parent string) r.Node {
	return r.Node{NodeID: id, ParentID: parent, Data: spec.RawJSON(`{"text":"` + id + `"}`)}
}

func (fx *runtimeFixture) appendNodes(leaf string, nodes ...r.Node) r.GraphDelta {
	return r.GraphDelta{Kind: r.GraphAppend, Nodes: nodes, LeafNodeID: leaf}
}

func (fx *runtimeFixture) loadOn(st r.Store, scope r.ReadScope) *r.SessionRead {
	GinkgoHelper()
	read, err := st.LoadSession(fx.ctx, scope)
	Expect(err).NotTo(HaveOccurred(), "load_session")
	return read
}

func (fx *runtimeFixture) load(scope r.ReadScope) *r.SessionRead {
	GinkgoHelper()
	return fx.loadOn(fx.s, scope)
}

func (fx *runtimeFixture) nodeIDs(g r.Graph) []string {
	ids := []string{}
	for _, n := range g.Nodes {
		ids = append(ids, n.NodeID)
	}
	return ids
}

func (fx *runtimeFixture) loadNode(id string) *r.Node {
	GinkgoHelper()
	n, err := fx.s.LoadNode(fx.ctx, id)
	Expect(err).NotTo(HaveOccurred(), "load_node %s", id)
	return n
}

func (fx *runtimeFixture) tombstone(ids ...string) {
	GinkgoHelper()
	Expect(fx.s.TombstoneNodes(fx.ctx, ids)).To(Succeed())
}

func (fx *runtimeFixture) vacuum() int {
	GinkgoHelper()
	rep, err := fx.s.Vacuum(fx.ctx)
	Expect(err).NotTo(HaveOccurred())
	return rep.RemovedNodeCount
}

func (fx *runtimeFixture) attachment(id string) *r.Attachment {
	GinkgoHelper()
	a, err := fx.s.LoadAttachment(fx.ctx, id)
	Expect(err).NotTo(HaveOccurred(), "load_attachment %s", id)
	return a
}

// expectAttachment checks attachment id is want, naming an encoding
// mistake of its bytes when it sees one.
func (fx *runtimeFixture) expectAttachment(id string, want *r.Attachment) {
	GinkgoHelper()
	got := fx.attachment(id)
	var data []byte
	if got != nil {
		data = got.Data
	}
	Expect(got).To(Equal(want), bytesHint(data, want.Data))
}

func (fx *runtimeFixture) stage(sess, id, data string) {
	GinkgoHelper()
	Expect(fx.s.StageAttachment(fx.ctx, sess, id, []byte(data))).To(Succeed())
}

// Queued work.

func (fx *runtimeFixture) draft(slot r.SlotPolicy, key string) r.QueuedWorkBatchDraft {
	return r.QueuedWorkBatchDraft{SessionID: rtSession, DeliveryPolicy: r.DeliverNextTurn, SlotPolicy: slot, MergeKey: key,
		AvailableAtMs: fx.now(), Payloads: []spec.RawJSON{spec.RawJSON(`{"text":"hello"}`)}}
}

func (fx *runtimeFixture) enqueueOn(st r.Store, d r.QueuedWorkBatchDraft) r.QueuedWorkBatch {
	GinkgoHelper()
	b, err := st.EnqueueQueuedWork(fx.ctx, d)
	Expect(err).NotTo(HaveOccurred(), "enqueue_queued_work")
	return b
}

func (fx *runtimeFixture) enqueue(d r.QueuedWorkBatchDraft) r.QueuedWorkBatch {
	GinkgoHelper()
	return fx.enqueueOn(fx.s, d)
}

func (fx *runtimeFixture) mergeable() r.QueuedWorkBatch {
	GinkgoHelper()
	return fx.enqueue(fx.draft(r.SlotMergeable, "k"))
}

func (fx *runtimeFixture) batchIDs(bs []r.QueuedWorkBatch) []string {
	ids := []string{}
	for _, b := range bs {
		ids = append(ids, b.BatchID)
	}
	return ids
}

func (fx *runtimeFixture) claimOn(st r.Store, l *r.SessionExecutionLease, owner string, boundary r.QueuedWorkClaimBoundary, max int) *r.QueuedWorkClaim {
	GinkgoHelper()
	c, err := st.ClaimReadyQueuedWork(fx.ctx, rtSession, l.Fence(), owner, boundary, claimTTL, max)
	Expect(err).NotTo(HaveOccurred(), "claim_ready_queued_work")
	return c
}

func (fx *runtimeFixture) claimWork(l *r.SessionExecutionLease, owner string, max int) *r.QueuedWorkClaim {
	GinkgoHelper()
	return fx.claimOn(fx.s, l, owner, r.BoundaryTurn, max)
}

func (fx *runtimeFixture) claimed(c *r.QueuedWorkClaim) []string {
	GinkgoHelper()
	Expect(c).NotTo(BeNil(), "a claim was won")
	return fx.batchIDs(c.Batches)
}

// prefixes are the claim lengths the rules allow over candidates (the
// claimable batches in enqueue order) at boundary: one per reading of the
// merge key (runtime.claim_ready_queued_work.prefix_reading).
func (fx *runtimeFixture) prefixes(candidates []r.QueuedWorkBatch, boundary r.QueuedWorkClaimBoundary, max int) []int {
	var out []int
	for _, m := range r.MergeReadings {
		if n := r.SelectClaimPrefixAs(m, candidates, boundary, max); !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// claimAsAllowed claims on st and checks that the claim is a prefix of the
// candidates (the session's pending batches available now, in enqueue
// order) of a length some reading of the merge key gives.
func (fx *runtimeFixture) claimAsAllowed(st r.Store, l *r.SessionExecutionLease, owner string, boundary r.QueuedWorkClaimBoundary, max int) *r.QueuedWorkClaim {
	GinkgoHelper()
	pending, err := st.ListPendingQueuedWork(fx.ctx, rtSession)
	Expect(err).NotTo(HaveOccurred())
	var candidates []r.QueuedWorkBatch
	for _, b := range pending {
		if b.AvailableAtMs <= fx.now() {
			candidates = append(candidates, b)
		}
	}
	ns := fx.prefixes(candidates, boundary, max)
	ids := fx.batchIDs(candidates)
	c := fx.claimOn(st, l, owner, boundary, max)
	n := 0
	if c != nil {
		n = len(c.Batches)
	}
	what := allowed("runtime.claim_ready_queued_work.prefix_reading", "a claim of the first %v of the candidates %v (none for 0)", ns, ids)
	Expect(ns).To(ContainElement(n), what)
	if n > 0 {
		Expect(fx.batchIDs(c.Batches)).To(Equal(ids[:n]), what)
	}
	return c
}

// expectClaimFence checks a claim's fencing tokens against its batches'
// stored counts (one up by the claim): the claim's is its first batch's,
// before or after the claim's increment; each answered batch shows its count
// after the increment or before it, all alike.
func (fx *runtimeFixture) expectClaimFence(c *r.QueuedWorkClaim) {
	GinkgoHelper()
	stored := map[string]uint64{}
	for _, b := range fx.list(c.SessionID) {
		stored[b.BatchID] = b.ClaimFencingToken
	}
	f := stored[c.Batches[0].BatchID]
	Expect(c.FencingToken).To(BeElementOf(f-1, f), allowed("runtime.claim_ready_queued_work.claim_fence", "%d or %d", f-1, f))
	var shift []uint64
	for _, b := range c.Batches {
		s := stored[b.BatchID]
		Expect(b.ClaimFencingToken).To(BeElementOf(s-1, s), allowed("runtime.claim_ready_queued_work.answered_batches",
			"batch %s: %d (its stored count) or %d (as read before the claim)", b.BatchID, s, s-1))
		shift = append(shift, s-b.ClaimFencingToken)
	}
	Expect(slices.Compact(shift)).To(HaveLen(1), allowed("runtime.claim_ready_queued_work.answered_batches", "every batch of the claim counted alike"))
}

func (fx *runtimeFixture) list(sess string) []r.QueuedWorkBatch {
	GinkgoHelper()
	bs, err := fx.s.ListQueuedWork(fx.ctx, sess)
	Expect(err).NotTo(HaveOccurred())
	return bs
}

func (fx *runtimeFixture) pending() []r.QueuedWorkBatch {
	GinkgoHelper()
	bs, err := fx.s.ListPendingQueuedWork(fx.ctx, rtSession)
	Expect(err).NotTo(HaveOccurred())
	return bs
}

func (fx *runtimeFixture) cancel(sess, id string) *r.QueuedWorkBatch {
	GinkgoHelper()
	b, err := fx.s.CancelQueuedWorkBatch(fx.ctx, sess, id)
	Expect(err).NotTo(HaveOccurred())
	return b
}

// runtimeObserved is everything the specs can observe without changing
// anything, to show that a failed operation changed nothing.
type runtimeObserved struct {
	Session, Path *r.SessionRead
	Queue         [][]r.QueuedWorkBatch
	Pending       []r.QueuedWorkBatch
	Meta          spec.RawJSON
	Attachments   []*r.Attachment
}

func (fx *runtimeFixture) state() runtimeObserved {
	GinkgoHelper()
	meta, err := fx.s.LoadSessionMeta(fx.ctx)
	Expect(err).NotTo(HaveOccurred())
	return runtimeObserved{
		Session:     sortedRead(fx.load(r.FullGraph())),
		Path:        sortedRead(fx.load(r.ActivePathTo(""))),
		Queue:       [][]r.QueuedWorkBatch{fx.list(rtSession), fx.list(rtOther)},
		Pending:     fx.pending(),
		Meta:        meta,
		Attachments: []*r.Attachment{fx.attachment("att-1"), fx.attachment("att-2")},
	}
}

// refused checks that err has the kind and that nothing changed.
func (fx *runtimeFixture) refused(before runtimeObserved, err error, kind error) {
	GinkgoHelper()
	refusedUnchanged(fx.state, before, err, kind)
}

func (fx *runtimeFixture) refusedCommit(cm r.RuntimeCommit, kind error) {
	GinkgoHelper()
	before := fx.state()
	_, err := fx.s.CommitRuntimeState(fx.ctx, cm)
	fx.refused(before, err, kind)
}

// refusedAny checks that err has one of the kinds (the rule allows each)
// and that nothing changed.
func (fx *runtimeFixture) refusedAny(before runtimeObserved, err error, rule string, kinds ...spec.Kind) {
	GinkgoHelper()
	Expect(err).To(fx.kindIn(kinds...), allowed(rule, "%s", joinKinds(kinds)))
	Expect(fx.state()).To(Equal(before), "a failed operation changes nothing (rule runtime.failure_leaves_no_trace)")
}

// kindIn matches an error of any of the kinds.
func (fx *runtimeFixture) kindIn(kinds ...spec.Kind) types.GomegaMatcher {
	ms := make([]types.GomegaMatcher, len(kinds))
	for i, k := range kinds {
		ms[i] = MatchError(k)
	}
	return SatisfyAny(ms...)
}

func joinKinds(kinds []spec.Kind) string {
	out := make([]string, len(kinds))
	for i, k := range kinds {
		out[i] = string(k)
	}
	return strings.Join(out, " or ")
}

// allowed is the failure message of a check of a rule: the rule, its
// source, and what it allows here.
func allowed(rule, format string, args ...any) string {
	return r.Contract.Explain(rule) + " Allowed here: " + fmt.Sprintf(format, args...) + "."
}

// expectSame checks that got is want as the contract compares results
// (spec.SameResult: JSON values as values), with the graph's nodes and the
// token ledger in any order (runtime.load_session.full_graph, active_path,
// token_ledger).
func (fx *runtimeFixture) expectSame(got, want any, rule string) {
	GinkgoHelper()
	g, w := normalized(got), normalized(want)
	Expect(spec.SameResult(g, w)).To(BeTrue(), "%s\ngot:  %s\nwant: %s", allowed(rule, "%s", jsonText(w)), jsonText(g), jsonText(w))
}

func jsonText(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprintf("%+v", v)
	}
	return string(b)
}

// normalized is a result with the orders the seed leaves open sorted.
func normalized(v any) any {
	switch x := v.(type) {
	case *r.SessionRead:
		return sortedRead(x)
	case r.SessionRead:
		return *sortedRead(&x)
	case r.Graph:
		x.Nodes = sortedNodes(x.Nodes)
		return x
	case []r.Node:
		return sortedNodes(x)
	case []r.UsageEntry:
		return sortedLedger(x)
	}
	return v
}

func sortedRead(r *r.SessionRead) *r.SessionRead {
	if r == nil {
		return nil
	}
	c := *r
	c.Graph.Nodes = sortedNodes(c.Graph.Nodes)
	c.TokenLedger = sortedLedger(c.TokenLedger)
	return &c
}

func sortedNodes(ns []r.Node) []r.Node {
	return slices.SortedFunc(slices.Values(ns), func(a, b r.Node) int { return cmp.Compare(a.NodeID, b.NodeID) })
}

func sortedLedger(es []r.UsageEntry) []r.UsageEntry {
	return slices.SortedFunc(slices.Values(es), func(a, b r.UsageEntry) int {
		return cmp.Or(cmp.Compare(a.Source, b.Source), cmp.Compare(a.Model, b.Model))
	})
}

// runtimeHandle is a runtime store whose Close the spec and the cleanup share.
type runtimeHandle struct {
	r.Store
	once *closeOnce
}

func (s runtimeHandle) Close() error { return s.once.Close() }
