package model

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"hash/fnv"
	"hash/maphash"
	"maps"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/storecheck/storecheck/spec"
	c "github.com/storecheck/storecheck/spec/client"
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

// The precisions a backend may keep times at, as bits of a mask.
const (
	precMS uint8 = 1 << iota
	precS
	precUS
	precNS
	precAll = precMS | precS | precUS | precNS
)

// precisions are the precisions with their length in ns, the reference's
// (ms) first.
var precisions = []struct {
	bit uint8
	ns  int64
}{{precMS, 1e6}, {precS, 1e9}, {precUS, 1e3}, {precNS, 1}}

// The readings of SESSION_ID_FOR_TASK (client.get_session.binding_choice),
// as bits of a mask: the most recently opened binding or the latest
// bound_at, open bindings first or not. The reference's is the first.
const (
	readOpenFirstLatest uint8 = 1 << iota
	readOpenFirstBoundAt
	readLatest
	readBoundAt
	readAll      = readOpenFirstLatest | readOpenFirstBoundAt | readLatest | readBoundAt
	readsBoundAt = readOpenFirstBoundAt | readBoundAt
)

var readings = []uint8{readOpenFirstLatest, readOpenFirstBoundAt, readLatest, readBoundAt}

// The readings of an envelope that names causality or task twice
// (client.envelope_task): the first occurrence counts (SQLite's
// json_extract, the reference) or the last (serde_json).
const (
	envFirst uint8 = 1 << iota
	envLast
	envAll = envFirst | envLast
)

// cintent is one outbox row. Order is the row's place in enqueue order (the
// reference's rowid: a new row comes after every row present). It breaks
// ties in the due order, which lists live rows only, so a settled row keeps
// none (0): two orders of concurrent enqueues then lead to one state as soon
// as the order can no longer be seen, and the checker's search stays small.
type cintent struct {
	Env string
	// The task the envelope names (client.envelope_task) by its first and
	// by its last occurrence.
	TaskFirst, TaskLast   string
	NamesFirst, NamesLast bool
	Attempt               int64
	State                 c.IntentState
	Next                  int64
	Receipt               string
	HasReceipt            bool
	LastError             string
	Created               int64
	Updated               int64
	Order                 int64
}

// cevent is one event. Seq is 0 while the backend's number is not known
// (its append's answer was lost).
type cevent struct {
	Seq     int64
	Type    string
	Data    string
	Created int64
}

type cprose struct {
	Prose, SpecHash string
	Cached          int64
}

// csession is a session tuple.
type csession struct {
	Generation, Seq                                        uint64
	Agent, Delivery, Resource, Recovery, Desired, Observed string
	BackendRef                                             string
	Mismatch                                               int64
	Updated                                                int64
}

type bindKey struct{ Session, Task string }

// cbinding is a binding: whether it is open, its place in the order of
// openings of the task's bindings (only the order among one task's bindings
// is read), and its bound_at (kept only while a bound_at reading of
// SESSION_ID_FOR_TASK is possible).
type cbinding struct {
	Open    bool
	Seq     int64
	BoundAt int64
}

type ctask struct {
	Kind, Parent string
	Hop, Attempt int64
	State        c.TaskState
	Opened       int64
	Settled      int64
	IsSettled    bool
	// Order is the insertion order (rowid) among open records, which
	// open_tasks reads; a settled record keeps none (0).
	Order int64
}

// cfault is a fault; Known is false while the backend's id is not known
// (its insert's answer was lost).
type cfault struct {
	c.Fault
	Known     bool
	CreatedNS int64
}

// ClientState is everything a client store holds, and what the model has
// learned of the backend's readings. It is immutable: a step copies the one
// map or slice it changes. Its hash is kept up to date as an XOR of
// per-entry hashes, so hashing a state costs nothing.
type ClientState struct {
	intents  map[string]cintent
	events   []cevent
	outHeads map[string]string // task -> the head put
	previews map[string]string // head -> the backend's preview of it
	prose    map[string]cprose
	config   map[string]string
	sessions map[string]csession
	bindings map[bindKey]cbinding
	tasks    map[string]ctask
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

func (Client) Contract() spec.Contract { return c.Contract }

func (Client) Init() State {
	return ClientState{prec: precAll, unixPrec: precAll, reads: readAll, env: envAll}
}

func (s ClientState) Equal(o State) bool {
	t, ok := o.(ClientState)
	return ok && s.h == t.h && s.prec == t.prec && s.unixPrec == t.unixPrec && s.reads == t.reads && s.env == t.env && s.broken == t.broken &&
		sameMap(s.intents, t.intents) && sameSlice(s.events, t.events) &&
		sameMap(s.outHeads, t.outHeads) && sameMap(s.previews, t.previews) && sameMap(s.prose, t.prose) &&
		sameMap(s.config, t.config) && sameMap(s.sessions, t.sessions) && sameMap(s.bindings, t.bindings) &&
		sameMap(s.tasks, t.tasks) && sameSlice(s.faults, t.faults) && sameMap(s.words, t.words)
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

func (s ClientState) withIntent(id string, in *cintent) ClientState {
	var dh uint64
	s.intents, dh = put("intent", s.intents, id, in)
	s.h ^= dh
	return s
}

func (s ClientState) withSession(id string, v csession) ClientState {
	var dh uint64
	s.sessions, dh = put("session", s.sessions, id, &v)
	s.h ^= dh
	return s
}

func (s ClientState) withTask(id string, t ctask) ClientState {
	var dh uint64
	s.tasks, dh = put("task", s.tasks, id, &t)
	s.h ^= dh
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
	for _, id := range slices.Sorted(maps.Keys(s.intents)) {
		in := s.intents[id]
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
	for _, id := range slices.Sorted(maps.Keys(s.tasks)) {
		t := s.tasks[id]
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

func bitNames(mask uint8, names []string) string {
	var out []string
	for i, n := range names {
		if mask&(1<<i) != 0 {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, "|")
}

func precNames(m uint8) string { return bitNames(m, []string{"ms", "s", "µs", "ns"}) }
func readNames(m uint8) string {
	return bitNames(m, []string{"open-first latest opening", "open-first latest bound_at", "latest opening", "latest bound_at"})
}
func envNames(m uint8) string { return bitNames(m, []string{"first", "last"}) }

// Times are kept in nanoseconds since the epoch.

func nsOf(t time.Time) int64 { return t.UnixNano() }
func msNS(ms int64) int64    { return ms * 1e6 }

// cut is ns cut down to a whole multiple of d.
func cut(ns, d int64) int64 {
	r := ns % d
	if r < 0 {
		r += d
	}
	return ns - r
}

// at is a kept time read back at precision d: cut, in UTC.
func at(ns, d int64) time.Time { return time.Unix(0, cut(ns, d)).UTC() }

func nsString(ns int64) string { return at(ns, 1).Format(time.RFC3339Nano) }

// envelopeTask is the envelope's causality.task when it is a JSON string,
// by the first (last false) or the last occurrence of a member named twice.
func envelopeTask(env []byte, last bool) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(env))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return "", false
	}
	causality, ok := member(dec, "causality", last)
	if !ok {
		return "", false
	}
	dec = json.NewDecoder(bytes.NewReader(causality))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return "", false
	}
	task, ok := member(dec, "task", last)
	if !ok {
		return "", false
	}
	var t string
	if len(task) == 0 || task[0] != '"' || json.Unmarshal(task, &t) != nil {
		return "", false
	}
	return t, true
}

// member reads the rest of an object (its "{" read already) from dec and
// returns the value of its first (or last) member called name; false when it
// has none, or the object is not well formed.
func member(dec *json.Decoder, name string, last bool) (json.RawMessage, bool) {
	var found json.RawMessage
	ok := false
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return nil, false
		}
		var v json.RawMessage
		if dec.Decode(&v) != nil {
			return nil, false
		}
		if key == name && (last || !ok) {
			found, ok = v, true
			if !last {
				return found, true
			}
		}
	}
	return found, ok
}

// names reports whether the intent names task under the envelope readings
// of mask.
func (in cintent) names(task string, first bool) bool {
	if first {
		return in.NamesFirst && in.TaskFirst == task
	}
	return in.NamesLast && in.TaskLast == task
}

