package model

import (
	"cmp"
	"fmt"
	"hash/maphash"
	"maps"
	"reflect"
	"slices"
	"strings"

	"github.com/storecheck/storecheck/spec"
	cli "github.com/storecheck/storecheck/spec/client"
)

// Client is the client contract (spec/client) as a model. Where the seed
// is silent (spec/client's rule table says where), the model keeps every
// reading a backend may take and learns the backend's from its answers:
//
//   - the precision of kept times (client.time_precision and
//     client.unix_seconds): whole seconds, ms, µs or ns, learned from the
//     first time read back;
//   - which binding answers for a task (client.get_session.binding_choice):
//     four readings, narrowed by what get_session and bump_session_version
//     answer;
//   - the out-head preview (client.put_out_head.preview): learned per head
//     from the first read;
//   - which task kinds and verdict words a backend takes
//     (client.open_task.kind_words, client.settle_task.verdict_words):
//     learned per word from the first answer;
//   - event sequence numbers and fault ids (client.append_event.seq_increasing,
//     client.insert_fault.id_increasing): any increasing numbers, each learned
//     from its answer (Branch.Match); a lost answer leaves the number open
//     until a read shows it;
//   - which occurrence of a member named twice counts (client.envelope_task).
//
// The first branch of every step is the reference's reading, so Expect
// predicts the reference. Every time is kept in nanoseconds, as given; the
// store's own now is the nowMS the operation ran at.
type Client struct {
	// AtomicReads is a backend that reads task_is_known in one statement
	// or transaction (capability atomic_reads): it is judged as one read.
	AtomicReads bool
}

// Configure reads whether the backend reads atomically (capability
// atomic_reads).
func (m Client) Configure(caps spec.Capabilities) Model {
	m.AtomicReads = caps.AtomicReads
	return m
}

// ClientState is everything a client store holds, and what the model has
// learned of the backend's readings. It is immutable: a step copies the one
// map or slice it changes. Its hash is kept up to date as an XOR of
// per-entry hashes, so hashing a state costs nothing.
type ClientState struct {
	intents  cow[string, cintent]
	events   []cevent
	outHeads map[string]string // task -> the head put
	previews map[string]string // head -> the backend's preview of it
	prose    map[string]cprose
	config   map[string]string
	sessions map[string]csession
	bindings map[bindKey]cbinding
	tasks    cow[string, ctask]
	faults   []cfault
	// words are the task kinds ("kind:<word>") and verdicts
	// ("verdict:<word>") outside the contract's own words that the backend
	// has shown it takes (true) or refuses (false).
	words map[string]bool
	// The readings still possible: of the precision of rfc3339 times, of
	// unix-seconds times, of SESSION_ID_FOR_TASK, of a member named twice.
	prec, unixPrec, reads, env uint8
	// broken marks a state whose holes were bound to numbers that cannot
	// all be right (an event numbered below an earlier one): no answer
	// follows from it (see Bind).
	broken bool
	h      uint64
}

var clientSeed = maphash.MakeSeed()

func entryHash[K, V comparable](domain string, k K, v V) uint64 {
	return maphash.Comparable(clientSeed, struct {
		D string
		K K
		V V
	}{domain, k, v})
}

func (Client) Contract() spec.Contract { return cli.Contract }

func (Client) Init() State {
	return ClientState{prec: precAll, unixPrec: precAll, reads: readAll, env: envAll}
}

func (s ClientState) Equal(o State) bool {
	t, ok := o.(ClientState)
	return ok && s.h == t.h && s.prec == t.prec && s.unixPrec == t.unixPrec && s.reads == t.reads && s.env == t.env && s.broken == t.broken &&
		sameCow(s.intents, t.intents) && sameSlice(s.events, t.events) &&
		sameMap(s.outHeads, t.outHeads) && sameMap(s.previews, t.previews) && sameMap(s.prose, t.prose) &&
		sameMap(s.config, t.config) && sameMap(s.sessions, t.sessions) && sameMap(s.bindings, t.bindings) &&
		sameCow(s.tasks, t.tasks) && sameSlice(s.faults, t.faults) && sameMap(s.words, t.words)
}

