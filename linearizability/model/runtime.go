package model

import (
	"cmp"
	"fmt"
	"hash/fnv"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/storecheck/storecheck/spec"
	r "github.com/storecheck/storecheck/spec/runtime"
)

// Runtime is the runtime contract (spec/runtime) as a model.
//
// What the store mints where the seed does not show how (batch ids, claim
// ids and tokens, checkpoint refs: rule runtime.minted_ids) are holes: the
// answer that shows one binds it, and the state keeps the backend's value
// from then on, so ids are compared up to a consistent renaming, with
// Distinct constraints where distinct things must have distinct ids. The
// lease token and item ids follow the seed's formats (spec/runtime/ids.go).
//
// Where the seed leaves a reading open, a step answers a branch per reading,
// the reference's first (see each branch's Rule): the claim prefix's merge
// key, the claim's fencing token, a renewal that changed only some of a
// claim's batches, completing an expired claim that still holds its
// batches, where invalid_argument comes in the order of checks, io for a
// repeated node, the form of checkpoint refs, the count of a collection, the
// order of the graph's nodes and of the token ledger, the walk of the active
// path over a tombstoned node, and the initial claim fencing token (learned
// from the first batch a backend answers).
type Runtime struct {
	// Tier is what DurabilityTierOp answers (default Durable). It is a
	// constant of the backend, not state: the workload never asks it.
	Tier r.DurabilityTier
	// AtomicReads: the backend declared atomic_reads, so a read the seed
	// runs as several statements is judged as one step (reads.go).
	AtomicReads bool
}

// The rules of spec/runtime's table the branches name.
const (
	ruleInvalidAnyPoint = "runtime.invalid_argument_at_any_point"
	ruleFullGraph       = "runtime.load_session.full_graph"
	ruleActivePath      = "runtime.load_session.active_path"
	ruleAnsweredBatches = "runtime.claim_ready_queued_work.answered_batches"
	ruleFirstStaging    = "runtime.stage_attachment.first_staging"
	ruleCompletedHeld   = "runtime.commit_runtime_state.completed_claim_held"
	ruleCheckpoint      = "runtime.commit_runtime_state.checkpoint"
	ruleRepeatedNode    = "runtime.commit_runtime_state.graph_repeated_node"
	ruleBatchID         = "runtime.enqueue_queued_work.batch_id"
	ruleInitialFence    = "runtime.enqueue_queued_work.initial_claim_fence"
	rulePrefixReading   = "runtime.claim_ready_queued_work.prefix_reading"
	ruleClaimLease      = "runtime.claim_ready_queued_work.claim_lease"
	ruleClaimFence      = "runtime.claim_ready_queued_work.claim_fence"
	ruleRenewChanged    = "runtime.renew_queued_work_claim.changed"
	ruleGC              = "runtime.gc_unreachable.collects"
)

// RuntimeRules are the rules the model's branches name (a test holds each to
// the contract's table).
var RuntimeRules = []string{ruleInvalidAnyPoint, ruleFullGraph, ruleActivePath, ruleCompletedHeld, ruleCheckpoint,
	ruleRepeatedNode, ruleBatchID, ruleInitialFence, rulePrefixReading, ruleClaimLease, ruleClaimFence, ruleRenewChanged, ruleGC,
	ruleSessionStatements, ruleListStatements}

type rtHead struct {
	Session, Config, Frames, Frame, Ref, Leaf string
	Rev                                       uint64
}

type rtNode struct {
	ID, Parent, Data string
	Tomb             bool
}

type rtTurn struct {
	Hash string
	Res  r.CommitResult
}

type rtLease struct {
	Held                 bool
	Owner, Token         string
	Fence                uint64
	ClaimedAt, ExpiresAt int64
}

// rtBatch is a queued batch. B.ClaimFencingToken counts the claims the batch
// had; the store answers it from the initial claim fence on (batchOut).
type rtBatch struct {
	B                             r.QueuedWorkBatch
	Claimed                       bool
	ClaimID, ClaimOwner, ClaimTok string
	ClaimedAt, ClaimExpires       int64
}

type rtAttachment struct {
	Session, Data string
	Committed     bool
	CommittedAt   int64
}

type turnKey struct{ Session, Turn string }

// RuntimeState is everything a runtime store keeps. Its parts are never
// changed in place: a step copies the parts it writes. key is the state's
// canonical text, computed once, for Equal and Hash.
type RuntimeState struct {
	head        *rtHead
	nodes       []rtNode
	checkpoints map[string]string // by ref (a hole until an answer shows it)
	ledger      []r.UsageEntry    // merged, ordered by source then model
	turns       map[turnKey]rtTurn
	leases      map[string]rtLease
	batches     []rtBatch // every session's, in enqueue order
	// fence0 is the store's initial claim fencing token, once an answer has
	// shown it (fence0Known); until then batches answer as if it were 0,
	// and it is the hole fence0Hole, which the first answer that shows a
	// batch binds.
	fence0      uint64
	fence0Known bool
	meta        string // "" is none
	attachments map[string]rtAttachment
	// holes numbers the holes this state's lineage minted. It is not part
	// of the state's identity: a state holds only holes numbered below it.
	holes int64
	// parts is the canonical text of each part of the state, sums their
	// hashes, hash the state's: computed when a part changes.
	parts [nParts]string
	sums  [nParts]uint64
	hash  uint64
}

// The parts of a runtime state, each sealed on its own.
const (
	pHead = iota // head, graph, checkpoints, ledger, turns
	pLeases
	pQueue
	pMeta
	pAttachments
	nParts
)

var allParts = []int{pHead, pLeases, pQueue, pMeta, pAttachments}