func (in cintent) value(id string, d int64) c.Intent {
	out := c.Intent{OpID: id, Envelope: spec.RawJSON(in.Env), Attempt: in.Attempt, State: in.State,
		NextAttemptAt: at(in.Next, d), LastError: in.LastError, CreatedAt: at(in.Created, d), UpdatedAt: at(in.Updated, d)}
	if in.HasReceipt {
		out.Receipt = spec.RawJSON(in.Receipt)
	}
	return out
}

func (in cintent) live() bool { return in.State == c.IntentPending || in.State == c.IntentRetrying }

func (t ctask) value(id string, d int64) c.Task {
	out := c.Task{TaskID: id, Kind: t.Kind, ParentTask: t.Parent, Hop: t.Hop, Attempt: t.Attempt, State: t.State, OpenedAt: at(t.Opened, d)}
	if t.IsSettled {
		st := at(t.Settled, d)
		out.SettledAt = &st
	}
	return out
}

func (v csession) record(id, task string, d int64) *c.SessionRecord {
	return &c.SessionRecord{SessionID: id, TaskID: task, VersionedSession: c.VersionedSession{
		Generation: v.Generation, Seq: v.Seq, AgentState: v.Agent, DeliveryState: v.Delivery, ResourceState: v.Resource,
		RecoverySubstate: v.Recovery, DesiredJSON: v.Desired, ObservedJSON: v.Observed, BackendRef: v.BackendRef,
		MismatchCount: v.Mismatch, UpdatedAt: at(v.Updated, d)}}
}

// due is the live intents due at nowNS in due order (next attempt time,
// creation time, enqueue order) at precision d, at most n of them.
func (s ClientState) due(nowNS int64, n int, d int64) []c.Intent {
	var ids []string
	for id, in := range s.intents {
		if in.live() && cut(in.Next, d) <= cut(nowNS, d) {
			ids = append(ids, id)
		}
	}
	slices.SortFunc(ids, func(a, b string) int {
		x, y := s.intents[a], s.intents[b]
		return cmp.Or(cmp.Compare(cut(x.Next, d), cut(y.Next, d)), cmp.Compare(cut(x.Created, d), cut(y.Created, d)), cmp.Compare(x.Order, y.Order))
	})
	var out []c.Intent
	for _, id := range ids[:min(n, len(ids))] {
		out = append(out, s.intents[id].value(id, d))
	}
	return out
}

// byPrecision is a read whose answer shows kept times: for each precision
// still possible in mask (the reference's first), the answer f gives at it,
// grouped, one branch per distinct answer, whose state (narrow) keeps the
// precisions that give it.
func byPrecision(s ClientState, mask uint8, learnKey string, rule string, f func(d int64) any) []Branch {
	type group struct {
		answer any
		bits   uint8
	}
	var groups []group
	for _, p := range precisions {
		if mask&p.bit == 0 {
			continue
		}
		a := f(p.ns)
		i := slices.IndexFunc(groups, func(g group) bool { return spec.SameResult(g.answer, a) })
		if i < 0 {
			groups = append(groups, group{answer: a})
			i = len(groups) - 1
		}
		groups[i].bits |= p.bit
	}
	if len(groups) == 1 {
		return One(s, OK(groups[0].answer))
	}
	var out []Branch
	for _, g := range groups {
		out = append(out, learning(s, OK(g.answer), rule, map[string]string{learnKey: strconv.Itoa(int(g.bits))}))
	}
	return out
}

// timed is byPrecision over the precision of rfc3339 times.
func (s ClientState) timed(f func(d int64) any) []Branch {
	return byPrecision(s, s.prec, learnPrec, c.RuleTimePrecision, f)
}

// What an answer teaches the model of the backend's readings, as values
// Bind takes beside the holes: a mask of precisions or readings still
// possible, or whether a word is taken.
const (
	learnPrec  = "learn:prec"
	learnUnix  = "learn:unix_prec"
	learnReads = "learn:reads"
	learnEnv   = "learn:env"
	learnWord  = "learn:word:"
)

// learning is a branch whose answer teaches the model a reading of the
// backend (a precision, a binding choice, whether a word is taken): its
// state is s, and what it learns is bound from the answer (Bind), so that
// an answer never seen (a lost reply) teaches nothing and forks no state.
func learning(s ClientState, out Outcome, rule string, learn map[string]string) Branch {
	return Branch{Outcome: out, Next: s, Rule: rule, Match: func(got Outcome) (map[string]string, bool) {
		if got.Kind != out.Kind || out.Kind == "" && !spec.SameResult(out.Result, got.Result) {
			return nil, false
		}
		return learn, true
	}}
}

// learned is s narrowed by what values teaches (see learning).
func (s ClientState) learned(values map[string]string) ClientState {
	mask := func(k string) (uint8, bool) {
		v, ok := values[k]
		if !ok {
			return 0, false
		}
		n, err := strconv.Atoi(v)
		return uint8(n), err == nil
	}
	if m, ok := mask(learnPrec); ok {
		s = s.withPrec(m)
	}
	if m, ok := mask(learnUnix); ok {
		s = s.withUnixPrec(m)
	}
	if m, ok := mask(learnReads); ok {
		s = s.withReads(m)
	}
	if m, ok := mask(learnEnv); ok {
		s = s.withEnv(m)
	}
	for k, v := range values {
		if w, ok := strings.CutPrefix(k, learnWord); ok {
			if taken, known := s.words[w]; known && taken != (v == "1") {
				s.broken = true
				continue
			}
			s = s.withWord(w, v == "1")
		}
	}
	if s.prec == 0 || s.unixPrec == 0 || s.reads == 0 || s.env == 0 {
		s.broken = true
	}
	return s
}

// firstPrec is the length of the first precision still possible in mask.
func firstPrec(mask uint8) int64 {
	for _, p := range precisions {
		if mask&p.bit != 0 {
			return p.ns
		}
	}
	return 1e6
}