// sameMap and sameSlice compare two parts of states; a part a step did not
// change is shared between the states (copy on write), and is then the same
// without a look at its entries.
func sameMap[K, V comparable](a, b map[K]V) bool {
	return len(a) == len(b) && (len(a) == 0 || reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer() || maps.Equal(a, b))
}

func sameSlice[V comparable](a, b []V) bool {
	return len(a) == len(b) && (len(a) == 0 || &a[0] == &b[0] || slices.Equal(a, b))
}

func (s ClientState) Hash() uint64 {
	readings := uint64(s.prec) | uint64(s.unixPrec)<<8 | uint64(s.reads)<<16 | uint64(s.env)<<24
	if s.broken {
		readings |= 1 << 32
	}
	return s.h ^ (readings+1)*0x9e3779b97f4a7c15
}

// put returns a copy of m with k set to v (or deleted when v is nil), and
// the XOR that moves a state's hash accordingly.
func put[K, V comparable](domain string, m map[K]V, k K, v *V) (map[K]V, uint64) {
	next := maps.Clone(m)
	if next == nil {
		next = map[K]V{}
	}
	var dh uint64
	if old, ok := m[k]; ok {
		dh ^= entryHash(domain, k, old)
	}
	if v == nil {
		delete(next, k)
	} else {
		next[k] = *v
		dh ^= entryHash(domain, k, *v)
	}
	return next, dh
}

// cowHash is the XOR that moves a state's hash when m's k is set to v
// (deleted when v is nil).
func cowHash[K, V comparable](domain string, m cow[K, V], k K, v *V) uint64 {
	var dh uint64
	if old, ok := m.get(k); ok {
		dh ^= entryHash(domain, k, old)
	}
	if v != nil {
		dh ^= entryHash(domain, k, *v)
	}
	return dh
}

func (s ClientState) withIntent(id string, in *cintent) ClientState {
	s.h ^= cowHash("intent", s.intents, id, in)
	s.intents = s.intents.with(id, in)
	return s
}

func (s ClientState) withSession(id string, v csession) ClientState {
	var dh uint64
	s.sessions, dh = put("session", s.sessions, id, &v)
	s.h ^= dh
	return s
}

func (s ClientState) withTask(id string, t ctask) ClientState {
	s.h ^= cowHash("task", s.tasks, id, &t)
	s.tasks = s.tasks.with(id, &t)
	return s
}

func (s ClientState) withPreview(head, preview string) ClientState {
	var dh uint64
	s.previews, dh = put("preview", s.previews, head, &preview)
	s.h ^= dh
	return s
}

func (s ClientState) withWord(key string, taken bool) ClientState {
	var dh uint64
	s.words, dh = put("word", s.words, key, &taken)
	s.h ^= dh
	return s
}

// withBindings applies changes to the bindings in one copy.
func (s ClientState) withBindings(changes map[bindKey]cbinding) ClientState {
	next := maps.Clone(s.bindings)
	if next == nil {
		next = map[bindKey]cbinding{}
	}
	for k, v := range changes {
		if old, ok := next[k]; ok {
			s.h ^= entryHash("binding", k, old)
		}
		next[k] = v
		s.h ^= entryHash("binding", k, v)
	}
	s.bindings = next
	return s
}

// withReads narrows the readings of SESSION_ID_FOR_TASK to mask. Once no
// bound_at reading is left, no binding keeps its bound_at: states that
// differ only there are one state.
func (s ClientState) withReads(mask uint8) ClientState {
	had := s.reads&readsBoundAt != 0
	s.reads &= mask
	if had && s.reads&readsBoundAt == 0 {
		changes := map[bindKey]cbinding{}
		for k, b := range s.bindings {
			if b.BoundAt != 0 {
				b.BoundAt = 0
				changes[k] = b
			}
		}
		if len(changes) > 0 {
			s = s.withBindings(changes)
		}
	}
	return s
}

