package model

import (
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
// Identifiers the contract leaves to the store ("a new token", "a new batch
// id") are the reference's, because porcupine compares answers exactly and
// the workload must be able to present them again without seeing answers:
//   - a session lease token is "<session>:<owner>:<now>:<fencing token>";
//   - a batch id is "<session>:batch:<n>", n counting every enqueue of the
//     store (all sessions), from 1; an item id is "<batch id>:item:<index>";
//   - a queued work claim id is "<session>:claim:<first batch id>:<its claim
//     fencing token>", its token "<claim id>:<owner>:<now>".
type Runtime struct {
	// Tier is what DurabilityTierOp answers (default Durable). It is a
	// constant of the backend, not state: the workload never asks it.
	Tier r.DurabilityTier
}

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
	checkpoints map[string]string
	ledger      []r.UsageEntry // merged, ordered by source then model
	turns       map[turnKey]rtTurn
	leases      map[string]rtLease
	seq         int64
	batches     []rtBatch // every session's, in enqueue order
	meta        string    // "" is none
	attachments map[string]rtAttachment
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

func (Runtime) Contract() spec.Contract { return r.Contract }

func (Runtime) Init() State {
	return RuntimeState{}.sealed(pHead, pLeases, pQueue, pMeta, pAttachments)
}

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
			b.WriteString("checkpoint " + ref + "\n")
		}
		for _, u := range s.ledger {
			fmt.Fprintf(b, "usage %q %q %v\n", u.Source, u.Model, u.Usage)
		}
		for _, k := range slices.SortedFunc(maps.Keys(s.turns), func(a, b turnKey) int {
			if c := strings.Compare(a.Session, b.Session); c != 0 {
				return c
			}
			return strings.Compare(a.Turn, b.Turn)
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
		if s.seq > 0 {
			b.WriteString("enqueued " + strconv.FormatInt(s.seq, 10) + "\n")
		}
		for _, q := range s.batches {
			fmt.Fprintf(b, "batch %s source %q %s %s merge %q available %d enqueued %d fence %d items %d",
				q.B.BatchID, q.B.SourceKey, q.B.DeliveryPolicy, q.B.SlotPolicy, q.B.MergeKey, q.B.AvailableAtMs, q.B.EnqueuedAtMs,
				q.B.ClaimFencingToken, len(q.B.Items))
			for _, it := range q.B.Items {
				b.WriteString(" " + strconv.Quote(string(it.Payload)))
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

// Keys partitions a runtime history by what an operation can read or write:
//   - "head": the session head, and with it the graph, checkpoints, token
//     ledger and recorded turns: a commit writes all of them together, and
//     the store binds to the session of its first commit, so every commit,
//     read of the head or graph, tombstone, vacuum and collection is one part;
//   - "lease:<session>": a session's lease; leases of sessions are
//     independent (try_claim/renew/release name one session), a commit joins
//     the lease it checks and the lease it releases, a claim of queued work
//     the lease it checks;
//   - "queue": every session's queued work together, because batch ids count
//     the enqueues of the whole store: an enqueue in one session changes the
//     id the next enqueue in another answers;
//   - "meta": the session meta;
//   - "attachment:<id>": one attachment (stage and load name one id; a commit
//     joins the ids it commits: whether one is marked depends only on its
//     own row and the commit's session).
//
// durability_tier touches no state and stands alone.
func (Runtime) Keys(op spec.Op) []string {
	lease := func(s string) string { return "lease:" + s }
	switch o := op.(type) {
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

// heldBy says whether a live claim of this id and token holds the batch.
func (s RuntimeState) heldBy(session, batchID, claimID, token string, now int64) bool {
	i, ok := s.batch(session, batchID)
	if !ok {
		return false
	}
	q := s.batches[i]
	return q.Claimed && q.ClaimID == claimID && q.ClaimTok == token && live(q.ClaimExpires, now)
}

func (s RuntimeState) sessionBatches(session string, keep func(rtBatch) bool) []r.QueuedWorkBatch {
	out := []r.QueuedWorkBatch{}
	for _, q := range s.batches {
		if q.B.SessionID == session && (keep == nil || keep(q)) {
			out = append(out, q.B)
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

func liveNode(nodes []rtNode, id string) *r.Node {
	for _, n := range nodes {
		if n.ID == id {
			if n.Tomb {
				return nil
			}
			return &r.Node{NodeID: n.ID, ParentID: n.Parent, Data: rawOut(n.Data)}
		}
	}
	return nil
}

func activePath(nodes []rtNode, leaf string) []r.Node {
	var path []r.Node
	seen := map[string]bool{}
	for id := leaf; id != "" && !seen[id]; {
		seen[id] = true
		n := liveNode(nodes, id)
		if n == nil {
			break
		}
		path = append(path, *n)
		id = n.ParentID
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
	switch o := op.(type) {
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
		read := r.SessionRead{SessionID: h.Session, HeadRevision: h.Rev, Config: rawOut(h.Config), AgentFrames: rawOut(h.Frames),
			CurrentAgentFrameID: h.Frame, CheckpointRef: h.Ref, Graph: r.Graph{LeafNodeID: h.Leaf},
			Checkpoint: []byte(s.checkpoints[h.Ref]), TokenLedger: slices.Clone(s.ledger)}
		if o.Scope.ActivePath {
			if o.Scope.LeafNodeID != "" {
				read.Graph.LeafNodeID = o.Scope.LeafNodeID
			}
			read.Graph.Nodes = activePath(s.nodes, read.Graph.LeafNodeID)
		} else {
			read.Graph.Nodes = liveNodes(s.nodes)
		}
		return One(s, OK(&read))

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
		l := rtLease{Held: true, Owner: o.OwnerID, Token: LeaseToken(o.SessionID, o.OwnerID, now, fence), Fence: fence,
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
		d := o.Draft
		if d.DeliveryPolicy != r.DeliverNextTurn && d.DeliveryPolicy != r.DeliverInterrupt ||
			d.SlotPolicy != r.SlotExclusive && d.SlotPolicy != r.SlotMergeable {
			return One(s, Fail(r.ErrInvalidArgument))
		}
		if d.SourceKey != "" {
			for _, q := range s.batches {
				if q.B.SessionID == d.SessionID && q.B.SourceKey == d.SourceKey {
					return One(s, OK(q.B))
				}
			}
		}
		s.seq++
		id := BatchID(d.SessionID, s.seq)
		b := r.QueuedWorkBatch{BatchID: id, SessionID: d.SessionID, SourceKey: d.SourceKey, DeliveryPolicy: d.DeliveryPolicy,
			SlotPolicy: d.SlotPolicy, MergeKey: d.MergeKey, AvailableAtMs: d.AvailableAtMs, EnqueuedAtMs: now,
			Items: make([]r.QueuedWorkItem, len(d.Payloads))}
		for i, p := range d.Payloads {
			b.Items[i] = r.QueuedWorkItem{ItemID: r.ItemID(id, i), Payload: rawOut(string(p))}
		}
		s.batches = append(slices.Clip(s.batches), rtBatch{B: b})
		return One(s.sealed(pQueue), OK(b))

	case r.ClaimReadyQueuedWork:
		if o.MaxBatches <= 0 {
			return One(s, OK((*r.QueuedWorkClaim)(nil)))
		}
		if o.Boundary != r.BoundaryTurn && o.Boundary != r.BoundaryStep {
			return One(s, Fail(r.ErrInvalidArgument))
		}
		if !s.liveLease(o.SessionID, o.Lease, now) {
			return One(s, Fail(r.ErrSessionExecutionLeaseExpired))
		}
		candidates, at := s.claimable(o.SessionID, now, o.MaxBatches)
		n := r.SelectClaimPrefix(candidates, o.Boundary, o.MaxBatches)
		if n == 0 {
			return One(s, OK((*r.QueuedWorkClaim)(nil)))
		}
		fence := candidates[0].ClaimFencingToken + 1
		claim := r.QueuedWorkClaim{SessionID: o.SessionID, OwnerID: o.OwnerID, FencingToken: fence, ClaimedAtMs: now,
			ExpiresAtMs: expiry(now, o.TTLMs), ClaimID: ClaimID(o.SessionID, candidates[0].BatchID, fence)}
		claim.LeaseToken = ClaimToken(claim.ClaimID, o.OwnerID, now)
		s.batches = slices.Clone(s.batches)
		for _, i := range at[:n] {
			q := &s.batches[i]
			q.B.ClaimFencingToken++
			q.Claimed, q.ClaimID, q.ClaimOwner, q.ClaimTok = true, claim.ClaimID, o.OwnerID, claim.LeaseToken
			q.ClaimedAt, q.ClaimExpires = now, claim.ExpiresAtMs
			claim.Batches = append(claim.Batches, q.B)
		}
		return One(s.sealed(pQueue), OK(&claim))

	case r.RenewQueuedWorkClaim:
		c := o.Claim
		if len(c.Batches) == 0 {
			return One(s, Fail(r.ErrQueuedWorkClaimExpired))
		}
		for _, b := range c.Batches {
			if !s.heldBy(c.SessionID, b.BatchID, c.ClaimID, c.LeaseToken, now) {
				return One(s, Fail(r.ErrQueuedWorkClaimExpired))
			}
		}
		c.ExpiresAtMs = expiry(now, o.TTLMs)
		s.batches = slices.Clone(s.batches)
		for i := range s.batches {
			q := &s.batches[i]
			if q.B.SessionID == c.SessionID && q.Claimed && q.ClaimID == c.ClaimID && q.ClaimTok == c.LeaseToken {
				q.ClaimExpires = c.ExpiresAtMs
			}
		}
		return One(s.sealed(pQueue), OK(c))

	case r.AbandonQueuedWorkClaim:
		c := o.Claim
		changed := false
		batches := slices.Clone(s.batches)
		for i := range batches {
			q := &batches[i]
			if q.B.SessionID == c.SessionID && q.Claimed && q.ClaimID == c.ClaimID && q.ClaimTok == c.LeaseToken {
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
		b := s.batches[i].B
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
		return One(s.sealed(pHead), OK(r.GcReport{RemovedCheckpointCount: removed}))

	case r.StageAttachment:
		if _, ok := s.attachments[o.AttachmentID]; ok {
			return One(s, OK(nil))
		}
		s.attachments = maps.Clone(s.attachments)
		if s.attachments == nil {
			s.attachments = map[string]rtAttachment{}
		}
		s.attachments[o.AttachmentID] = rtAttachment{Session: o.SessionID, Data: string(o.Data)}
		return One(s.sealed(pAttachments), OK(nil))

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
			out = append(out, q.B)
			at = append(at, i)
		}
	}
	return out, at
}

// commit is commit_runtime_state: the checks in the contract's order, then
// every write.
func (s RuntimeState) commit(cm r.RuntimeCommit, now int64) []Branch {
	if s.head != nil && s.head.Session != cm.SessionID {
		return One(s, Fail(r.ErrSessionBindingMismatch))
	}
	if tc := cm.TurnCommit; tc != nil {
		if tc.SessionID != cm.SessionID {
			return One(s, Fail(r.ErrRuntimeTurnCommitConflict))
		}
		if t, ok := s.turns[turnKey{tc.SessionID, tc.TurnID}]; ok {
			if t.Hash != tc.TurnCommitHash {
				return One(s, Fail(r.ErrRuntimeTurnCommitConflict))
			}
			if cm.ReleaseLease != nil {
				if next, ok := s.released(*cm.ReleaseLease); ok {
					return One(next.sealed(pLeases), OK(t.Res))
				}
			}
			return One(s, OK(t.Res))
		}
	}
	if cm.Lease == nil || !s.liveLease(cm.SessionID, *cm.Lease, now) {
		return One(s, Fail(r.ErrSessionExecutionLeaseExpired))
	}
	var actual uint64
	if s.head != nil {
		actual = s.head.Rev
	}
	if e := cm.ExpectedHeadRevision; e != nil && *e != actual {
		return One(s, Fail(r.ErrHeadRevisionConflict))
	}
	for _, c := range cm.CompletedQueueClaims {
		if c.SessionID != cm.SessionID {
			return One(s, Fail(r.ErrQueuedWorkClaimExpired))
		}
		for _, id := range c.BatchIDs {
			if !s.heldBy(c.SessionID, id, c.ClaimID, c.LeaseToken, now) {
				return One(s, Fail(r.ErrQueuedWorkClaimExpired))
			}
		}
	}
	nodes := s.nodes
	switch cm.Graph.Kind {
	case r.GraphUnchanged:
	case r.GraphAppend, r.GraphReplaceFull:
		if cm.Graph.Kind == r.GraphAppend {
			nodes = slices.Clip(nodes)
		} else {
			nodes = nil
		}
		for _, n := range cm.Graph.Nodes {
			if slices.ContainsFunc(nodes, func(x rtNode) bool { return x.ID == n.NodeID }) {
				return One(s, Fail(r.ErrGraphNodeConflict))
			}
			nodes = append(nodes, rtNode{ID: n.NodeID, Parent: n.ParentID, Data: string(n.Data)})
		}
	default:
		return One(s, Fail(r.ErrInvalidArgument))
	}
	res := r.CommitResult{HeadRevision: actual + 1, CheckpointRef: r.CheckpointRef(cm.Checkpoint)}
	next := s
	next.nodes = nodes
	if _, ok := s.checkpoints[res.CheckpointRef]; !ok {
		next.checkpoints = maps.Clone(s.checkpoints)
		if next.checkpoints == nil {
			next.checkpoints = map[string]string{}
		}
		next.checkpoints[res.CheckpointRef] = string(cm.Checkpoint)
	}
	next.ledger = mergeUsage(s.ledger, cm.UsageDeltas)
	next.head = &rtHead{Session: cm.SessionID, Rev: res.HeadRevision, Config: string(cm.Config), Frames: string(cm.AgentFrames),
		Frame: cm.CurrentAgentFrameID, Ref: res.CheckpointRef, Leaf: cm.Graph.LeafNodeID}
	if len(cm.CompletedQueueClaims) > 0 {
		next.batches = slices.DeleteFunc(slices.Clone(s.batches), func(q rtBatch) bool {
			for _, c := range cm.CompletedQueueClaims {
				if q.B.SessionID == c.SessionID && q.Claimed && q.ClaimID == c.ClaimID && q.ClaimTok == c.LeaseToken &&
					slices.Contains(c.BatchIDs, q.B.BatchID) {
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
	if tc := cm.TurnCommit; tc != nil {
		next.turns = maps.Clone(s.turns)
		if next.turns == nil {
			next.turns = map[turnKey]rtTurn{}
		}
		next.turns[turnKey{tc.SessionID, tc.TurnID}] = rtTurn{Hash: tc.TurnCommitHash, Res: res}
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
	return One(next.sealed(changed...), OK(res))
}

// The ids the store mints are the contract's (spec/runtime/ids.go).
var (
	LeaseToken = r.LeaseToken
	BatchID    = r.BatchID
	ClaimID    = r.ClaimID
	ClaimToken = r.ClaimToken
)

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
)

// RuntimeEvents is every event Events names, for the simulator's sweep.
var RuntimeEvents = []string{EventLeaseTakenOverAfterExpiry, EventLeaseExtendedByOwner, EventLeaseRenewalRefusedExpired,
	EventLeaseExpiredInCommit, EventTurnReplayAnswered, EventTurnReplayOtherHash, EventHeadRevisionConflict,
	EventCommitCompletedClaim, EventCompletedClaimExpired, EventClaimTakenOverAfterExpiry, EventClaimRenewalRefused,
	EventDelayedWorkNotYetAvailable, EventCancelRefusedLiveClaim, EventGraphNodeConflict, EventAttachmentKeptFirstCommitAt}

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
		case r.ErrGraphNodeConflict:
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
	case r.CancelQueuedWorkBatch:
		if i, ok := s.batch(o.SessionID, o.BatchID); ok && !s.batches[i].free(now) {
			ev = append(ev, EventCancelRefusedLiveClaim)
		}
	}
	return ev
}