// candidates are the sessions a task's session may be, under each reading
// of SESSION_ID_FOR_TASK still possible: session -> the readings that
// choose it. bound_at is compared to the second (the seed keeps it so), so
// bindings whose bound_at falls in one second tie and any of them may be
// chosen. order lists the sessions, the reference's choice first.
func (s ClientState) candidates(task string) (map[string]uint8, []string) {
	var keys []bindKey
	for k := range s.bindings {
		if k.Task == task {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		return nil, nil
	}
	slices.SortFunc(keys, func(a, b bindKey) int { return cmp.Compare(a.Session, b.Session) })
	out := map[string]uint8{}
	var order []string
	add := func(sess string, r uint8) {
		if _, ok := out[sess]; !ok {
			order = append(order, sess)
		}
		out[sess] |= r
	}
	for _, r := range readings {
		if s.reads&r == 0 {
			continue
		}
		set := keys
		if r == readOpenFirstLatest || r == readOpenFirstBoundAt {
			var open []bindKey
			for _, k := range keys {
				if s.bindings[k].Open {
					open = append(open, k)
				}
			}
			if len(open) > 0 {
				set = open
			}
		}
		if r&readsBoundAt != 0 {
			top := s.bindings[set[0]].BoundAt
			for _, k := range set {
				top = max(top, s.bindings[k].BoundAt)
			}
			for _, k := range set {
				if s.bindings[k].BoundAt == top {
					add(k.Session, r)
				}
			}
			continue
		}
		best := set[0]
		for _, k := range set {
			if s.bindings[k].Seq > s.bindings[best].Seq {
				best = k
			}
		}
		add(best.Session, r)
	}
	return out, order
}

// referenceSession is the task's session by the reference's reading.
func (s ClientState) referenceSession(task string) string {
	t := s
	t.reads = readOpenFirstLatest
	_, order := t.candidates(task)
	if len(order) == 0 {
		return ""
	}
	return order[0]
}

// openBinding opens (session, task) at boundAt and closes the session's
// other open binding; unchanged (and false) when the pair is open already.
func (s ClientState) openBinding(session, task string, boundAt int64) (ClientState, bool) {
	k := bindKey{session, task}
	if b, ok := s.bindings[k]; ok && b.Open {
		return s, false
	}
	changes := map[bindKey]cbinding{}
	for o, b := range s.bindings {
		if o.Session == session && o.Task != task && b.Open {
			b.Open = false
			changes[o] = b
		}
	}
	// The task's bindings keep their order of opening as ranks 1..n (the
	// pair opened now last), so that two histories that opened them in one
	// order are one state.
	var others []bindKey
	for o := range s.bindings {
		if o.Task == task && o != k {
			others = append(others, o)
		}
	}
	slices.SortFunc(others, func(a, b bindKey) int { return cmp.Compare(s.bindings[a].Seq, s.bindings[b].Seq) })
	for i, o := range others {
		b, ok := changes[o]
		if !ok {
			b = s.bindings[o]
		}
		if b.Seq != int64(i+1) {
			b.Seq = int64(i + 1)
			changes[o] = b
		}
	}
	// bound_at is read to the second (the seed keeps it so), and only while
	// a bound_at reading of SESSION_ID_FOR_TASK is possible.
	boundAt = cut(boundAt, 1e9)
	if s.reads&readsBoundAt == 0 {
		boundAt = 0
	}
	changes[k] = cbinding{Open: true, Seq: int64(len(others) + 1), BoundAt: boundAt}
	return s.withBindings(changes), true
}

// closeOthers closes the session's open bindings to other tasks than task.
func (s ClientState) closeOthers(session, task string) ClientState {
	changes := map[bindKey]cbinding{}
	for o, b := range s.bindings {
		if o.Session == session && o.Task != task && b.Open {
			b.Open = false
			changes[o] = b
		}
	}
	if len(changes) == 0 {
		return s
	}
	return s.withBindings(changes)
}

// otherOpenBinding reports whether the session has an open binding to
// another task than task.
func (s ClientState) otherOpenBinding(session, task string) bool {
	for k, b := range s.bindings {
		if k.Session == session && k.Task != task && b.Open {
			return true
		}
	}
	return false
}

func newer(gen, seq, storedGen, storedSeq uint64) bool {
	return gen > storedGen || gen == storedGen && seq > storedSeq
}

func invalid() Outcome { return Fail(c.ErrInvalidArgument) }

// knownByBinding and knownByIntent are the two statements task_is_known
// runs (client.task_is_known.two_statements): whether the task has or had a
// binding, and whether an intent names it. Split cuts a false answer into
// them.
type knownByBinding struct{ TaskID string }
type knownByIntent struct{ TaskID string }

// bindClose is the first of the two steps bind_task may take
// (client.bind_task.two_statements): the session's other open binding
// closed. The second is bind_task itself.
type bindClose struct{ SessionID, TaskID string }

func (knownByBinding) Name() string { return "task_is_known/bindings" }
func (knownByBinding) Result() any  { return false }
func (knownByIntent) Name() string  { return "task_is_known/intents" }
func (knownByIntent) Result() any   { return false }
func (bindClose) Name() string      { return "bind_task/close_others" }
func (bindClose) Result() any       { return nil }

// Parts are the steps of the client operations the seed does not run as one
// statement: task_is_known's two reads, and bind_task's close of the
// session's other binding and the bind.
func (m Client) Parts(op spec.Op) []spec.Op {
	switch o := op.(type) {
	case c.TaskIsKnown:
		if m.AtomicReads {
			return nil
		}
		return []spec.Op{knownByBinding{o.TaskID}, knownByIntent{o.TaskID}}
	case c.BindTask:
		return []spec.Op{bindClose{o.SessionID, o.TaskID}, o}
	}
	return nil
}

// Split cuts a false task_is_known into its two reads (a true one is true
// at the moment of the read that found it, since a binding is never
// removed, and is judged as one step), and a bind_task into its two steps.
func (m Client) Split(op spec.Op, got Outcome) ([]spec.Op, []Outcome, bool) {
	if got.Kind != "" {
		return nil, nil, false
	}
	switch o := op.(type) {
	case c.TaskIsKnown:
		if got.Result == false && !m.AtomicReads {
			return []spec.Op{knownByBinding{o.TaskID}, knownByIntent{o.TaskID}}, []Outcome{OK(false), OK(false)}, true
		}
	case c.BindTask:
		return []spec.Op{bindClose{o.SessionID, o.TaskID}, o}, []Outcome{OK(nil), got}, true
	}
	return nil, nil, false
}

// Keys partitions a client history. The store is many small stores side by
// side, and each key below names one of them:
//
//   - intent:<op_id>: the operations on one outbox row. The due scans and
//     pending_intent_count read every row: intent:*. A row's enqueue order
//     is global, but only those scans read it.
//   - names:<task>: the intents whose envelope names the task, which
//     task_is_known and task_attempt read. enqueue_intent carries the key of
//     the task its envelope names (by either occurrence of a member named
//     twice); the later operations on that row (a bump changes its attempt,
//     a delete its presence) carry only intent:<op_id>, which joins them to
//     that enqueue.
//   - events, faults: each one sequence, whose numbers every append takes
//     from: never split.
//   - out_head:<task>, prose:<role>, config:<key>: independent caches; but
//     the tasks that were put one head share its preview, which the model
//     learns (client.put_out_head.preview): put_out_head also carries
//     preview:<head>, and out_head joins it through the put.
//   - session:<id> and bound:<task>: a session's tuple and its bindings. An
//     operation that names both (upsert_session, bind_task,
//     release_binding) joins them. get_session and bump_session_version
//     name only the task: every session they may reach (under any reading
//     of SESSION_ID_FOR_TASK) is bound to the task by an earlier operation
//     of the history that named both, so they join that session through
//     it; closing a session's other binding (of another task) is joined
//     through that binding's opening, which named the session.
//     active_sessions reads every session and its open binding: session:*
//     (every binding's opening named its session).
//   - task:<id>: a task's record. open_tasks reads every record: task:*.
//     The kinds and verdicts a backend takes are learned per part.
//
// So a history splits at least into the outbox, the sessions, the tasks,
// the event log, the faults and each cache; and, without the scans, per
// row, per task and per group of sessions and tasks bound together.
func (Client) Keys(op spec.Op) []string {
	switch o := op.(type) {
	case c.EnqueueIntent:
		keys := []string{"intent:" + o.OpID}
		for _, last := range []bool{false, true} {
			if t, ok := envelopeTask(o.Envelope, last); ok && !slices.Contains(keys, "names:"+t) {
				keys = append(keys, "names:"+t)
			}
		}
		return keys
	case c.GetIntent:
		return []string{"intent:" + o.OpID}
	case c.BumpIntent:
		return []string{"intent:" + o.OpID}
	case c.DeferIntent:
		return []string{"intent:" + o.OpID}
	case c.AcceptIntent:
		return []string{"intent:" + o.OpID}
	case c.ExhaustIntent:
		return []string{"intent:" + o.OpID}
	case c.DeleteIntent:
		return []string{"intent:" + o.OpID}
	case c.TaskAttempt:
		return []string{"names:" + o.TaskID}
	case c.TaskIsKnown:
		return []string{"names:" + o.TaskID, "bound:" + o.TaskID}
	case knownByBinding:
		return []string{"bound:" + o.TaskID}
	case knownByIntent:
		return []string{"names:" + o.TaskID}
	case c.AppendEvent, c.EventsSince, c.EventHead:
		return []string{"events"}
	case c.InsertFault, c.ListFaults:
		return []string{"faults"}
	case c.PutOutHead:
		return []string{"out_head:" + o.TaskID, fmt.Sprintf("preview:%q", o.Head)}
	case c.GetOutHead:
		return []string{"out_head:" + o.TaskID}
	case c.PutProse:
		return []string{"prose:" + o.Role}
	case c.GetProse:
		return []string{"prose:" + o.Role}
	case c.PutConfig:
		return []string{"config:" + o.Key}
	case c.GetConfig:
		return []string{"config:" + o.Key}
	case c.UpsertSession:
		return []string{"session:" + c.SessionIDFor(o.TaskID, o.Version.BackendRef), "bound:" + o.TaskID}
	case c.BindTask:
		return []string{"session:" + o.SessionID, "bound:" + o.TaskID}
	case bindClose:
		return []string{"session:" + o.SessionID, "bound:" + o.TaskID}
	case c.ReleaseBinding:
		return []string{"session:" + o.SessionID, "bound:" + o.TaskID}
	case c.GetSession:
		return []string{"bound:" + o.TaskID}
	case c.BumpSessionVersion:
		return []string{"bound:" + o.TaskID}
	case c.OpenTask:
		return []string{"task:" + o.Causality.Task}
	case c.SettleTask:
		return []string{"task:" + o.TaskID}
	case c.GetTask:
		return []string{"task:" + o.TaskID}
	case c.DueIntents, c.FlushOrder, c.PendingIntentCount:
		return []string{"intent:*"}
	case c.ActiveSessions:
		return []string{"session:*"}
	case c.OpenTasks:
		return []string{"task:*"}
	}
	return nil
}

// payload is the branches of an operation handed, as field, text that is
// not JSON where the contract keeps JSON (client.payload_json): refused
// (the reference's reading), or kept verbatim, acted's branches. A backend
// takes one way for a field; the model learns it from the first answer that
// shows it (an acted answer, or the refusal). An answer that finds nothing
// to act on (false) shows neither, and is allowed either way
// (client.refusal_order).
func payload(s ClientState, field string, acted []Branch) []Branch {
	key := "payload:" + field
	verbatim, known := s.word(key)
	var out []Branch
	if !known || !verbatim {
		out = append(out, learning(s, invalid(), c.RulePayloadJSON, map[string]string{learnWord + key: "0"}))
	}
	for _, b := range acted {
		if b.Outcome.Result == false {
			b.Rule = c.RuleRefusalOrder
			out = append(out, b)
			continue
		}
		if known && !verbatim {
			continue
		}
		if !known {
			b.Next = b.Next.(ClientState).withWord(key, true)
		}
		if b.Rule == "" {
			b.Rule = c.RulePayloadJSON
		}
		out = append(out, b)
	}
	return out
}

// Step answers every branch the contract allows op from st; a branch whose
// answer the seed fixes names the rule of spec/client's table that fixes it
// (ruleOf), so a report says which rule a backend broke.
func (m Client) Step(st State, op spec.Op, nowMS int64) []Branch {
	if st.(ClientState).broken {
		return []Branch{{Outcome: Fail("inconsistent"), Next: st, Rule: c.RuleEventSeq,
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
	case c.EnqueueIntent:
		return pick("client.enqueue_intent.new", "client.enqueue_intent.existing_untouched")
	case c.GetIntent:
		return "client.intent.read"
	case c.DueIntents:
		return "client.due_intents.order"
	case c.FlushOrder:
		return "client.flush_order.now_and_batch"
	case c.BumpIntent:
		return pick("client.bump_intent.refusal", "client.bump_intent.live_only")
	case c.DeferIntent:
		return pick("client.defer_intent.keeps_attempt", "client.defer_intent.live_only")
	case c.AcceptIntent:
		return pick("client.accept_intent.settles", "client.accept_intent.live_only")
	case c.ExhaustIntent:
		return pick("client.exhaust_intent.settles", "client.exhaust_intent.live_only")
	case c.DeleteIntent:
		return "client.delete_intent.removes"
	case c.PendingIntentCount:
		return "client.pending_intent_count.live"
	case c.EventHead:
		return c.RuleEventHead
	case c.PutOutHead, c.GetOutHead:
		return "client.put_out_head.latest_wins"
	case c.PutProse, c.GetProse:
		return "client.put_prose.latest_wins"
	case c.PutConfig, c.GetConfig:
		return "client.put_config.latest_wins"
	case c.UpsertSession:
		return "client.upsert_session.gate"
	case c.BumpSessionVersion:
		return "client.bump_session_version.pair_only"
	case c.GetSession:
		return "client.get_session.through_binding"
	case c.BindTask, bindClose:
		return "client.bind_task.opens"
	case c.ReleaseBinding:
		return "client.release_binding.once"
	case c.ActiveSessions:
		return "client.active_sessions.claimed"
	case c.OpenTask:
		return "client.open_task.new"
	case c.SettleTask:
		return "client.settle_task.first_wins"
	case c.GetTask:
		return "client.task.read"
	case c.OpenTasks:
		return "client.open_tasks.order"
	case c.TaskIsKnown, knownByBinding, knownByIntent:
		return "client.task_is_known.binding_or_intent"
	case c.TaskAttempt:
		return "client.task_attempt.max"
	}
	return ""
}

func (m Client) step(st State, op spec.Op, nowMS int64) []Branch {
	s := st.(ClientState)
	now := msNS(nowMS)
	switch o := op.(type) {
	// ----- the outbox -----
	case c.EnqueueIntent:
		if !json.Valid(o.Envelope) {
			return payload(s, "envelope", m.enqueue(s, o, now))
		}
		return m.enqueue(s, o, now)

	case c.GetIntent:
		in, ok := s.intents[o.OpID]
		if !ok {
			return One(s, OK((*c.Intent)(nil)))
		}
		return s.timed(func(d int64) any { v := in.value(o.OpID, d); return &v })

	case c.DueIntents:
		return s.timed(func(d int64) any { return s.due(nsOf(o.Now), c.EffectiveLimit(o.Limit), d) })

	case c.FlushOrder:
		return s.timed(func(d int64) any { return s.due(now, c.FlushBatchSize, d) })

	case c.BumpIntent:
		in, ok := s.intents[o.OpID]
		if !ok || !in.live() {
			return One(s, OK(false))
		}
		in.Attempt++
		in.State, in.Next, in.LastError, in.Updated = c.IntentRetrying, nsOf(o.NextAttemptAt), o.LastError, now
		return One(s.withIntent(o.OpID, &in), OK(true))

	case c.DeferIntent:
		in, ok := s.intents[o.OpID]
		if !ok || !in.live() {
			return One(s, OK(false))
		}
		in.State, in.Next, in.LastError, in.Updated = c.IntentRetrying, nsOf(o.NextAttemptAt), o.LastError, now
		return One(s.withIntent(o.OpID, &in), OK(true))

	case c.AcceptIntent:
		acted := func() []Branch {
			in, ok := s.intents[o.OpID]
			if !ok || !in.live() {
				return One(s, OK(false))
			}
			in.State, in.Receipt, in.HasReceipt, in.Updated, in.Order = c.IntentAccepted, string(o.Receipt), true, now, 0
			return One(s.withIntent(o.OpID, &in), OK(true))
		}
		if !json.Valid(o.Receipt) {
			return payload(s, "receipt", acted())
		}
		return acted()

	case c.ExhaustIntent:
		in, ok := s.intents[o.OpID]
		if !ok || !in.live() {
			return One(s, OK(false))
		}
		in.State, in.LastError, in.Updated, in.Order = c.IntentExhausted, o.LastError, now, 0
		return One(s.withIntent(o.OpID, &in), OK(true))

	case c.DeleteIntent:
		if _, ok := s.intents[o.OpID]; !ok {
			return One(s, OK(false))
		}
		return One(s.withIntent(o.OpID, nil), OK(true))

	case c.PendingIntentCount:
		var n int64
		for _, in := range s.intents {
			if in.live() {
				n++
			}
		}
		return One(s, OK(n))

	// ----- the event log -----
	case c.AppendEvent:
		e := cevent{Type: o.Type, Data: string(o.Data), Created: now}
		if !json.Valid(o.Data) {
			return payload(s, "data", []Branch{s.appendEvent(e)})
		}
		return []Branch{s.appendEvent(e)}

	case c.EventsSince:
		var out []Branch
		for _, g := range precGroups(s.prec, len(s.events), func(i int) int64 { return s.events[i].Created }) {
			d := firstPrec(g)
			out = append(out, Branch{Outcome: OK(s.guessEvents(o.Seq, o.Limit, d)), Next: s, Rule: c.RuleEventsSince,
				Match: func(got Outcome) (map[string]string, bool) {
					evs, ok := got.Result.([]c.Event)
					if got.Kind != "" || !ok && got.Result != nil {
						return nil, false
					}
					t, ok := s.judgeEventsSince(o.Seq, o.Limit, evs, d)
					if !ok {
						return nil, false
					}
					values := holesBound(s, t)
					values[learnPrec] = strconv.Itoa(int(g))
					return values, true
				}})
		}
		return out

	case c.EventHead:
		if len(s.events) == 0 {
			return One(s, OK(int64(0)))
		}
		last := len(s.events) - 1
		if e := s.events[last]; e.Seq != 0 {
			return One(s, OK(e.Seq))
		}
		return []Branch{{Outcome: OK(s.guessSeq(last)), Next: s, Rule: c.RuleEventHead, Match: func(got Outcome) (map[string]string, bool) {
			seq, ok := got.Result.(int64)
			if got.Kind != "" || !ok {
				return nil, false
			}
			t, ok := s.bindEvent(last, seq)
			if !ok {
				return nil, false
			}
			return holesBound(s, t), true
		}}}

	// ----- caches -----
	case c.PutOutHead:
		head := o.Head
		var dh uint64
		s.outHeads, dh = put("out_head", s.outHeads, o.TaskID, &head)
		s.h ^= dh
		return One(s, OK(nil))

	case c.GetOutHead:
		head, ok := s.outHeads[o.TaskID]
		if !ok {
			return One(s, OK((*string)(nil)))
		}
		if p, ok := s.previews[head]; ok {
			return One(s, OK(&p))
		}
		ref := c.HeadPreview(head)
		return []Branch{{Outcome: OK(&ref), Next: s, Rule: c.RuleHeadPreview, Match: func(got Outcome) (map[string]string, bool) {
			p, ok := got.Result.(*string)
			if got.Kind != "" || !ok || p == nil {
				return nil, false
			}
			return map[string]string{previewHole(head): *p}, true
		}}}

	case c.PutProse:
		p := cprose{Prose: o.Prose, SpecHash: o.SpecHash, Cached: now}
		var dh uint64
		s.prose, dh = put("prose", s.prose, o.Role, &p)
		s.h ^= dh
		return One(s, OK(nil))

	case c.GetProse:
		p, ok := s.prose[o.Role]
		if !ok {
			return One(s, OK((*c.Prose)(nil)))
		}
		return s.timed(func(d int64) any { return &c.Prose{Prose: p.Prose, SpecHash: p.SpecHash, CachedAt: at(p.Cached, d)} })

	case c.PutConfig:
		v := o.Value
		var dh uint64
		s.config, dh = put("config", s.config, o.Key, &v)
		s.h ^= dh
		return One(s, OK(nil))

	case c.GetConfig:
		if v, ok := s.config[o.Key]; ok {
			return One(s, OK(&v))
		}
		return One(s, OK((*string)(nil)))

	// ----- sessions and bindings -----
	case c.UpsertSession:
		v := o.Version
		id := c.SessionIDFor(o.TaskID, v.BackendRef)
		if cur, ok := s.sessions[id]; ok && !newer(v.Generation, v.Seq, cur.Generation, cur.Seq) {
			return One(s, OK(false))
		}
		s = s.withSession(id, csession{Generation: v.Generation, Seq: v.Seq, Agent: v.AgentState, Delivery: v.DeliveryState,
			Resource: v.ResourceState, Recovery: v.RecoverySubstate, Desired: v.DesiredJSON, Observed: v.ObservedJSON,
			BackendRef: v.BackendRef, Mismatch: v.MismatchCount, Updated: nsOf(v.UpdatedAt)})
		s, _ = s.openBinding(id, o.TaskID, nsOf(v.UpdatedAt))
		return One(s, OK(true))

	case c.BumpSessionVersion:
		return s.bumpSession(o, now)

	case c.GetSession:
		return s.getSession(o.TaskID)

	case c.BindTask:
		next, opened := s.openBinding(o.SessionID, o.TaskID, now)
		return One(next, OK(opened))

	case bindClose:
		return One(s.closeOthers(o.SessionID, o.TaskID), OK(nil))

	case c.ReleaseBinding:
		k := bindKey{o.SessionID, o.TaskID}
		b, ok := s.bindings[k]
		if !ok || !b.Open {
			return One(s, OK(false))
		}
		b.Open = false
		return One(s.withBindings(map[bindKey]cbinding{k: b}), OK(true))

	case c.ActiveSessions:
		var out []c.LiveSession
		for _, id := range slices.Sorted(maps.Keys(s.sessions)) {
			v := s.sessions[id]
			recoverable := v.Agent == c.AgentReady || v.Agent == c.AgentIdle
			if !(recoverable || v.Agent == c.AgentBooting && v.Resource != c.ResourceClosed) {
				continue
			}
			l := c.LiveSession{SessionID: id, Suspended: v.Resource == c.ResourceClosed}
			for k, b := range s.bindings {
				if k.Session == id && b.Open {
					l.TaskID = k.Task
				}
			}
			out = append(out, l)
		}
		return One(s, OK(out))

	// ----- tasks -----
	case c.OpenTask:
		return s.openTask(o, now)

	case c.SettleTask:
		return s.settleTask(o, now)

	case c.GetTask:
		t, ok := s.tasks[o.TaskID]
		if !ok {
			return One(s, OK((*c.Task)(nil)))
		}
		return s.timed(func(d int64) any { v := t.value(o.TaskID, d); return &v })

	case c.OpenTasks:
		var ids []string
		for id, t := range s.tasks {
			if !t.IsSettled {
				ids = append(ids, id)
			}
		}
		return s.timed(func(d int64) any {
			slices.SortFunc(ids, func(a, b string) int {
				x, y := s.tasks[a], s.tasks[b]
				return cmp.Or(cmp.Compare(cut(x.Opened, d), cut(y.Opened, d)), cmp.Compare(x.Order, y.Order))
			})
			var out []c.Task
			for _, id := range ids[:min(len(ids), c.EffectiveLimit(o.Limit))] {
				out = append(out, s.tasks[id].value(id, d))
			}
			return out
		})

	case c.TaskIsKnown:
		for k := range s.bindings {
			if k.Task == o.TaskID {
				return One(s, OK(true))
			}
		}
		return s.byEnvelope(func(first bool) any {
			for _, in := range s.intents {
				if in.names(o.TaskID, first) {
					return true
				}
			}
			return false
		})

	case knownByBinding:
		for k := range s.bindings {
			if k.Task == o.TaskID {
				return One(s, OK(true))
			}
		}
		return One(s, OK(false))

	case knownByIntent:
		return s.byEnvelope(func(first bool) any {
			for _, in := range s.intents {
				if in.names(o.TaskID, first) {
					return true
				}
			}
			return false
		})

	case c.TaskAttempt:
		return s.byEnvelope(func(first bool) any {
			var attempt int64
			for _, in := range s.intents {
				if in.names(o.TaskID, first) {
					attempt = max(attempt, in.Attempt)
				}
			}
			return attempt
		})

	// ----- faults -----
	case c.InsertFault:
		f := o.Fault
		f.ID = 0
		cf := cfault{Fault: f, CreatedNS: nsOf(f.CreatedAt)}
		cf.CreatedAt = time.Time{}
		i := len(s.faults)
		next := s.withFault(i, cf)
		return []Branch{{Outcome: OK(s.guessFaultID(i)), Next: next, Rule: c.RuleFaultID, Match: func(got Outcome) (map[string]string, bool) {
			id, ok := got.Result.(int64)
			if got.Kind != "" || !ok {
				return nil, false
			}
			t, ok := next.bindFault(i, id)
			if !ok {
				return nil, false
			}
			return holesBound(next, t), true
		}}}

	case c.ListFaults:
		var idx []int
		for i, f := range s.faults {
			if f.TaskID == o.TaskID {
				idx = append(idx, i)
			}
		}
		var out []Branch
		for _, g := range precGroups(s.unixPrec, len(idx), func(i int) int64 { return s.faults[idx[i]].CreatedNS }) {
			d := firstPrec(g)
			out = append(out, Branch{Outcome: OK(s.guessFaults(o.TaskID, d)), Next: s, Rule: "client.list_faults.order",
				Match: func(got Outcome) (map[string]string, bool) {
					fs, ok := got.Result.([]c.Fault)
					if got.Kind != "" || !ok && got.Result != nil {
						return nil, false
					}
					t, ok := s.judgeFaults(idx, fs, d)
					if !ok {
						return nil, false
					}
					values := holesBound(s, t)
					values[learnUnix] = strconv.Itoa(int(g))
					return values, true
				}})
		}
		return out
	}
	return One(s, Fail(spec.Kind("unknown_operation")))
}

// byEnvelope is a read that depends on which occurrence of a member named
// twice counts (client.envelope_task): one branch per distinct answer.
func (s ClientState) byEnvelope(f func(first bool) any) []Branch {
	var a, b any
	if s.env&envFirst != 0 {
		a = f(true)
	}
	if s.env&envLast != 0 {
		b = f(false)
	}
	switch {
	case s.env&envLast == 0:
		return One(s, OK(a))
	case s.env&envFirst == 0 || spec.SameResult(a, b):
		return One(s, OK(b))
	}
	return []Branch{
		learning(s, OK(a), c.RuleEnvelopeTask, map[string]string{learnEnv: strconv.Itoa(int(envFirst))}),
		learning(s, OK(b), c.RuleEnvelopeTask, map[string]string{learnEnv: strconv.Itoa(int(envLast))}),
	}
}

func (Client) enqueue(s ClientState, o c.EnqueueIntent, now int64) []Branch {
	if _, ok := s.intents[o.OpID]; ok {
		return One(s, OK(false))
	}
	var order int64
	for _, in := range s.intents {
		if in.live() {
			order = max(order, in.Order)
		}
	}
	in := cintent{Env: string(o.Envelope), State: c.IntentPending, Next: now, Created: now, Updated: now, Order: order + 1}
	in.TaskFirst, in.NamesFirst = envelopeTask(o.Envelope, false)
	in.TaskLast, in.NamesLast = envelopeTask(o.Envelope, true)
	return One(s.withIntent(o.OpID, &in), OK(true))
}

// ----- events and faults: numbers the backend chooses -----

// fits reports whether v may be the number at index i of a sequence of n
// numbers (num: a number, and whether it is known): greater than every
// known number before i, less than every known number after it.
func fits(v int64, n, i int, num func(int) (int64, bool)) bool {
	for j := i - 1; j >= 0; j-- {
		if w, ok := num(j); ok {
			if v <= w {
				return false
			}
			break
		}
	}
	for j := i + 1; j < n; j++ {
		if w, ok := num(j); ok {
			if v >= w {
				return false
			}
			break
		}
	}
	return true
}

func (s ClientState) eventSeq(i int) (int64, bool) { return s.events[i].Seq, s.events[i].Seq != 0 }

// appendEvent is the branch of an append: any positive sequence number
// greater than every known one (client.append_event.seq_increasing). The
// state it leaves for a lost answer keeps the number open.
func (s ClientState) appendEvent(e cevent) Branch {
	i := len(s.events)
	next := s.withEvent(i, e)
	return Branch{Outcome: OK(s.guessSeq(i)), Next: next, Rule: c.RuleEventSeq, Match: func(got Outcome) (map[string]string, bool) {
		seq, ok := got.Result.(int64)
		if got.Kind != "" || !ok {
			return nil, false
		}
		t, ok := next.bindEvent(i, seq)
		if !ok {
			return nil, false
		}
		return holesBound(next, t), true
	}}
}

// bindEvent is s with the i-th event's number v, when v fits.
func (s ClientState) bindEvent(i int, v int64) (ClientState, bool) {
	e := s.events[i]
	if e.Seq != 0 {
		return s, e.Seq == v
	}
	if v <= 0 || !fits(v, len(s.events), i, s.eventSeq) {
		return s, false
	}
	e.Seq = v
	return s.withEvent(i, e), true
}

// guessSeq is the number the reference gives the i-th event: one more than
// the one before.
func (s ClientState) guessSeq(i int) int64 {
	var seq int64
	for j := 0; j <= i && j < len(s.events); j++ {
		if s.events[j].Seq != 0 {
			seq = s.events[j].Seq
		} else {
			seq++
		}
	}
	if i >= len(s.events) {
		seq += int64(i - len(s.events) + 1)
	}
	return seq
}

// guessEvents is what the reference answers events_since(seq, limit), with
// times at precision d.
func (s ClientState) guessEvents(seq int64, limit uint32, d int64) []c.Event {
	var out []c.Event
	for i, e := range s.events {
		n := s.guessSeq(i)
		if n > seq && len(out) < c.EffectiveLimit(limit) {
			out = append(out, c.Event{Seq: n, Type: e.Type, Data: spec.RawJSON(e.Data), CreatedAt: at(e.Created, d)})
		}
	}
	return out
}

// judgeEventsSince is whether got may answer events_since(q, limit) from s
// with times at precision d (client.events_since.after_seq,
// client.events_since.limit), and s with the numbers it shows of events
// whose number was open bound.
func (s ClientState) judgeEventsSince(q int64, limit uint32, got []c.Event, d int64) (ClientState, bool) {
	n, m := len(s.events), len(got)
	countOK := func(avail int) bool {
		switch {
		case limit == 0:
			return m <= avail
		case limit <= 100:
			return m == min(int(limit), avail)
		}
		return m >= min(100, avail) && m <= min(int(limit), avail)
	}
	if m == 0 {
		// No event after q, or a limit that took none: every known number
		// at or below q, unless the limit allows an empty answer.
		if limit == 0 {
			return s, true
		}
		for _, e := range s.events {
			if e.Seq > q {
				return s, false
			}
		}
		return s, true
	}
	for k := 0; k+m <= n; k++ {
		if next, ok := s.alignEvents(k, q, got, d); ok && countOK(n-k) {
			return next, true
		}
	}
	return s, false
}

// alignEvents is whether got is the events from index k on, with times at
// precision d, every event before k numbered at or below q, and the state
// with their numbers bound.
func (s ClientState) alignEvents(k int, q int64, got []c.Event, d int64) (ClientState, bool) {
	for j := 0; j < k; j++ {
		if s.events[j].Seq > q {
			return s, false
		}
	}
	t := s
	for i, g := range got {
		e := t.events[k+i]
		if g.Seq <= q || g.Type != e.Type || !spec.SameResult(g.Data, spec.RawJSON(e.Data)) || !g.CreatedAt.Equal(at(e.Created, d)) {
			return s, false
		}
		next, ok := t.bindEvent(k+i, g.Seq)
		if !ok {
			return s, false
		}
		t = next
	}
	return t, true
}

func (s ClientState) faultID(i int) (int64, bool) { return s.faults[i].ID, s.faults[i].Known }

// bindFault is s with the i-th fault's id v, when v fits
// (client.insert_fault.id_increasing).
func (s ClientState) bindFault(i int, v int64) (ClientState, bool) {
	f := s.faults[i]
	if f.Known {
		return s, f.ID == v
	}
	if !fits(v, len(s.faults), i, s.faultID) {
		return s, false
	}
	f.ID, f.Known = v, true
	return s.withFault(i, f), true
}

func (s ClientState) guessFaultID(i int) int64 {
	var id int64
	for j := 0; j < i && j < len(s.faults); j++ {
		if s.faults[j].Known {
			id = s.faults[j].ID
		} else {
			id++
		}
	}
	return id + 1
}

func (f cfault) value(id int64, d int64) c.Fault {
	v := f.Fault
	v.ID, v.CreatedAt = id, at(f.CreatedNS, d)
	return v
}

// guessFaults is what the reference answers list_faults(task), with times at
// precision d.
func (s ClientState) guessFaults(task string, d int64) []c.Fault {
	var out []c.Fault
	for i, f := range s.faults {
		if f.TaskID == task {
			id := f.ID
			if !f.Known {
				id = s.guessFaultID(i)
			}
			out = append(out, f.value(id, d))
		}
	}
	return out
}

// judgeFaults is whether got may answer list_faults of the task whose
// faults are at idx, with times at precision d (client.list_faults.order),
// and s with the open ids it shows bound.
func (s ClientState) judgeFaults(idx []int, got []c.Fault, d int64) (ClientState, bool) {
	if len(idx) != len(got) {
		return s, false
	}
	t := s
	for n, i := range idx {
		f, g := t.faults[i], got[n]
		if !spec.SameResult(g, f.value(g.ID, d)) {
			return s, false
		}
		next, ok := t.bindFault(i, g.ID)
		if !ok {
			return s, false
		}
		t = next
	}
	return t, true
}

// precGroups splits the precisions of mask into classes under which n times
// (time(i)) read back alike: a read of them cannot tell the precisions of
// one class apart, so they share a branch. The reference's first.
func precGroups(mask uint8, n int, time func(int) int64) []uint8 {
	var groups []uint8
	var reps []int64
	for _, p := range precisions {
		if mask&p.bit == 0 {
			continue
		}
		found := false
		for g, rep := range reps {
			same := true
			for i := 0; i < n && same; i++ {
				same = cut(time(i), rep) == cut(time(i), p.ns)
			}
			if same {
				groups[g] |= p.bit
				found = true
				break
			}
		}
		if !found {
			groups = append(groups, p.bit)
			reps = append(reps, p.ns)
		}
	}
	return groups
}

// previewHole is the hole of the backend's preview of head, until a read
// shows it (client.put_out_head.preview).
func previewHole(head string) string {
	h := fnv.New64a()
	h.Write([]byte(head))
	return Hole("preview", int64(h.Sum64()>>2))
}

// holesBound are the values t binds to the holes of s: the numbers of the
// events and faults open in s and known in t.
func holesBound(s, t ClientState) map[string]string {
	out := map[string]string{}
	for i, e := range s.events {
		if e.Seq == 0 && t.events[i].Seq != 0 {
			out[Hole("event", int64(i))] = strconv.FormatInt(t.events[i].Seq, 10)
		}
	}
	for i, f := range s.faults {
		if !f.Known && t.faults[i].Known {
			out[Hole("fault", int64(i))] = strconv.FormatInt(t.faults[i].ID, 10)
		}
	}
	return out
}

// Bind fills the holes values binds: the i-th event's number (hole "event
// i"), the i-th fault's id ("fault i"), the preview of a head ("preview
// ..."). A value that contradicts what s knows (a number taken by another
// answer, numbers out of order) leaves a broken state, from which no answer
// follows: an order of the operations that placed an answer where it cannot
// be.
func (s ClientState) Bind(values map[string]string) State {
	for k, v := range values {
		kind, n, ok := parseHole(k)
		if !ok {
			continue
		}
		switch kind {
		case "event", "fault":
			x, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				s.broken = true
				continue
			}
			if kind == "event" && int(n) < len(s.events) {
				e := s.events[n]
				switch {
				case e.Seq == 0:
					e.Seq = x
					s = s.withEvent(int(n), e)
				case e.Seq != x:
					s.broken = true
				}
			}
			if kind == "fault" && int(n) < len(s.faults) {
				f := s.faults[n]
				switch {
				case !f.Known:
					f.ID, f.Known = x, true
					s = s.withFault(int(n), f)
				case f.ID != x:
					s.broken = true
				}
			}
		case "preview":
			for _, head := range s.outHeads {
				if previewHole(head) != k {
					continue
				}
				if p, ok := s.previews[head]; ok {
					s.broken = s.broken || p != v
				} else {
					s = s.withPreview(head, v)
				}
			}
		}
	}
	if !s.ordered() {
		s.broken = true
	}
	return s.learned(values)
}

// ordered reports whether the known event numbers and fault ids grow with
// their place.
func (s ClientState) ordered() bool {
	var last int64
	for _, e := range s.events {
		if e.Seq != 0 {
			if e.Seq <= last {
				return false
			}
			last = e.Seq
		}
	}
	first := true
	for _, f := range s.faults {
		if f.Known {
			if !first && f.ID <= last {
				return false
			}
			last, first = f.ID, false
		}
	}
	return true
}

// parseHole reads a hole back: its kind and number.
func parseHole(h string) (string, int64, bool) {
	body, ok := strings.CutPrefix(h, "⟨?")
	if !ok {
		return "", 0, false
	}
	body, ok = strings.CutSuffix(body, "⟩")
	kind, num, found := strings.Cut(body, " ")
	if !ok || !found {
		return "", 0, false
	}
	n, err := strconv.ParseInt(num, 10, 64)
	return kind, n, err == nil
}

// ----- sessions: which binding answers for a task -----

// getSession is get_session: one branch per distinct answer the readings of
// SESSION_ID_FOR_TASK and the precisions of updated_at still possible give,
// the reference's first. Each branch keeps the readings and precisions that
// give its answer: the sessions that give one answer at the same precisions
// share a branch.
func (s ClientState) getSession(task string) []Branch {
	cands, order := s.candidates(task)
	if len(order) == 0 {
		return One(s, OK((*c.SessionRecord)(nil)))
	}
	type group struct {
		answer      *c.SessionRecord
		reads, prec uint8
	}
	var groups []group
	for _, sess := range order {
		v, ok := s.sessions[sess]
		var mine []group
		for _, p := range precisions {
			if s.unixPrec&p.bit == 0 {
				continue
			}
			var a *c.SessionRecord
			if ok {
				a = v.record(sess, task, p.ns)
			}
			if i := slices.IndexFunc(mine, func(g group) bool { return spec.SameResult(g.answer, a) }); i >= 0 {
				mine[i].prec |= p.bit
				continue
			}
			mine = append(mine, group{answer: a, reads: cands[sess], prec: p.bit})
		}
		for _, g := range mine {
			if i := slices.IndexFunc(groups, func(h group) bool { return h.prec == g.prec && spec.SameResult(h.answer, g.answer) }); i >= 0 {
				groups[i].reads |= g.reads
				continue
			}
			groups = append(groups, g)
		}
	}
	if len(groups) == 1 {
		g := groups[0]
		return One(s.withReads(g.reads).withUnixPrec(g.prec), OK(g.answer))
	}
	rule := c.RuleBindingChoice
	if len(order) == 1 {
		rule = c.RuleUnixSeconds
	}
	var out []Branch
	for _, g := range groups {
		out = append(out, learning(s, OK(g.answer), rule, map[string]string{learnReads: strconv.Itoa(int(g.reads)), learnUnix: strconv.Itoa(int(g.prec))}))
	}
	return out
}

// bumpSession is bump_session_version: one branch per session the task's
// session may be; the ones that answer false (the gate refused, or the
// session has no tuple) are one branch.
func (s ClientState) bumpSession(o c.BumpSessionVersion, now int64) []Branch {
	cands, order := s.candidates(o.TaskID)
	var out []Branch
	var refused uint8
	for _, sess := range order {
		cur, ok := s.sessions[sess]
		if !ok || !newer(o.Generation, o.Seq, cur.Generation, cur.Seq) {
			refused |= cands[sess]
			continue
		}
		cur.Generation, cur.Seq, cur.Updated = o.Generation, o.Seq, now
		out = append(out, Branch{Outcome: OK(true), Next: s.withReads(cands[sess]).withSession(sess, cur), Rule: c.RuleBindingChoice})
	}
	if len(order) == 0 {
		return One(s, OK(false))
	}
	if refused != 0 {
		b := learning(s, OK(false), c.RuleBindingChoice, map[string]string{learnReads: strconv.Itoa(int(refused))})
		if len(order) > 0 && cands[order[0]]&refused != 0 {
			out = append([]Branch{b}, out...)
		} else {
			out = append(out, b)
		}
	}
	if len(out) == 1 {
		out[0].Rule = ""
	}
	return out
}

// ----- tasks: the words a backend takes -----

// word is what s has learned of a word outside the contract's own: taken,
// and known.
func (s ClientState) word(key string) (taken, known bool) {
	taken, known = s.words[key]
	return taken, known
}

func (s ClientState) openTask(o c.OpenTask, now int64) []Branch {
	cz := o.Causality
	act := func(s ClientState) ClientState {
		if t, ok := s.tasks[cz.Task]; ok {
			t.Kind, t.Parent, t.Hop, t.Attempt = o.Kind, cz.ParentTask, int64(cz.Hop), max(t.Attempt, int64(cz.Attempt))
			return s.withTask(cz.Task, t)
		}
		var order int64
		for _, t := range s.tasks {
			if !t.IsSettled {
				order = max(order, t.Order)
			}
		}
		return s.withTask(cz.Task, ctask{Kind: o.Kind, Parent: cz.ParentTask, Hop: int64(cz.Hop), Attempt: int64(cz.Attempt),
			State: c.TaskPending, Opened: now, Order: order + 1})
	}
	if o.Kind == c.KindRoot || o.Kind == c.KindRelay {
		b := One(act(s), OK(true))
		if _, ok := s.tasks[cz.Task]; ok {
			b[0].Rule = c.RuleOpenTaskRefresh
		}
		return b
	}
	key := "kind:" + o.Kind
	taken, known := s.word(key)
	switch {
	case known && taken:
		return One(act(s), OK(true))
	case known:
		return Refused(s, c.RuleOpenTaskKinds, c.ErrInvalidArgument)
	}
	return []Branch{
		learning(s, invalid(), c.RuleOpenTaskKinds, map[string]string{learnWord + key: "0"}),
		{Outcome: OK(true), Next: act(s.withWord(key, true)), Rule: c.RuleOpenTaskKinds},
	}
}

func (s ClientState) settleTask(o c.SettleTask, now int64) []Branch {
	t, exists := s.tasks[o.TaskID]
	settled := exists && t.IsSettled
	act := func(s ClientState) []Branch {
		if settled {
			return One(s, OK(false))
		}
		t := t
		if !exists {
			t = ctask{Opened: now}
		}
		t.State, t.Settled, t.IsSettled, t.Order = o.State, now, true, 0
		b := One(s.withTask(o.TaskID, t), OK(true))
		if !exists {
			b[0].Rule = "client.settle_task.never_opened"
		}
		return b
	}
	if slices.Contains(c.TerminalTaskStates, o.State) {
		return act(s)
	}
	key := "verdict:" + string(o.State)
	taken, known := s.word(key)
	switch {
	case known && taken:
		return act(s)
	case known && settled:
		return []Branch{{Outcome: invalid(), Next: s, Rule: c.RuleRefusalOrder}, {Outcome: OK(false), Next: s, Rule: c.RuleRefusalOrder}}
	case known:
		return Refused(s, c.RuleSettleVerdictWords, c.ErrInvalidArgument)
	case settled:
		// The answer false does not tell whether the word is taken.
		return []Branch{learning(s, invalid(), c.RuleSettleVerdictWords, map[string]string{learnWord + key: "0"}),
			{Outcome: OK(false), Next: s, Rule: c.RuleRefusalOrder}}
	}
	b := act(s.withWord(key, true))
	b[0].Rule = c.RuleSettleVerdictWords
	return append([]Branch{learning(s, invalid(), c.RuleSettleVerdictWords, map[string]string{learnWord + key: "0"})}, b...)
}

// The rare client events the simulator must reach: each one a rule of the
// contract taken on its interesting branch.
const (
	EventVerdictContested     = "first verdict contested: a second settle refused"
	EventSettleBeforeOpen     = "settle racing open: a task settled before it was opened"
	EventOpenAfterSettle      = "a task opened after its verdict kept the verdict"
	EventSettledIntentTouched = "settled intent bumped or deferred without effect"
	EventRedeliveryKeptBudget = "redelivered intent kept its retry budget"
	EventDueSameMillisecond   = "intents due at the same millisecond"
	EventDueScanCut           = "a due scan stopped at its limit"
	EventDeferKeptAttempt     = "a defer kept the attempt"
	EventSessionGateEqual     = "session write refused by the gate: equal (generation, seq)"
	EventSessionGateOlder     = "session write refused by the gate: older (generation, seq)"
	EventNewerGenerationLower = "a newer generation won with a lower seq"
	EventRebindClosedOther    = "a rebind closed another binding"
	EventReleasedTwice        = "a binding released twice"
	EventSuspendedClaimed     = "a suspended session claimed"
	EventReopenKeptAttempt    = "a re-opened task kept its higher attempt"
)

// ClientEvents are the rare events, in a fixed order.
var ClientEvents = []string{EventVerdictContested, EventSettleBeforeOpen, EventOpenAfterSettle,
	EventSettledIntentTouched, EventRedeliveryKeptBudget, EventDueSameMillisecond, EventDueScanCut,
	EventDeferKeptAttempt, EventSessionGateEqual, EventSessionGateOlder, EventNewerGenerationLower,
	EventRebindClosedOther, EventReleasedTwice, EventSuspendedClaimed, EventReopenKeptAttempt}

// Events names the rare client events op reaches from s.
func (m Client) Events(st State, op spec.Op, nowMS int64, out Outcome) []string {
	s := st.(ClientState)
	if out.Kind != "" {
		return nil
	}
	var ev []string
	add := func(cond bool, e string) {
		if cond {
			ev = append(ev, e)
		}
	}
	gate := func(gen, seq uint64, cur csession) {
		add(gen == cur.Generation && seq == cur.Seq, EventSessionGateEqual)
		add(!newer(gen, seq, cur.Generation, cur.Seq) && (gen != cur.Generation || seq != cur.Seq), EventSessionGateOlder)
		add(gen > cur.Generation && seq < cur.Seq, EventNewerGenerationLower)
	}
	dueTies := func(due []c.Intent, limit int, all int) {
		for i := 1; i < len(due); i++ {
			if due[i].NextAttemptAt.Equal(due[i-1].NextAttemptAt) {
				add(true, EventDueSameMillisecond)
				break
			}
		}
		add(len(due) == limit && all > limit, EventDueScanCut)
	}
	d := firstPrec(s.prec)
	switch o := op.(type) {
	case c.SettleTask:
		t, ok := s.tasks[o.TaskID]
		add(ok && t.IsSettled, EventVerdictContested)
		add(!ok, EventSettleBeforeOpen)
	case c.OpenTask:
		t, ok := s.tasks[o.Causality.Task]
		add(ok && t.IsSettled, EventOpenAfterSettle)
		add(ok && t.Attempt > int64(o.Causality.Attempt), EventReopenKeptAttempt)
	case c.BumpIntent:
		in, ok := s.intents[o.OpID]
		add(ok && !in.live(), EventSettledIntentTouched)
	case c.DeferIntent:
		in, ok := s.intents[o.OpID]
		add(ok && !in.live(), EventSettledIntentTouched)
		add(ok && in.live() && in.Attempt > 0, EventDeferKeptAttempt)
	case c.EnqueueIntent:
		in, ok := s.intents[o.OpID]
		add(ok && in.Attempt > 0, EventRedeliveryKeptBudget)
	case c.DueIntents:
		due, _ := out.Result.([]c.Intent)
		dueTies(due, c.EffectiveLimit(o.Limit), len(s.due(nsOf(o.Now), c.MaxLimit+1, d)))
	case c.FlushOrder:
		due, _ := out.Result.([]c.Intent)
		dueTies(due, c.FlushBatchSize, len(s.due(msNS(nowMS), c.FlushBatchSize+1, d)))
	case c.UpsertSession:
		id := c.SessionIDFor(o.TaskID, o.Version.BackendRef)
		if cur, ok := s.sessions[id]; ok {
			gate(o.Version.Generation, o.Version.Seq, cur)
		}
		if b := s.bindings[bindKey{id, o.TaskID}]; out.Result == true && !b.Open {
			add(s.otherOpenBinding(id, o.TaskID), EventRebindClosedOther)
		}
	case c.BumpSessionVersion:
		if cur, ok := s.sessions[s.referenceSession(o.TaskID)]; ok {
			gate(o.Generation, o.Seq, cur)
		}
	case c.BindTask:
		add(out.Result == true && s.otherOpenBinding(o.SessionID, o.TaskID), EventRebindClosedOther)
	case c.ReleaseBinding:
		b, ok := s.bindings[bindKey{o.SessionID, o.TaskID}]
		add(ok && !b.Open, EventReleasedTwice)
	case c.ActiveSessions:
		live, _ := out.Result.([]c.LiveSession)
		for _, l := range live {
			if l.Suspended {
				add(true, EventSuspendedClaimed)
				break
			}
		}
	}
	return ev
}
