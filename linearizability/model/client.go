package model

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"maps"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/storecheck/storecheck/spec"
	c "github.com/storecheck/storecheck/spec/client"
)

// Client is the client contract (spec/client) as a model. Every time the
// store keeps is kept as unix milliseconds, as the contract says; the
// store's own now is the nowMS the operation ran at.
type Client struct{}

// cintent is one outbox row. Order is the row's place in enqueue order (the
// reference's rowid: a new row comes after every row present). It breaks
// ties in the due order, which lists live rows only, so a settled row keeps
// none (0): two orders of concurrent enqueues then lead to one state as soon
// as the order can no longer be seen, and the checker's search stays small.
type cintent struct {
	Env        string
	Task       string // causality.task of the envelope, when it names one
	NamesTask  bool
	Attempt    int64
	State      c.IntentState
	Next       int64
	Receipt    string
	HasReceipt bool
	LastError  string
	Created    int64
	Updated    int64
	Order      int64
}

type cevent struct {
	Type    string
	Data    string
	Created int64
}

type cprose struct {
	Prose, SpecHash string
	Cached          int64
}

// csession is a session tuple (VersionedSession with its time in ms).
type csession struct {
	Generation, Seq                                        uint64
	Agent, Delivery, Resource, Recovery, Desired, Observed string
	BackendRef                                             string
	Mismatch                                               int64
	Updated                                                int64
}

type bindKey struct{ Session, Task string }

// cbinding is a binding: whether it is open, and its place in the order of
// openings of the task's bindings (the reference's bound_seq is global, but
// only the order among one task's bindings is ever read: a session has at
// most one open binding). When it was bound or released is never read
// back, so it is not kept.
type cbinding struct {
	Open bool
	Seq  int64
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

type cfault struct {
	c.Fault
	CreatedMS int64
}

// ClientState is everything a client store holds. It is immutable: a step
// copies the one map or slice it changes. Its hash is kept up to date as an
// XOR of per-entry hashes, so hashing a state costs nothing.
type ClientState struct {
	intents  map[string]cintent
	events   []cevent
	outHeads map[string]string
	prose    map[string]cprose
	config   map[string]string
	sessions map[string]csession
	bindings map[bindKey]cbinding
	tasks    map[string]ctask
	faults   []cfault
	h        uint64
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

func (Client) Init() State { return ClientState{} }

func (s ClientState) Equal(o State) bool {
	t, ok := o.(ClientState)
	return ok && s.h == t.h &&
		sameMap(s.intents, t.intents) && sameSlice(s.events, t.events) &&
		sameMap(s.outHeads, t.outHeads) && sameMap(s.prose, t.prose) && sameMap(s.config, t.config) &&
		sameMap(s.sessions, t.sessions) && sameMap(s.bindings, t.bindings) &&
		sameMap(s.tasks, t.tasks) && sameSlice(s.faults, t.faults)
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

func (s ClientState) Hash() uint64 { return s.h }

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

func (s ClientState) String() string {
	var b strings.Builder
	for _, id := range slices.Sorted(maps.Keys(s.intents)) {
		in := s.intents[id]
		fmt.Fprintf(&b, "intent %s: %s attempt %d next %s order %d error %q envelope %s", id, in.State, in.Attempt, msString(in.Next), in.Order, in.LastError, in.Env)
		if in.HasReceipt {
			fmt.Fprintf(&b, " receipt %s", in.Receipt)
		}
		b.WriteString("\n")
	}
	for i, e := range s.events {
		fmt.Fprintf(&b, "event %d: %s %s\n", i+1, e.Type, e.Data)
	}
	for _, k := range slices.Sorted(maps.Keys(s.outHeads)) {
		fmt.Fprintf(&b, "out_head %s: %q\n", k, s.outHeads[k])
	}
	for _, k := range slices.Sorted(maps.Keys(s.prose)) {
		fmt.Fprintf(&b, "prose %s: %q spec %q\n", k, s.prose[k].Prose, s.prose[k].SpecHash)
	}
	for _, k := range slices.Sorted(maps.Keys(s.config)) {
		fmt.Fprintf(&b, "config %s: %q\n", k, s.config[k])
	}
	for _, id := range slices.Sorted(maps.Keys(s.sessions)) {
		v := s.sessions[id]
		fmt.Fprintf(&b, "session %s: (%d, %d) agent %s resource %s ref %s\n", id, v.Generation, v.Seq, v.Agent, v.Resource, v.BackendRef)
	}
	for _, k := range slices.SortedFunc(maps.Keys(s.bindings), func(a, b bindKey) int {
		return cmp.Or(cmp.Compare(a.Session, b.Session), cmp.Compare(a.Task, b.Task))
	}) {
		bd := s.bindings[k]
		fmt.Fprintf(&b, "binding %s -> %s: open %v seq %d\n", k.Session, k.Task, bd.Open, bd.Seq)
	}
	for _, id := range slices.Sorted(maps.Keys(s.tasks)) {
		t := s.tasks[id]
		fmt.Fprintf(&b, "task %s: %s kind %q parent %q hop %d attempt %d\n", id, t.State, t.Kind, t.Parent, t.Hop, t.Attempt)
	}
	for _, f := range s.faults {
		fmt.Fprintf(&b, "fault %d: task %s kind %s\n", f.ID, f.TaskID, f.Kind)
	}
	if b.Len() == 0 {
		return "empty"
	}
	return b.String()
}

func msString(v int64) string { return at(v).Format(time.RFC3339Nano) }

// at is a kept millisecond read back, as the contract says: UTC.
func at(v int64) time.Time { return time.UnixMilli(v).UTC() }

// envelopeTask is the envelope's causality.task when it is a JSON string.
// A member named twice counts at its first occurrence, as SQLite's
// json_extract (the reference's) reads it; the contract does not say.
func envelopeTask(env []byte) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(env))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return "", false
	}
	causality, ok := member(dec, "causality")
	if !ok || causality != json.Delim('{') {
		return "", false
	}
	task, ok := member(dec, "task")
	t, isString := task.(string)
	return t, ok && isString
}

