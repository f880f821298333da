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
	ruleMaxZero         = "runtime.claim_ready_queued_work.max_zero"
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
	// Text is Data as the state's canonical text has it (valueText),
	// made once when it is staged.
	Text        string
	Committed   bool
	CommittedAt int64
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
			fmt.Fprintf(b, "attachment %s session %s data %s", id, a.Session, a.Text)
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

// step dispatches op to its area's step (runtime_lease.go, runtime_queue.go,
// runtime_commit.go, runtime_graph.go, runtime_misc.go): the areas spec/suite
// splits the store into. A part of a split read (reads.go) is a step of its
// own.
func (m Runtime) step(s RuntimeState, op spec.Op, now int64) []Branch {
	if o, ok := op.(runtimePart); ok {
		return o.step(s, now)
	}
	for _, area := range []func(Runtime, RuntimeState, spec.Op, int64) ([]Branch, bool){
		Runtime.stepLease, Runtime.stepQueue, Runtime.stepCommit, Runtime.stepGraph, Runtime.stepMisc,
	} {
		if b, ok := area(m, s, op, now); ok {
			return b
		}
	}
	return One(s, Fail(spec.Kind("unknown_operation")))
}
