package model

// The outbox: intents, their envelopes, and when they are due.

import (
	"bytes"
	"cmp"
	"encoding/json"
	"slices"

	"github.com/storecheck/storecheck/spec"
	cli "github.com/storecheck/storecheck/spec/client"
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
	State                 cli.IntentState
	Next                  int64
	Receipt               string
	HasReceipt            bool
	LastError             string
	Created               int64
	Updated               int64
	Order                 int64
}

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

func (in cintent) value(id string, d int64) cli.Intent {
	out := cli.Intent{OpID: id, Envelope: spec.RawJSON(in.Env), Attempt: in.Attempt, State: in.State,
		NextAttemptAt: at(in.Next, d), LastError: in.LastError, CreatedAt: at(in.Created, d), UpdatedAt: at(in.Updated, d)}
	if in.HasReceipt {
		out.Receipt = spec.RawJSON(in.Receipt)
	}
	return out
}

func (in cintent) live() bool { return in.State == cli.IntentPending || in.State == cli.IntentRetrying }

// due is the live intents due at nowNS in due order (next attempt time,
// creation time, enqueue order) at precision d, at most n of them.
func (s ClientState) due(nowNS int64, n int, d int64) []cli.Intent {
	var ids []string
	for id, in := range s.intents.all() {
		if in.live() && cut(in.Next, d) <= cut(nowNS, d) {
			ids = append(ids, id)
		}
	}
	slices.SortFunc(ids, func(a, b string) int {
		x, y := s.intents.at(a), s.intents.at(b)
		return cmp.Or(cmp.Compare(cut(x.Next, d), cut(y.Next, d)), cmp.Compare(cut(x.Created, d), cut(y.Created, d)), cmp.Compare(x.Order, y.Order))
	})
	var out []cli.Intent
	for _, id := range ids[:min(n, len(ids))] {
		out = append(out, s.intents.at(id).value(id, d))
	}
	return out
}

// stepIntents answers the operations on the outbox; false: op is not one of them.
func (m Client) stepIntents(s ClientState, op spec.Op, now int64) ([]Branch, bool) {
	switch o := op.(type) {
	case cli.EnqueueIntent:
		if !json.Valid(o.Envelope) {
			return payload(s, "envelope", m.enqueue(s, o, now)), true
		}
		return m.enqueue(s, o, now), true

	case cli.GetIntent:
		in, ok := s.intents.get(o.OpID)
		if !ok {
			return One(s, OK((*cli.Intent)(nil))), true
		}
		return s.timed(func(d int64) any { v := in.value(o.OpID, d); return &v }), true

	case cli.DueIntents:
		return s.timed(func(d int64) any { return s.due(nsOf(o.Now), cli.EffectiveLimit(o.Limit), d) }), true

	case cli.FlushOrder:
		return s.timed(func(d int64) any { return s.due(now, cli.FlushBatchSize, d) }), true

	case cli.BumpIntent:
		in, ok := s.intents.get(o.OpID)
		if !ok || !in.live() {
			return One(s, OK(false)), true
		}
		in.Attempt++
		in.State, in.Next, in.LastError, in.Updated = cli.IntentRetrying, nsOf(o.NextAttemptAt), o.LastError, now
		return One(s.withIntent(o.OpID, &in), OK(true)), true

	case cli.DeferIntent:
		in, ok := s.intents.get(o.OpID)
		if !ok || !in.live() {
			return One(s, OK(false)), true
		}
		in.State, in.Next, in.LastError, in.Updated = cli.IntentRetrying, nsOf(o.NextAttemptAt), o.LastError, now
		return One(s.withIntent(o.OpID, &in), OK(true)), true

	case cli.AcceptIntent:
		acted := func() []Branch {
			in, ok := s.intents.get(o.OpID)
			if !ok || !in.live() {
				return One(s, OK(false))
			}
			in.State, in.Receipt, in.HasReceipt, in.Updated, in.Order = cli.IntentAccepted, string(o.Receipt), true, now, 0
			return One(s.withIntent(o.OpID, &in), OK(true))
		}
		if !json.Valid(o.Receipt) {
			return payload(s, "receipt", acted()), true
		}
		return acted(), true

	case cli.ExhaustIntent:
		in, ok := s.intents.get(o.OpID)
		if !ok || !in.live() {
			return One(s, OK(false)), true
		}
		in.State, in.LastError, in.Updated, in.Order = cli.IntentExhausted, o.LastError, now, 0
		return One(s.withIntent(o.OpID, &in), OK(true)), true

	case cli.DeleteIntent:
		if _, ok := s.intents.get(o.OpID); !ok {
			return One(s, OK(false)), true
		}
		return One(s.withIntent(o.OpID, nil), OK(true)), true

	case cli.PendingIntentCount:
		var n int64
		for _, in := range s.intents.all() {
			if in.live() {
				n++
			}
		}
		return One(s, OK(n)), true
	}
	return nil, false
}

func (Client) enqueue(s ClientState, o cli.EnqueueIntent, now int64) []Branch {
	if _, ok := s.intents.get(o.OpID); ok {
		return One(s, OK(false))
	}
	var order int64
	for _, in := range s.intents.all() {
		if in.live() {
			order = max(order, in.Order)
		}
	}
	in := cintent{Env: string(o.Envelope), State: cli.IntentPending, Next: now, Created: now, Updated: now, Order: order + 1}
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