// member reads the rest of an object (its "{" read already) from dec up to
// its first member called name, and returns the first token of its value
// (false when it has no such member).
func member(dec *json.Decoder, name string) (json.Token, bool) {
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return nil, false
		}
		if key == name {
			tok, err := dec.Token()
			return tok, err == nil
		}
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return nil, false
		}
	}
	return nil, false
}

func (in cintent) value(id string) c.Intent {
	out := c.Intent{OpID: id, Envelope: spec.RawJSON(in.Env), Attempt: in.Attempt, State: in.State,
		NextAttemptAt: at(in.Next), LastError: in.LastError, CreatedAt: at(in.Created), UpdatedAt: at(in.Updated)}
	if in.HasReceipt {
		out.Receipt = spec.RawJSON(in.Receipt)
	}
	return out
}

func (in cintent) live() bool { return in.State == c.IntentPending || in.State == c.IntentRetrying }

func (t ctask) value(id string) c.Task {
	out := c.Task{TaskID: id, Kind: t.Kind, ParentTask: t.Parent, Hop: t.Hop, Attempt: t.Attempt, State: t.State, OpenedAt: at(t.Opened)}
	if t.IsSettled {
		st := at(t.Settled)
		out.SettledAt = &st
	}
	return out
}

// due is the live intents due at nowMS in due order (next attempt time,
// creation time, enqueue order), at most n of them.
func (s ClientState) due(nowMS int64, n int) []c.Intent {
	var ids []string
	for id, in := range s.intents {
		if in.live() && in.Next <= nowMS {
			ids = append(ids, id)
		}
	}
	slices.SortFunc(ids, func(a, b string) int {
		x, y := s.intents[a], s.intents[b]
		return cmp.Or(cmp.Compare(x.Next, y.Next), cmp.Compare(x.Created, y.Created), cmp.Compare(x.Order, y.Order))
	})
	var out []c.Intent
	for _, id := range ids[:min(n, len(ids))] {
		out = append(out, s.intents[id].value(id))
	}
	return out
}