func (Runtime) Contract() spec.Contract { return r.Contract }

func (Runtime) Init() State { return RuntimeState{}.sealed(allParts...) }

func (s RuntimeState) Equal(o State) bool {
	t, ok := o.(RuntimeState)
	return ok && s.hash == t.hash && s.parts == t.parts
}

func (s RuntimeState) Hash() uint64 { return s.hash }

func (s RuntimeState) String() string {
	out := strings.Join(s.parts[:], "")
	if out == "" {
		return "empty"
	}
	return out
}

// sealed recomputes the canonical text and hash of the parts that changed.
func (s RuntimeState) sealed(changed ...int) RuntimeState {
	for _, p := range changed {
		var b strings.Builder
		s.write(&b, p)
		s.parts[p] = b.String()
		f := fnv.New64a()
		f.Write([]byte(s.parts[p]))
		s.sums[p] = f.Sum64()
	}
	s.hash = 0
	for i, h := range s.sums {
		s.hash = s.hash*1_000_003 ^ h ^ uint64(i)
	}
	return s
}

// write writes the canonical text of part p.
func (s RuntimeState) write(b *strings.Builder, p int) {
	switch p {
	case pHead:
		if h := s.head; h != nil {
			fmt.Fprintf(b, "head %s rev %d checkpoint %s leaf %q frame %q config %q frames %q\n",
				h.Session, h.Rev, h.Ref, h.Leaf, h.Frame, h.Config, h.Frames)
		}
		for _, n := range s.nodes {
			b.WriteString("node " + strconv.Quote(n.ID) + " parent " + strconv.Quote(n.Parent) + " data " + strconv.Quote(n.Data))
			if n.Tomb {
				b.WriteString(" tombstoned")
			}
			b.WriteString("\n")
		}
		for _, ref := range slices.Sorted(maps.Keys(s.checkpoints)) {
			b.WriteString("checkpoint " + ref + " " + strconv.Quote(s.checkpoints[ref]) + "\n")
		}
		for _, u := range s.ledger {
			fmt.Fprintf(b, "usage %q %q %v\n", u.Source, u.Model, u.Usage)
		}
		for _, k := range slices.SortedFunc(maps.Keys(s.turns), func(a, b turnKey) int {
			return cmp.Or(strings.Compare(a.Session, b.Session), strings.Compare(a.Turn, b.Turn))
		}) {
			t := s.turns[k]
			fmt.Fprintf(b, "turn %s/%s hash %q -> %d %s\n", k.Session, k.Turn, t.Hash, t.Res.HeadRevision, t.Res.CheckpointRef)
		}
	case pLeases:
		for _, sess := range slices.Sorted(maps.Keys(s.leases)) {
			l := s.leases[sess]
			if l.Held {
				fmt.Fprintf(b, "lease %s: %s token %s fence %d claimed %d expires %d\n", sess, l.Owner, l.Token, l.Fence, l.ClaimedAt, l.ExpiresAt)
			} else {
				fmt.Fprintf(b, "lease %s: free, fence %d\n", sess, l.Fence)
			}
		}
	case pQueue:
		if s.fence0Known {
			fmt.Fprintf(b, "initial claim fence %d\n", s.fence0)
		} else {
			b.WriteString("initial claim fence " + fence0Hole + "\n")
		}
		for _, q := range s.batches {
			fmt.Fprintf(b, "batch %s source %q %s %s merge %q available %d enqueued %d claims %d items %d",
				q.B.BatchID, q.B.SourceKey, q.B.DeliveryPolicy, q.B.SlotPolicy, q.B.MergeKey, q.B.AvailableAtMs, q.B.EnqueuedAtMs,
				q.B.ClaimFencingToken, len(q.B.Items))
			for _, it := range q.B.Items {
				b.WriteString(" " + strconv.Quote(it.ItemID) + " " + strconv.Quote(string(it.Payload)))
			}
			if q.Claimed {
				fmt.Fprintf(b, " claim %s by %s token %s at %d expires %d", q.ClaimID, q.ClaimOwner, q.ClaimTok, q.ClaimedAt, q.ClaimExpires)
			}
			b.WriteString("\n")
		}
	case pMeta:
		if s.meta != "" {
			b.WriteString("meta " + strconv.Quote(s.meta) + "\n")
		}
	case pAttachments:
		for _, id := range slices.Sorted(maps.Keys(s.attachments)) {
			a := s.attachments[id]
			fmt.Fprintf(b, "attachment %s session %s data %q", id, a.Session, a.Data)
			if a.Committed {
				fmt.Fprintf(b, " committed at %d", a.CommittedAt)
			}
			b.WriteString("\n")
		}
	}
}