func (s ClientState) withPrec(mask uint8) ClientState     { s.prec &= mask; return s }
func (s ClientState) withUnixPrec(mask uint8) ClientState { s.unixPrec &= mask; return s }
func (s ClientState) withEnv(mask uint8) ClientState      { s.env &= mask; return s }

// withEvent returns s with the i-th event e (appended when i is the length).
func (s ClientState) withEvent(i int, e cevent) ClientState {
	if i < len(s.events) {
		s.h ^= entryHash("event", i, s.events[i])
		s.events = slices.Clone(s.events)
		s.events[i] = e
	} else {
		s.events = append(slices.Clip(s.events), e)
	}
	s.h ^= entryHash("event", i, e)
	return s
}

func (s ClientState) withFault(i int, f cfault) ClientState {
	if i < len(s.faults) {
		s.h ^= entryHash("fault", i, s.faults[i])
		s.faults = slices.Clone(s.faults)
		s.faults[i] = f
	} else {
		s.faults = append(slices.Clip(s.faults), f)
	}
	s.h ^= entryHash("fault", i, f)
	return s
}

func (s ClientState) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "readings: time precision %s, unix-seconds precision %s, binding choice %s, duplicate members %s\n",
		precNames(s.prec), precNames(s.unixPrec), readNames(s.reads), envNames(s.env))
	for _, id := range slices.Sorted(s.intents.keys()) {
		in := s.intents.at(id)
		fmt.Fprintf(&b, "intent %s: %s attempt %d next %s order %d error %q envelope %s", id, in.State, in.Attempt, nsString(in.Next), in.Order, in.LastError, in.Env)
		if in.HasReceipt {
			fmt.Fprintf(&b, " receipt %s", in.Receipt)
		}
		b.WriteString("\n")
	}
	for i, e := range s.events {
		seq := "?"
		if e.Seq != 0 {
			seq = fmt.Sprint(e.Seq)
		}
		fmt.Fprintf(&b, "event %d (seq %s): %s %s\n", i+1, seq, e.Type, e.Data)
	}
	for _, k := range slices.Sorted(maps.Keys(s.outHeads)) {
		fmt.Fprintf(&b, "out_head %s: %q\n", k, s.outHeads[k])
	}
	for _, k := range slices.Sorted(maps.Keys(s.previews)) {
		fmt.Fprintf(&b, "preview of %q: %q\n", k, s.previews[k])
	}
	for _, k := range slices.Sorted(maps.Keys(s.prose)) {
		fmt.Fprintf(&b, "prose %s: %q spec %q\n", k, s.prose[k].Prose, s.prose[k].SpecHash)
	}
	for _, k := range slices.Sorted(maps.Keys(s.config)) {
		fmt.Fprintf(&b, "config %s: %q\n", k, s.config[k])
	}
	for _, id := range slices.Sorted(maps.Keys(s.sessions)) {
		v := s.sessions[id]
		fmt.Fprintf(&b, "session %q: (%d, %d) agent %s resource %s ref %s\n", id, v.Generation, v.Seq, v.Agent, v.Resource, v.BackendRef)
	}
	for _, k := range slices.SortedFunc(maps.Keys(s.bindings), func(a, b bindKey) int {
		return cmp.Or(cmp.Compare(a.Session, b.Session), cmp.Compare(a.Task, b.Task))
	}) {
		bd := s.bindings[k]
		fmt.Fprintf(&b, "binding %q -> %s: open %v seq %d", k.Session, k.Task, bd.Open, bd.Seq)
		if bd.BoundAt != 0 {
			fmt.Fprintf(&b, " bound_at %s", nsString(bd.BoundAt))
		}
		b.WriteString("\n")
	}
	for _, id := range slices.Sorted(s.tasks.keys()) {
		t := s.tasks.at(id)
		fmt.Fprintf(&b, "task %s: %s kind %q parent %q hop %d attempt %d\n", id, t.State, t.Kind, t.Parent, t.Hop, t.Attempt)
	}
	for _, k := range slices.Sorted(maps.Keys(s.words)) {
		fmt.Fprintf(&b, "word %s taken: %v\n", k, s.words[k])
	}
	for _, f := range s.faults {
		id := "?"
		if f.Known {
			id = fmt.Sprint(f.ID)
		}
		fmt.Fprintf(&b, "fault %s: task %s kind %s\n", id, f.TaskID, f.Kind)
	}
	return b.String()
}