// sessionFor is the session of the task (see Bindings in spec/client): its
// latest open binding's, else its latest binding's; "" when it has none.
func (s ClientState) sessionFor(task string) string {
	var best bindKey
	var bb cbinding
	found := false
	for k, b := range s.bindings {
		if k.Task != task {
			continue
		}
		if !found || b.Open && !bb.Open || b.Open == bb.Open && b.Seq > bb.Seq {
			best, bb, found = k, b, true
		}
	}
	return best.Session
}

// openBinding opens (session, task) and closes the session's other open
// binding; unchanged (and false) when the pair is open already.
func (s ClientState) openBinding(session, task string) (ClientState, bool) {
	k := bindKey{session, task}
	if b, ok := s.bindings[k]; ok && b.Open {
		return s, false
	}
	changes := map[bindKey]cbinding{}
	for o, b := range s.bindings {
		if o.Session == session && o.Task != task && b.Open {
			changes[o] = cbinding{Open: false, Seq: b.Seq}
		}
	}
	var seq int64
	for o, b := range s.bindings {
		if o.Task == task {
			seq = max(seq, b.Seq)
		}
	}
	changes[k] = cbinding{Open: true, Seq: seq + 1}
	return s.withBindings(changes), true
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

// Keys partitions a client history. The store is many small stores side by
// side, and each key below names one of them:
//
//   - intent:<op_id>: the operations on one outbox row. The due scans and
//     pending_intent_count read every row: intent:*. A row's enqueue order
//     is global, but only those scans read it.
//   - names:<task>: the intents whose envelope names the task, which
//     task_is_known and task_attempt read. enqueue_intent carries the key of
//     the task its envelope names; the later operations on that row (a bump
//     changes its attempt, a delete its presence) carry only intent:<op_id>,
//     which joins them to that enqueue.
//   - events, faults: each one sequence, whose numbers every append takes
//     from: never split.
//   - out_head:<task>, prose:<role>, config:<key>: independent caches.
//   - session:<id> and bound:<task>: a session's tuple and its bindings. An
//     operation that names both (upsert_session, bind_task,
//     release_binding) joins them. get_session and bump_session_version
//     name only the task: the session they reach is bound to the task by
//     an earlier operation of the history that named both, so they join
//     that session through it; closing a session's other binding (of
//     another task) is joined through that binding's opening, which named
//     the session. active_sessions reads every session and its open
//     binding: session:* (every binding's opening named its session).
//   - task:<id>: a task's record. open_tasks reads every record: task:*.
//
// So a history splits at least into the outbox, the sessions, the tasks,
// the event log, the faults and each cache; and, without the scans, per
// row, per task and per group of sessions and tasks bound together.
func (Client) Keys(op spec.Op) []string {
	switch o := op.(type) {
	case c.EnqueueIntent:
		keys := []string{"intent:" + o.OpID}
		if t, ok := envelopeTask(o.Envelope); ok {
			keys = append(keys, "names:"+t)
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
	case c.AppendEvent, c.EventsSince, c.EventHead:
		return []string{"events"}
	case c.InsertFault, c.ListFaults:
		return []string{"faults"}
	case c.PutOutHead:
		return []string{"out_head:" + o.TaskID}
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

func (Client) Step(st State, op spec.Op, nowMS int64) []Branch {
	s := st.(ClientState)
	switch o := op.(type) {
	// ----- the outbox -----
	case c.EnqueueIntent:
		if !json.Valid(o.Envelope) {
			return One(s, invalid())
		}
		if _, ok := s.intents[o.OpID]; ok {
			return One(s, OK(false))
		}
		var order int64
		for _, in := range s.intents {
			if in.live() {
				order = max(order, in.Order)
			}
		}
		task, names := envelopeTask(o.Envelope)
		in := cintent{Env: string(o.Envelope), Task: task, NamesTask: names, State: c.IntentPending,
			Next: nowMS, Created: nowMS, Updated: nowMS, Order: order + 1}
		return One(s.withIntent(o.OpID, &in), OK(true))

	case c.GetIntent:
		if in, ok := s.intents[o.OpID]; ok {
			v := in.value(o.OpID)
			return One(s, OK(&v))
		}
		return One(s, OK((*c.Intent)(nil)))

	case c.DueIntents:
		return One(s, OK(s.due(o.Now.UnixMilli(), c.EffectiveLimit(o.Limit))))

	case c.FlushOrder:
		return One(s, OK(s.due(nowMS, c.FlushBatchSize)))

	case c.BumpIntent:
		in, ok := s.intents[o.OpID]
		if !ok || !in.live() {
			return One(s, OK(false))
		}
		in.Attempt++
		in.State, in.Next, in.LastError, in.Updated = c.IntentRetrying, o.NextAttemptAt.UnixMilli(), o.LastError, nowMS
		return One(s.withIntent(o.OpID, &in), OK(true))

	case c.DeferIntent:
		in, ok := s.intents[o.OpID]
		if !ok || !in.live() {
			return One(s, OK(false))
		}
		in.State, in.Next, in.LastError, in.Updated = c.IntentRetrying, o.NextAttemptAt.UnixMilli(), o.LastError, nowMS
		return One(s.withIntent(o.OpID, &in), OK(true))

	case c.AcceptIntent:
		if !json.Valid(o.Receipt) {
			return One(s, invalid())
		}
		in, ok := s.intents[o.OpID]
		if !ok || !in.live() {
			return One(s, OK(false))
		}
		in.State, in.Receipt, in.HasReceipt, in.Updated, in.Order = c.IntentAccepted, string(o.Receipt), true, nowMS, 0
		return One(s.withIntent(o.OpID, &in), OK(true))

	case c.ExhaustIntent:
		in, ok := s.intents[o.OpID]
		if !ok || !in.live() {
			return One(s, OK(false))
		}
		in.State, in.LastError, in.Updated, in.Order = c.IntentExhausted, o.LastError, nowMS, 0
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
		if !json.Valid(o.Data) {
			return One(s, invalid())
		}
		e := cevent{Type: o.Type, Data: string(o.Data), Created: nowMS}
		seq := int64(len(s.events)) + 1
		s.events = append(slices.Clip(s.events), e)
		s.h ^= entryHash("event", seq, e)
		return One(s, OK(seq))

	case c.EventsSince:
		var out []c.Event
		for i := max(o.Seq, 0); i < int64(len(s.events)) && len(out) < c.EffectiveLimit(o.Limit); i++ {
			e := s.events[i]
			out = append(out, c.Event{Seq: i + 1, Type: e.Type, Data: spec.RawJSON(e.Data), CreatedAt: at(e.Created)})
		}
		return One(s, OK(out))

	case c.EventHead:
		return One(s, OK(int64(len(s.events))))

	// ----- caches -----
	case c.PutOutHead:
		head := c.HeadPreview(o.Head)
		var dh uint64
		s.outHeads, dh = put("out_head", s.outHeads, o.TaskID, &head)
		s.h ^= dh
		return One(s, OK(nil))

	case c.GetOutHead:
		if v, ok := s.outHeads[o.TaskID]; ok {
			return One(s, OK(&v))
		}
		return One(s, OK((*string)(nil)))

	case c.PutProse:
		p := cprose{Prose: o.Prose, SpecHash: o.SpecHash, Cached: nowMS}
		var dh uint64
		s.prose, dh = put("prose", s.prose, o.Role, &p)
		s.h ^= dh
		return One(s, OK(nil))

	case c.GetProse:
		if p, ok := s.prose[o.Role]; ok {
			return One(s, OK(&c.Prose{Prose: p.Prose, SpecHash: p.SpecHash, CachedAt: at(p.Cached)}))
		}
		return One(s, OK((*c.Prose)(nil)))

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
			BackendRef: v.BackendRef, Mismatch: v.MismatchCount, Updated: v.UpdatedAt.UnixMilli()})
		s, _ = s.openBinding(id, o.TaskID)
		return One(s, OK(true))

	case c.BumpSessionVersion:
		id := s.sessionFor(o.TaskID)
		cur, ok := s.sessions[id]
		if id == "" || !ok || !newer(o.Generation, o.Seq, cur.Generation, cur.Seq) {
			return One(s, OK(false))
		}
		cur.Generation, cur.Seq, cur.Updated = o.Generation, o.Seq, nowMS
		return One(s.withSession(id, cur), OK(true))

	case c.GetSession:
		id := s.sessionFor(o.TaskID)
		v, ok := s.sessions[id]
		if id == "" || !ok {
			return One(s, OK((*c.SessionRecord)(nil)))
		}
		return One(s, OK(&c.SessionRecord{SessionID: id, TaskID: o.TaskID, VersionedSession: c.VersionedSession{
			Generation: v.Generation, Seq: v.Seq, AgentState: v.Agent, DeliveryState: v.Delivery, ResourceState: v.Resource,
			RecoverySubstate: v.Recovery, DesiredJSON: v.Desired, ObservedJSON: v.Observed, BackendRef: v.BackendRef,
			MismatchCount: v.Mismatch, UpdatedAt: at(v.Updated)}}))

	case c.BindTask:
		next, opened := s.openBinding(o.SessionID, o.TaskID)
		return One(next, OK(opened))

	case c.ReleaseBinding:
		k := bindKey{o.SessionID, o.TaskID}
		b, ok := s.bindings[k]
		if !ok || !b.Open {
			return One(s, OK(false))
		}
		return One(s.withBindings(map[bindKey]cbinding{k: {Open: false, Seq: b.Seq}}), OK(true))

	case c.ActiveSessions:
		var out []c.LiveSession
		for _, id := range slices.Sorted(maps.Keys(s.sessions)) {
			v := s.sessions[id]
			recoverable := v.Agent == c.AgentReady || v.Agent == c.AgentIdle
			if !(recoverable || v.Agent == c.AgentBooting && v.Resource != c.ResourceClosed) {
				continue
			}
			l := c.LiveSession{SessionID: id, Suspended: v.Resource == c.ResourceClosed}
			var seq int64
			for k, b := range s.bindings {
				if k.Session == id && b.Open && b.Seq > seq {
					l.TaskID, seq = k.Task, b.Seq
				}
			}
			out = append(out, l)
		}
		return One(s, OK(out))

	// ----- tasks -----
	case c.OpenTask:
		if o.Kind != c.KindRoot && o.Kind != c.KindRelay {
			return One(s, invalid())
		}
		cz := o.Causality
		if t, ok := s.tasks[cz.Task]; ok {
			t.Kind, t.Parent, t.Hop, t.Attempt = o.Kind, cz.ParentTask, int64(cz.Hop), max(t.Attempt, int64(cz.Attempt))
			return One(s.withTask(cz.Task, t), OK(false))
		}
		var order int64
		for _, t := range s.tasks {
			if !t.IsSettled {
				order = max(order, t.Order)
			}
		}
		return One(s.withTask(cz.Task, ctask{Kind: o.Kind, Parent: cz.ParentTask, Hop: int64(cz.Hop), Attempt: int64(cz.Attempt),
			State: c.TaskPending, Opened: nowMS, Order: order + 1}), OK(true))

	case c.SettleTask:
		if !slices.Contains(c.TerminalTaskStates, o.State) {
			return One(s, invalid())
		}
		t, ok := s.tasks[o.TaskID]
		switch {
		case ok && t.IsSettled:
			return One(s, OK(false))
		case !ok:
			t = ctask{Opened: nowMS}
		}
		t.State, t.Settled, t.IsSettled, t.Order = o.State, nowMS, true, 0
		return One(s.withTask(o.TaskID, t), OK(true))

	case c.GetTask:
		if t, ok := s.tasks[o.TaskID]; ok {
			v := t.value(o.TaskID)
			return One(s, OK(&v))
		}
		return One(s, OK((*c.Task)(nil)))

	case c.OpenTasks:
		var ids []string
		for id, t := range s.tasks {
			if !t.IsSettled {
				ids = append(ids, id)
			}
		}
		slices.SortFunc(ids, func(a, b string) int {
			x, y := s.tasks[a], s.tasks[b]
			return cmp.Or(cmp.Compare(x.Opened, y.Opened), cmp.Compare(x.Order, y.Order))
		})
		var out []c.Task
		for _, id := range ids[:min(len(ids), c.EffectiveLimit(o.Limit))] {
			out = append(out, s.tasks[id].value(id))
		}
		return One(s, OK(out))

	case c.TaskIsKnown:
		for k := range s.bindings {
			if k.Task == o.TaskID {
				return One(s, OK(true))
			}
		}
		for _, in := range s.intents {
			if in.NamesTask && in.Task == o.TaskID {
				return One(s, OK(true))
			}
		}
		return One(s, OK(false))

	case c.TaskAttempt:
		var attempt int64
		for _, in := range s.intents {
			if in.NamesTask && in.Task == o.TaskID {
				attempt = max(attempt, in.Attempt)
			}
		}
		return One(s, OK(attempt))

	// ----- faults -----
	case c.InsertFault:
		f := o.Fault
		f.ID = int64(len(s.faults)) + 1
		cf := cfault{Fault: f, CreatedMS: f.CreatedAt.UnixMilli()}
		cf.CreatedAt = time.Time{}
		s.faults = append(slices.Clip(s.faults), cf)
		s.h ^= entryHash("fault", f.ID, cf)
		return One(s, OK(f.ID))

	case c.ListFaults:
		var out []c.Fault
		for _, f := range s.faults {
			if f.TaskID == o.TaskID {
				v := f.Fault
				v.CreatedAt = at(f.CreatedMS)
				out = append(out, v)
			}
		}
		return One(s, OK(out))
	}
	return One(s, Fail(spec.Kind("unknown_operation")))
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
		limit := c.EffectiveLimit(o.Limit)
		dueTies(out.Result.([]c.Intent), limit, len(s.due(o.Now.UnixMilli(), c.MaxLimit+1)))
	case c.FlushOrder:
		dueTies(out.Result.([]c.Intent), c.FlushBatchSize, len(s.due(nowMS, c.FlushBatchSize+1)))
	case c.UpsertSession:
		id := c.SessionIDFor(o.TaskID, o.Version.BackendRef)
		if cur, ok := s.sessions[id]; ok {
			gate(o.Version.Generation, o.Version.Seq, cur)
		}
		if b := s.bindings[bindKey{id, o.TaskID}]; out.Result == true && !b.Open {
			add(s.otherOpenBinding(id, o.TaskID), EventRebindClosedOther)
		}
	case c.BumpSessionVersion:
		if cur, ok := s.sessions[s.sessionFor(o.TaskID)]; ok {
			gate(o.Generation, o.Seq, cur)
		}
	case c.BindTask:
		add(out.Result == true && s.otherOpenBinding(o.SessionID, o.TaskID), EventRebindClosedOther)
	case c.ReleaseBinding:
		b, ok := s.bindings[bindKey{o.SessionID, o.TaskID}]
		add(ok && !b.Open, EventReleasedTwice)
	case c.ActiveSessions:
		for _, l := range out.Result.([]c.LiveSession) {
			if l.Suspended {
				add(true, EventSuspendedClaimed)
				break
			}
		}
	}
	return ev
}