// Bind fills in the values an answer showed for the state's holes: the
// checkpoint refs, batch (and item) ids, claim ids and tokens. Only the
// parts that hold one of the holes are copied.
func (s RuntimeState) Bind(values map[string]string) State {
	holds := func(p int) bool {
		for h := range values {
			if strings.Contains(s.parts[p], h) {
				return true
			}
		}
		return false
	}
	f := func(x string) string { return Fill(x, values) }
	var changed []int
	if holds(pHead) {
		changed = append(changed, pHead)
		if s.head != nil {
			h := *s.head
			h.Ref = f(h.Ref)
			s.head = &h
		}
		if len(s.checkpoints) > 0 {
			cps := make(map[string]string, len(s.checkpoints))
			for ref, data := range s.checkpoints {
				cps[f(ref)] = data
			}
			s.checkpoints = cps
		}
		if len(s.turns) > 0 {
			turns := make(map[turnKey]rtTurn, len(s.turns))
			for k, t := range s.turns {
				t.Res.CheckpointRef = f(t.Res.CheckpointRef)
				turns[k] = t
			}
			s.turns = turns
		}
	}
	if holds(pQueue) {
		changed = append(changed, pQueue)
		if v, ok := values[fence0Hole]; ok && !s.fence0Known {
			if n, err := strconv.ParseUint(v, 10, 64); err == nil {
				s.fence0, s.fence0Known = n, true
			}
		}
		batches := slices.Clone(s.batches)
		for i := range batches {
			q := &batches[i]
			if !strings.Contains(q.B.BatchID+q.ClaimID+q.ClaimTok, "⟨?") {
				continue
			}
			q.B.BatchID, q.ClaimID, q.ClaimTok = f(q.B.BatchID), f(q.ClaimID), f(q.ClaimTok)
			if len(q.B.Items) > 0 {
				items := slices.Clone(q.B.Items)
				for j := range items {
					items[j].ItemID = f(items[j].ItemID)
				}
				q.B.Items = items
			}
		}
		s.batches = batches
	}
	if len(changed) == 0 {
		return s
	}
	return s.sealed(changed...)
}

// hole mints the state's next hole of kind.
func (s *RuntimeState) hole(kind string) string {
	s.holes++
	return Hole(kind, s.holes)
}

// batchOut is a batch as the store answers it.
func (s RuntimeState) batchOut(q rtBatch) r.QueuedWorkBatch {
	b := q.B
	b.ClaimFencingToken += s.fence0
	return b
}

// Keys partitions a runtime history by what an operation can read or write:
//   - "head": the session head, and with it the graph, checkpoints, token
//     ledger and recorded turns: a commit writes all of them together, and
//     the store binds to the session of its first commit, so every commit,
//     read of the head or graph, tombstone, vacuum and collection is one part;
//   - "lease:<session>": a session's lease; leases of sessions are
//     independent (try_claim/renew/release name one session), a commit joins
//     the lease it checks and the lease it releases, a claim of queued work
//     the lease it checks;
//   - "queue": every session's queued work together, because a batch id is
//     distinct from every batch of the store, and the initial claim fence is
//     the store's;
//   - "meta": the session meta;
//   - "attachment:<id>": one attachment (stage and load name one id; a commit
//     joins the ids it commits: whether one is marked depends only on its
//     own row and the commit's session).
//
// durability_tier touches no state and stands alone.
func (Runtime) Keys(op spec.Op) []string {
	lease := func(s string) string { return "lease:" + s }
	switch o := op.(type) {
	case runtimePart:
		return o.keys()
	case r.DurabilityTierOp:
		return []string{}
	case r.LoadSession, r.LoadNode, r.TombstoneNodes, r.Vacuum, r.GcUnreachable:
		return []string{"head"}
	case r.CommitRuntimeState:
		cm := o.Commit
		keys := []string{"head", lease(cm.SessionID)}
		if cm.ReleaseLease != nil {
			keys = append(keys, lease(cm.ReleaseLease.SessionID))
		}
		if len(cm.CompletedQueueClaims) > 0 {
			keys = append(keys, "queue")
		}
		for _, id := range cm.CommittedAttachmentIDs {
			keys = append(keys, "attachment:"+id)
		}
		return keys
	case r.TryClaimSessionExecutionLease:
		return []string{lease(o.SessionID)}
	case r.RenewSessionExecutionLease:
		return []string{lease(o.Fence.SessionID)}
	case r.ReleaseSessionExecutionLease:
		return []string{lease(o.Completion.SessionID)}
	case r.ClaimReadyQueuedWork:
		return []string{"queue", lease(o.SessionID)}
	case r.EnqueueQueuedWork, r.RenewQueuedWorkClaim, r.AbandonQueuedWorkClaim, r.CancelQueuedWorkBatch,
		r.ListQueuedWork, r.ListPendingQueuedWork:
		return []string{"queue"}
	case r.SaveSessionMeta, r.LoadSessionMeta:
		return []string{"meta"}
	case r.StageAttachment:
		return []string{"attachment:" + o.AttachmentID}
	case r.LoadAttachment:
		return []string{"attachment:" + o.AttachmentID}
	}
	return nil
}

// live is the expiry rule: live while now < expiry.
func live(expiresAt, now int64) bool { return expiresAt > now }

// expiry is now + ttl, saturating.
func expiry(now int64, ttl uint64) int64 {
	if ttl > uint64(math.MaxInt64-now) {
		return math.MaxInt64
	}
	return now + int64(ttl)
}

// rawOut is an opaque value read back: empty is nil.
func rawOut(s string) spec.RawJSON {
	if s == "" {
		return nil
	}
	return spec.RawJSON(s)
}

// leaseIs says whether f is the session's lease (owner, token and fence);
// liveness apart.
func (s RuntimeState) leaseIs(session string, f r.SessionExecutionLeaseFence) (rtLease, bool) {
	l, ok := s.leases[session]
	return l, ok && l.Held && l.Owner == f.OwnerID && l.Token == f.LeaseToken && l.Fence == f.FencingToken
}

// liveLease is ensure_lease: f is the session's live lease.
func (s RuntimeState) liveLease(session string, f r.SessionExecutionLeaseFence, now int64) bool {
	if f.SessionID != session {
		return false
	}
	l, ok := s.leaseIs(session, f)
	return ok && live(l.ExpiresAt, now)
}

func (s RuntimeState) withLease(session string, l rtLease) RuntimeState {
	s.leases = maps.Clone(s.leases)
	if s.leases == nil {
		s.leases = map[string]rtLease{}
	}
	s.leases[session] = l
	return s
}