// Step answers every branch the contract allows op from st; a branch whose
// answer the seed fixes names the rule of spec/client's table that fixes it
// (ruleOf), so a report says which rule a backend broke.
func (m Client) Step(st State, op spec.Op, nowMS int64) []Branch {
	if st.(ClientState).broken {
		return []Branch{{Outcome: Fail("inconsistent"), Next: st, Rule: cli.RuleEventSeq,
			Match: func(Outcome) (map[string]string, bool) { return nil, false }}}
	}
	bs := m.step(st, op, nowMS)
	for i := range bs {
		if bs[i].Rule == "" {
			bs[i].Rule = ruleOf(op, bs[i].Outcome)
		}
	}
	return bs
}

// ruleOf is the rule of the client's table that fixes out as op's answer.
func ruleOf(op spec.Op, out Outcome) string {
	acted := out.Result == true
	pick := func(yes, no string) string {
		if acted {
			return yes
		}
		return no
	}
	switch op.(type) {
	case cli.EnqueueIntent:
		return pick("client.enqueue_intent.new", "client.enqueue_intent.existing_untouched")
	case cli.GetIntent:
		return "client.intent.read"
	case cli.DueIntents:
		return "client.due_intents.order"
	case cli.FlushOrder:
		return "client.flush_order.now_and_batch"
	case cli.BumpIntent:
		return pick("client.bump_intent.refusal", "client.bump_intent.live_only")
	case cli.DeferIntent:
		return pick("client.defer_intent.keeps_attempt", "client.defer_intent.live_only")
	case cli.AcceptIntent:
		return pick("client.accept_intent.settles", "client.accept_intent.live_only")
	case cli.ExhaustIntent:
		return pick("client.exhaust_intent.settles", "client.exhaust_intent.live_only")
	case cli.DeleteIntent:
		return "client.delete_intent.removes"
	case cli.PendingIntentCount:
		return "client.pending_intent_count.live"
	case cli.EventHead:
		return cli.RuleEventHead
	case cli.PutOutHead, cli.GetOutHead:
		return "client.put_out_head.latest_wins"
	case cli.PutProse, cli.GetProse:
		return "client.put_prose.latest_wins"
	case cli.PutConfig, cli.GetConfig:
		return "client.put_config.latest_wins"
	case cli.UpsertSession:
		return "client.upsert_session.gate"
	case cli.BumpSessionVersion:
		return "client.bump_session_version.pair_only"
	case cli.GetSession:
		return "client.get_session.through_binding"
	case cli.BindTask, bindClose:
		return "client.bind_task.opens"
	case cli.ReleaseBinding:
		return "client.release_binding.once"
	case cli.ActiveSessions:
		return "client.active_sessions.claimed"
	case cli.OpenTask:
		return "client.open_task.new"
	case cli.SettleTask:
		return "client.settle_task.first_wins"
	case cli.GetTask:
		return "client.task.read"
	case cli.OpenTasks:
		return "client.open_tasks.order"
	case cli.TaskIsKnown, knownByBinding, knownByIntent:
		return "client.task_is_known.binding_or_intent"
	case cli.TaskAttempt:
		return "client.task_attempt.max"
	}
	return ""
}

// step dispatches op to its area's step (client_intents.go, client_events.go,
// client_caches.go, client_sessions.go, client_tasks.go, client_faults.go):
// the areas spec/suite splits the store into.
func (m Client) step(st State, op spec.Op, nowMS int64) []Branch {
	s := st.(ClientState)
	now := msNS(nowMS)
	for _, area := range []func(Client, ClientState, spec.Op, int64) ([]Branch, bool){
		Client.stepIntents, Client.stepEvents, Client.stepCaches, Client.stepSessions, Client.stepTasks, Client.stepFaults,
	} {
		if b, ok := area(m, s, op, now); ok {
			return b
		}
	}
	return One(s, Fail(spec.Kind("unknown_operation")))
}