// released clears the lease c names when owner, token and fence match.
func (s RuntimeState) released(c r.SessionExecutionLeaseCompletion) (RuntimeState, bool) {
	l, ok := s.leaseIs(c.SessionID, c)
	if !ok {
		return s, false
	}
	return s.withLease(c.SessionID, rtLease{Fence: l.Fence}), true
}

func (s RuntimeState) batch(session, id string) (int, bool) {
	for i, q := range s.batches {
		if q.B.SessionID == session && q.B.BatchID == id {
			return i, true
		}
	}
	return -1, false
}

func (q rtBatch) free(now int64) bool { return !q.Claimed || q.ClaimExpires <= now }

// heldBy says whether this claim (id and token) holds the batch, and
// whether it is still live.
func (s RuntimeState) heldBy(session, batchID, claimID, token string, now int64) (held, isLive bool) {
	i, ok := s.batch(session, batchID)
	if !ok {
		return false, false
	}
	q := s.batches[i]
	held = q.Claimed && q.ClaimID == claimID && q.ClaimTok == token
	return held, held && live(q.ClaimExpires, now)
}

// holds says whether the claim (session, id and token) holds q.
func (q rtBatch) holds(session, claimID, token string) bool {
	return q.B.SessionID == session && q.Claimed && q.ClaimID == claimID && q.ClaimTok == token
}

func (s RuntimeState) sessionBatches(session string, keep func(rtBatch) bool) []r.QueuedWorkBatch {
	out := []r.QueuedWorkBatch{}
	for _, q := range s.batches {
		if q.B.SessionID == session && (keep == nil || keep(q)) {
			out = append(out, s.batchOut(q))
		}
	}
	return out
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

func (m Runtime) Step(st State, op spec.Op, now int64) []Branch {
	s := st.(RuntimeState)
	branches := m.step(s, op, now)
	if !s.fence0Known {
		for i := range branches {
			branches[i] = learnFence0(branches[i])
		}
	}
	return branches
}

func (m Runtime) step(s RuntimeState, op spec.Op, now int64) []Branch {
	switch o := op.(type) {
	case runtimePart:
		return o.step(s, now)
	case r.DurabilityTierOp:
		if m.Tier == "" {
			return One(s, OK(r.Durable))
		}
		return One(s, OK(m.Tier))

	case r.LoadSession:
		h := s.head
		if h == nil {
			return One(s, OK((*r.SessionRead)(nil)))
		}
		read := func(nodes []r.Node, leaf string) *r.SessionRead {
			return &r.SessionRead{SessionID: h.Session, HeadRevision: h.Rev, Config: rawOut(h.Config), AgentFrames: rawOut(h.Frames),
				CurrentAgentFrameID: h.Frame, CheckpointRef: h.Ref, Graph: r.Graph{Nodes: nodes, LeafNodeID: leaf},
				Checkpoint: []byte(s.checkpoints[h.Ref]), TokenLedger: slices.Clone(s.ledger)}
		}
		if !o.Scope.ActivePath {
			return []Branch{unordered(s, read(liveNodes(s.nodes), h.Leaf), ruleFullGraph)}
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
		return out

	case r.LoadNode:
		return One(s, OK(liveNode(s.nodes, o.NodeID)))

	case r.CommitRuntimeState:
		return s.commit(o.Commit, now)

	case r.TryClaimSessionExecutionLease:
		cur, ok := s.leases[o.SessionID]
		expires := expiry(now, o.TTLMs)
		if ok && cur.Held && live(cur.ExpiresAt, now) {
			if cur.Owner != o.OwnerID {
				return One(s, OK((*r.SessionExecutionLease)(nil)))
			}
			cur.ExpiresAt = expires
			return One(s.withLease(o.SessionID, cur).sealed(pLeases), OK(&r.SessionExecutionLease{SessionID: o.SessionID, OwnerID: o.OwnerID,
				LeaseToken: cur.Token, FencingToken: cur.Fence, ClaimedAtMs: cur.ClaimedAt, ExpiresAtMs: expires}))
		}
		fence := cur.Fence + 1
		l := rtLease{Held: true, Owner: o.OwnerID, Token: r.LeaseToken(o.SessionID, o.OwnerID, now, fence), Fence: fence,
			ClaimedAt: now, ExpiresAt: expires}
		return One(s.withLease(o.SessionID, l).sealed(pLeases), OK(&r.SessionExecutionLease{SessionID: o.SessionID, OwnerID: o.OwnerID,
			LeaseToken: l.Token, FencingToken: fence, ClaimedAtMs: now, ExpiresAtMs: expires}))

	case r.RenewSessionExecutionLease:
		f := o.Fence
		cur, ok := s.leaseIs(f.SessionID, f)
		if !ok || !live(cur.ExpiresAt, now) {
			return One(s, Fail(r.ErrSessionExecutionLeaseExpired))
		}
		cur.ExpiresAt = expiry(now, o.TTLMs)
		return One(s.withLease(f.SessionID, cur).sealed(pLeases), OK(r.SessionExecutionLease{SessionID: f.SessionID, OwnerID: f.OwnerID,
			LeaseToken: f.LeaseToken, FencingToken: f.FencingToken, ClaimedAtMs: cur.ClaimedAt, ExpiresAtMs: cur.ExpiresAt}))

	case r.ReleaseSessionExecutionLease:
		if next, ok := s.released(o.Completion); ok {
			return One(next.sealed(pLeases), OK(nil))
		}
		return One(s, OK(nil))

	case r.EnqueueQueuedWork:
		return s.enqueue(o.Draft, now)

	case r.ClaimReadyQueuedWork:
		return s.claim(o, now)

	case r.RenewQueuedWorkClaim:
		return s.renewClaim(o.Claim, o.TTLMs, now)

	case r.AbandonQueuedWorkClaim:
		c := o.Claim
		changed := false
		batches := slices.Clone(s.batches)
		for i := range batches {
			if q := &batches[i]; q.holds(c.SessionID, c.ClaimID, c.LeaseToken) {
				*q = rtBatch{B: q.B}
				changed = true
			}
		}
		if !changed {
			return One(s, OK(nil))
		}
		s.batches = batches
		return One(s.sealed(pQueue), OK(nil))

	case r.CancelQueuedWorkBatch:
		i, ok := s.batch(o.SessionID, o.BatchID)
		if !ok || !s.batches[i].free(now) {
			return One(s, OK((*r.QueuedWorkBatch)(nil)))
		}
		b := s.batchOut(s.batches[i])
		s.batches = slices.Delete(slices.Clone(s.batches), i, i+1)
		return One(s.sealed(pQueue), OK(&b))

	case r.ListQueuedWork:
		return One(s, OK(s.sessionBatches(o.SessionID, nil)))

	case r.ListPendingQueuedWork:
		return One(s, OK(s.sessionBatches(o.SessionID, func(q rtBatch) bool { return q.free(now) })))

	case r.SaveSessionMeta:
		if s.meta == string(o.Meta) {
			return One(s, OK(nil))
		}
		s.meta = string(o.Meta)
		return One(s.sealed(pMeta), OK(nil))

	case r.LoadSessionMeta:
		return One(s, OK(rawOut(s.meta)))

	case r.TombstoneNodes:
		nodes := slices.Clone(s.nodes)
		changed := false
		for i := range nodes {
			if !nodes[i].Tomb && slices.Contains(o.IDs, nodes[i].ID) {
				nodes[i].Tomb, changed = true, true
			}
		}
		if !changed {
			return One(s, OK(nil))
		}
		s.nodes = nodes
		return One(s.sealed(pHead), OK(nil))

	case r.Vacuum:
		kept := slices.DeleteFunc(slices.Clone(s.nodes), func(n rtNode) bool { return n.Tomb })
		removed := len(s.nodes) - len(kept)
		if removed == 0 {
			return One(s, OK(r.VacuumReport{}))
		}
		s.nodes = kept
		return One(s.sealed(pHead), OK(r.VacuumReport{RemovedNodeCount: removed}))

	case r.GcUnreachable:
		return s.collect()

	case r.StageAttachment:
		staged := func() State {
			n := s
			n.attachments = maps.Clone(s.attachments)
			if n.attachments == nil {
				n.attachments = map[string]rtAttachment{}
			}
			n.attachments[o.AttachmentID] = rtAttachment{Session: o.SessionID, Data: string(o.Data)}
			return n.sealed(pAttachments)
		}
		a, ok := s.attachments[o.AttachmentID]
		switch {
		case !ok:
			return One(staged(), OK(nil))
		case a.Committed:
			return One(s, OK(nil))
		}
		// Staged again before its commit: the first stays, or the latest
		// replaces it.
		return []Branch{{Outcome: OK(nil), Next: s, Rule: ruleFirstStaging}, {Outcome: OK(nil), Next: staged(), Rule: ruleFirstStaging}}

	case r.LoadAttachment:
		a, ok := s.attachments[o.AttachmentID]
		if !ok {
			return One(s, OK((*r.Attachment)(nil)))
		}
		out := &r.Attachment{AttachmentID: o.AttachmentID, SessionID: a.Session, Data: []byte(a.Data)}
		if a.Committed {
			at := a.CommittedAt
			out.CommittedAtMs = &at
		}
		return One(s, OK(out))
	}
	return One(s, Fail(spec.Kind("unknown_operation")))
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

// fence0Hole is the hole of the initial claim fencing token, while no
// answer has shown it.
var fence0Hole = Hole("initial_claim_fence", 0)

// learnFence0 lets b, computed while the initial claim fence is unknown (as
// if it were 0), match an answer with any initial fence: the batches it
// shows fix it, for every batch from then on
// (runtime.enqueue_queued_work.initial_claim_fence).
func learnFence0(b Branch) Branch {
	if b.Match != nil || b.Outcome.Kind != "" || len(batchesOf(b.Outcome.Result)) == 0 {
		return b
	}
	want := b
	if b.Rule == "" {
		b.Rule = ruleInitialFence
	}
	b.Match = func(got Outcome) (map[string]string, bool) {
		gb, eb := batchesOf(got.Result), batchesOf(want.Outcome.Result)
		if got.Kind != "" || len(gb) != len(eb) || gb[0].ClaimFencingToken < eb[0].ClaimFencingToken {
			return nil, false
		}
		d := gb[0].ClaimFencingToken - eb[0].ClaimFencingToken
		shifted := Branch{Outcome: OK(shiftFences(want.Outcome.Result, d)), Next: want.Next, Distinct: want.Distinct}
		values, ok := shifted.Allows(got)
		if !ok {
			return nil, false
		}
		values = maps.Clone(values)
		if values == nil {
			values = map[string]string{}
		}
		values[fence0Hole] = strconv.FormatUint(d, 10)
		return values, true
	}
	return b
}

// batchesOf are the batches a runtime result shows.
func batchesOf(v any) []r.QueuedWorkBatch {
	switch x := v.(type) {
	case r.QueuedWorkBatch:
		return []r.QueuedWorkBatch{x}
	case *r.QueuedWorkBatch:
		if x != nil {
			return []r.QueuedWorkBatch{*x}
		}
	case []r.QueuedWorkBatch:
		return x
	case *r.QueuedWorkClaim:
		if x != nil {
			return x.Batches
		}
	}
	return nil
}

// shiftFences is a result with every claim fencing token d higher.
func shiftFences(v any, d uint64) any {
	shift := func(bs []r.QueuedWorkBatch) []r.QueuedWorkBatch {
		out := slices.Clone(bs)
		for i := range out {
			out[i].ClaimFencingToken += d
		}
		return out
	}
	switch x := v.(type) {
	case r.QueuedWorkBatch:
		x.ClaimFencingToken += d
		return x
	case *r.QueuedWorkBatch:
		if x != nil {
			c := *x
			c.ClaimFencingToken += d
			return &c
		}
	case []r.QueuedWorkBatch:
		return shift(x)
	case *r.QueuedWorkClaim:
		if x != nil {
			c := *x
			c.FencingToken += d
			c.Batches = shift(c.Batches)
			return &c
		}
	}
	return v
}

// orInvalid adds to the branches of an operation that presents an unknown
// graph delta kind, policy or boundary the invalid_argument a backend may
// answer at any point of its checks (runtime.invalid_argument_at_any_point).
func (s RuntimeState) orInvalid(invalid bool, branches []Branch) []Branch {
	if !invalid {
		return branches
	}
	for i := range branches {
		if branches[i].Rule == "" {
			branches[i].Rule = ruleInvalidAnyPoint
		}
	}
	return append(branches, Refused(s, ruleInvalidAnyPoint, r.ErrInvalidArgument)...)
}

func (s RuntimeState) enqueue(d r.QueuedWorkBatchDraft, now int64) []Branch {
	invalid := d.DeliveryPolicy != r.DeliverNextTurn && d.DeliveryPolicy != r.DeliverInterrupt ||
		d.SlotPolicy != r.SlotExclusive && d.SlotPolicy != r.SlotMergeable
	var queued []Branch
	if d.SourceKey != "" {
		for _, q := range s.batches {
			if q.B.SessionID == d.SessionID && q.B.SourceKey == d.SourceKey {
				queued = One(s, OK(s.batchOut(q)))
				break
			}
		}
	}
	if invalid {
		// The reference checks the policies first.
		out := Refused(s, ruleInvalidAnyPoint, r.ErrInvalidArgument)
		for _, b := range queued {
			b.Rule = ruleInvalidAnyPoint
			out = append(out, b)
		}
		return out
	}
	if queued != nil {
		return queued
	}
	taken := make([][]string, len(s.batches))
	for i, q := range s.batches {
		taken[i] = []string{q.B.BatchID}
	}
	id := s.hole("batch")
	b := r.QueuedWorkBatch{BatchID: id, SessionID: d.SessionID, SourceKey: d.SourceKey, DeliveryPolicy: d.DeliveryPolicy,
		SlotPolicy: d.SlotPolicy, MergeKey: d.MergeKey, AvailableAtMs: d.AvailableAtMs, EnqueuedAtMs: now,
		Items: make([]r.QueuedWorkItem, len(d.Payloads))}
	for i, p := range d.Payloads {
		b.Items[i] = r.QueuedWorkItem{ItemID: r.ItemID(id, i), Payload: rawOut(string(p))}
	}
	s.batches = append(slices.Clip(s.batches), rtBatch{B: b})
	return []Branch{{Outcome: OK(s.batchOut(rtBatch{B: b})), Next: s.sealed(pQueue), Rule: ruleBatchID,
		Distinct: []Distinct{{Holes: []string{id}, Taken: taken}}}}
}

// claimable is the session's claimable batches in enqueue order (available,
// unclaimed or whose claim expired), at most max, and their indexes.
func (s RuntimeState) claimable(session string, now int64, max int) ([]r.QueuedWorkBatch, []int) {
	var out []r.QueuedWorkBatch
	var at []int
	for i, q := range s.batches {
		if len(out) == max {
			break
		}
		if q.B.SessionID == session && q.B.AvailableAtMs <= now && q.free(now) {
			out = append(out, s.batchOut(q))
			at = append(at, i)
		}
	}
	return out, at
}

func (s RuntimeState) claim(o r.ClaimReadyQueuedWork, now int64) []Branch {
	none := OK((*r.QueuedWorkClaim)(nil))
	invalid := o.Boundary != r.BoundaryTurn && o.Boundary != r.BoundaryStep
	if o.MaxBatches <= 0 {
		return s.orInvalid(invalid, One(s, none))
	}
	live := s.liveLease(o.SessionID, o.Lease, now)
	candidates, at := s.claimable(o.SessionID, now, o.MaxBatches)
	if invalid {
		// The reference checks the boundary before the lease.
		out := Refused(s, ruleInvalidAnyPoint, r.ErrInvalidArgument)
		switch {
		case !live:
			out = append(out, Refused(s, ruleInvalidAnyPoint, r.ErrSessionExecutionLeaseExpired)...)
		case len(candidates) == 0:
			out = append(out, Branch{Outcome: none, Next: s, Rule: ruleInvalidAnyPoint})
		}
		return out
	}
	if !live {
		return One(s, Fail(r.ErrSessionExecutionLeaseExpired))
	}
	var lengths []int
	for _, reading := range r.MergeReadings {
		if n := r.SelectClaimPrefixAs(reading, candidates, o.Boundary, o.MaxBatches); !slices.Contains(lengths, n) {
			lengths = append(lengths, n)
		}
	}
	rule := ""
	if len(lengths) > 1 {
		rule = rulePrefixReading
	}
	var out []Branch
	for _, n := range lengths {
		if n == 0 {
			out = append(out, Branch{Outcome: none, Next: s, Rule: rule})
			continue
		}
		out = append(out, s.claimOf(o, now, at[:n], rule)...)
	}
	return out
}

// claimOf is the claim of the batches at these indexes: its id and token
// the store's, not a live claim's of the session; its fencing token the
// first batch's after the claim's increment (the reference's) or before.
func (s RuntimeState) claimOf(o r.ClaimReadyQueuedWork, now int64, at []int, rule string) []Branch {
	var taken [][]string
	for _, q := range s.batches {
		if q.B.SessionID == o.SessionID && q.Claimed && live(q.ClaimExpires, now) {
			taken = append(taken, []string{q.ClaimID, q.ClaimTok})
		}
	}
	id, token := s.hole("claim"), s.hole("claim_token")
	claim := r.QueuedWorkClaim{SessionID: o.SessionID, ClaimID: id, OwnerID: o.OwnerID, LeaseToken: token, ClaimedAtMs: now,
		ExpiresAtMs: expiry(now, o.TTLMs)}
	s.batches = slices.Clone(s.batches)
	for _, i := range at {
		q := &s.batches[i]
		q.B.ClaimFencingToken++
		q.Claimed, q.ClaimID, q.ClaimOwner, q.ClaimTok = true, id, o.OwnerID, token
		q.ClaimedAt, q.ClaimExpires = now, claim.ExpiresAtMs
		claim.Batches = append(claim.Batches, s.batchOut(*q))
	}
	next := s.sealed(pQueue)
	distinct := []Distinct{{Holes: []string{id, token}, Taken: taken}}
	// The batches the claim answers show their counts after the claim's
	// increment (the reference's), or as the candidate rows were read
	// before it (runtime.claim_ready_queued_work.answered_batches); the
	// claim's own fencing token is its first batch's after or before
	// (claim_fence).
	read := slices.Clone(claim.Batches)
	for i := range read {
		read[i].ClaimFencingToken--
	}
	fence := claim.Batches[0].ClaimFencingToken
	if rule == "" {
		rule = ruleClaimLease
	}
	var out []Branch
	for _, v := range []struct {
		batches []r.QueuedWorkBatch
		fence   uint64
		rule    string
	}{{claim.Batches, fence, rule}, {claim.Batches, fence - 1, ruleClaimFence},
		{read, fence, ruleAnsweredBatches}, {read, fence - 1, ruleAnsweredBatches}} {
		c := claim
		c.Batches, c.FencingToken = v.batches, v.fence
		out = append(out, Branch{Outcome: OK(&c), Next: next, Rule: v.rule, Distinct: distinct})
	}
	return out
}

// renewClaim is the seed's renewal: one UPDATE of every batch the claim's id
// and token hold, live or expired, which stays whatever the answer; then the
// answer, by how many batches it changed (renewed_claim, not shown).
func (s RuntimeState) renewClaim(c r.QueuedWorkClaim, ttl uint64, now int64) []Branch {
	expires := expiry(now, ttl)
	changed := 0
	batches := slices.Clone(s.batches)
	for i := range batches {
		if q := &batches[i]; q.holds(c.SessionID, c.ClaimID, c.LeaseToken) {
			q.ClaimExpires = expires
			changed++
		}
	}
	if changed == 0 {
		return One(s, Fail(r.ErrQueuedWorkClaimExpired))
	}
	next := s
	next.batches = batches
	next = next.sealed(pQueue)
	renewed := c
	renewed.ExpiresAtMs = expires
	if changed == len(c.Batches) {
		return One(next, OK(renewed))
	}
	// Some of the claim's batches (or more rows than it names): the
	// reference refuses; renewed_claim may answer the claim.
	return []Branch{
		{Outcome: Fail(r.ErrQueuedWorkClaimExpired), Next: next, Rule: ruleRenewChanged},
		{Outcome: OK(renewed), Next: next, Rule: ruleRenewChanged},
	}
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

// The rare runtime events the simulator must reach.
const (
	EventLeaseTakenOverAfterExpiry   = "lease taken over after its expiry"
	EventLeaseExtendedByOwner        = "live lease extended by its owner"
	EventLeaseRenewalRefusedExpired  = "lease renewal refused at or after expiry"
	EventLeaseExpiredInCommit        = "commit refused because the lease expired"
	EventTurnReplayAnswered          = "duplicate turn replay answered from the first result"
	EventTurnReplayOtherHash         = "turn replay with another hash refused"
	EventHeadRevisionConflict        = "head revision conflict"
	EventCommitCompletedClaim        = "commit completed a queued work claim"
	EventCompletedClaimExpired       = "commit refused because a completed claim expired"
	EventClaimTakenOverAfterExpiry   = "queued work claim taken over after its claim expired"
	EventClaimRenewalRefused         = "claim renewal refused"
	EventDelayedWorkNotYetAvailable  = "delayed work not yet available"
	EventCancelRefusedLiveClaim      = "cancel refused for a batch a live claim holds"
	EventGraphNodeConflict           = "append of a stored node refused"
	EventAttachmentKeptFirstCommitAt = "attachment kept its first commit time"
	EventExpiredClaimRenewed         = "expired claim renewed while it still held its batches"
	EventReleaseOtherFence           = "lease release with its token and another fence left the lease"
	EventTombstonedNodeHidden        = "load of a tombstoned node answered none"
)

// RuntimeEvents is every event Events names, for the simulator's sweep.
var RuntimeEvents = []string{EventLeaseTakenOverAfterExpiry, EventLeaseExtendedByOwner, EventLeaseRenewalRefusedExpired,
	EventLeaseExpiredInCommit, EventTurnReplayAnswered, EventTurnReplayOtherHash, EventHeadRevisionConflict,
	EventCommitCompletedClaim, EventCompletedClaimExpired, EventClaimTakenOverAfterExpiry, EventClaimRenewalRefused,
	EventDelayedWorkNotYetAvailable, EventCancelRefusedLiveClaim, EventGraphNodeConflict, EventAttachmentKeptFirstCommitAt,
	EventExpiredClaimRenewed, EventReleaseOtherFence, EventTombstonedNodeHidden}

// Events names the rare runtime events op reaches from s: the rules the
// seed's comments were written about, taken on their interesting branch.
func (m Runtime) Events(st State, op spec.Op, now int64, out Outcome) []string {
	s := st.(RuntimeState)
	var ev []string
	switch o := op.(type) {
	case r.TryClaimSessionExecutionLease:
		cur, ok := s.leases[o.SessionID]
		got, _ := out.Result.(*r.SessionExecutionLease)
		switch {
		case got != nil && ok && cur.Held && cur.Owner != o.OwnerID && !live(cur.ExpiresAt, now):
			ev = append(ev, EventLeaseTakenOverAfterExpiry)
		case got != nil && ok && cur.Held && cur.Owner == o.OwnerID && live(cur.ExpiresAt, now):
			ev = append(ev, EventLeaseExtendedByOwner)
		}
	case r.RenewSessionExecutionLease:
		if cur, ok := s.leaseIs(o.Fence.SessionID, o.Fence); ok && !live(cur.ExpiresAt, now) {
			ev = append(ev, EventLeaseRenewalRefusedExpired)
		}
	case r.ReleaseSessionExecutionLease:
		c := o.Completion
		if l, ok := s.leases[c.SessionID]; ok && l.Held && l.Owner == c.OwnerID && l.Token == c.LeaseToken && l.Fence != c.FencingToken {
			ev = append(ev, EventReleaseOtherFence)
		}
	case r.LoadNode:
		if n := storedNode(s.nodes, o.NodeID); n != nil && n.Tomb {
			ev = append(ev, EventTombstonedNodeHidden)
		}
	case r.CommitRuntimeState:
		cm := o.Commit
		replay := false
		if tc := cm.TurnCommit; tc != nil && tc.SessionID == cm.SessionID {
			if t, ok := s.turns[turnKey{tc.SessionID, tc.TurnID}]; ok {
				replay = true
				if t.Hash == tc.TurnCommitHash && out.Kind == "" {
					ev = append(ev, EventTurnReplayAnswered)
				} else if out.Kind == r.ErrRuntimeTurnCommitConflict {
					ev = append(ev, EventTurnReplayOtherHash)
				}
			}
		}
		switch out.Kind {
		case r.ErrSessionExecutionLeaseExpired:
			if cm.Lease != nil && cm.Lease.SessionID == cm.SessionID {
				if cur, ok := s.leaseIs(cm.SessionID, *cm.Lease); ok && !live(cur.ExpiresAt, now) {
					ev = append(ev, EventLeaseExpiredInCommit)
				}
			}
		case r.ErrHeadRevisionConflict:
			ev = append(ev, EventHeadRevisionConflict)
		case r.ErrQueuedWorkClaimExpired:
			for _, c := range cm.CompletedQueueClaims {
				for _, id := range c.BatchIDs {
					if i, ok := s.batch(c.SessionID, id); ok && s.batches[i].Claimed && s.batches[i].ClaimID == c.ClaimID &&
						s.batches[i].ClaimTok == c.LeaseToken && !live(s.batches[i].ClaimExpires, now) {
						ev = append(ev, EventCompletedClaimExpired)
					}
				}
			}
		case r.ErrGraphNodeConflict, r.ErrIO:
			ev = append(ev, EventGraphNodeConflict)
		case "":
			if !replay && len(cm.CompletedQueueClaims) > 0 {
				ev = append(ev, EventCommitCompletedClaim)
			}
			if !replay {
				for _, id := range cm.CommittedAttachmentIDs {
					if a, ok := s.attachments[id]; ok && a.Committed && a.Session == cm.SessionID && a.CommittedAt != now {
						ev = append(ev, EventAttachmentKeptFirstCommitAt)
						break
					}
				}
			}
		}
	case r.ClaimReadyQueuedWork:
		if out.Kind != "" || o.MaxBatches <= 0 {
			break
		}
		if got, _ := out.Result.(*r.QueuedWorkClaim); got != nil {
			for _, b := range got.Batches {
				if i, ok := s.batch(o.SessionID, b.BatchID); ok && s.batches[i].Claimed {
					ev = append(ev, EventClaimTakenOverAfterExpiry)
					break
				}
			}
		}
		for _, q := range s.batches {
			if q.B.SessionID == o.SessionID && q.B.AvailableAtMs > now && q.free(now) {
				ev = append(ev, EventDelayedWorkNotYetAvailable)
				break
			}
		}
	case r.RenewQueuedWorkClaim:
		if out.Kind == r.ErrQueuedWorkClaimExpired {
			ev = append(ev, EventClaimRenewalRefused)
		}
		if out.Kind == "" {
			c := o.Claim
			for _, q := range s.batches {
				if q.holds(c.SessionID, c.ClaimID, c.LeaseToken) && !live(q.ClaimExpires, now) {
					ev = append(ev, EventExpiredClaimRenewed)
					break
				}
			}
		}
	case r.CancelQueuedWorkBatch:
		if i, ok := s.batch(o.SessionID, o.BatchID); ok && !s.batches[i].free(now) {
			ev = append(ev, EventCancelRefusedLiveClaim)
		}
	}
	return ev
}
