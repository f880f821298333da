package model

// The event log, and the sequence numbers the backend mints for it.

import (
	"encoding/json"
	"strconv"

	"github.com/storecheck/storecheck/spec"
	cli "github.com/storecheck/storecheck/spec/client"
)

// cevent is one event. Seq is 0 while the backend's number is not known
// (its append's answer was lost).
type cevent struct {
	Seq     int64
	Type    string
	Data    string
	Created int64
}

// stepEvents answers the operations on the event log; false: op is not one of them.
func (m Client) stepEvents(s ClientState, op spec.Op, now int64) ([]Branch, bool) {
	switch o := op.(type) {
	case cli.AppendEvent:
		e := cevent{Type: o.Type, Data: string(o.Data), Created: now}
		if !json.Valid(o.Data) {
			return payload(s, "data", []Branch{s.appendEvent(e)}), true
		}
		return []Branch{s.appendEvent(e)}, true

	case cli.EventsSince:
		var out []Branch
		for _, g := range precGroups(s.prec, len(s.events), func(i int) int64 { return s.events[i].Created }) {
			d := firstPrec(g)
			out = append(out, Branch{Outcome: OK(s.guessEvents(o.Seq, o.Limit, d)), Next: s, Rule: cli.RuleEventsSince,
				Match: func(got Outcome) (map[string]string, bool) {
					evs, ok := got.Result.([]cli.Event)
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
		return out, true

	case cli.EventHead:
		if len(s.events) == 0 {
			return One(s, OK(int64(0))), true
		}
		last := len(s.events) - 1
		if e := s.events[last]; e.Seq != 0 {
			return One(s, OK(e.Seq)), true
		}
		return []Branch{{Outcome: OK(s.guessSeq(last)), Next: s, Rule: cli.RuleEventHead, Match: func(got Outcome) (map[string]string, bool) {
			seq, ok := got.Result.(int64)
			if got.Kind != "" || !ok {
				return nil, false
			}
			t, ok := s.bindEvent(last, seq)
			if !ok {
				return nil, false
			}
			return holesBound(s, t), true
		}}}, true
	}
	return nil, false
}

func (s ClientState) eventSeq(i int) (int64, bool) { return s.events[i].Seq, s.events[i].Seq != 0 }

// appendEvent is the branch of an append: any positive sequence number
// greater than every known one (client.append_event.seq_increasing). The
// state it leaves for a lost answer keeps the number open.
func (s ClientState) appendEvent(e cevent) Branch {
	i := len(s.events)
	next := s.withEvent(i, e)
	return Branch{Outcome: OK(s.guessSeq(i)), Next: next, Rule: cli.RuleEventSeq, Match: func(got Outcome) (map[string]string, bool) {
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
func (s ClientState) guessEvents(seq int64, limit uint32, d int64) []cli.Event {
	var out []cli.Event
	for i, e := range s.events {
		n := s.guessSeq(i)
		if n > seq && len(out) < cli.EffectiveLimit(limit) {
			out = append(out, cli.Event{Seq: n, Type: e.Type, Data: spec.RawJSON(e.Data), CreatedAt: at(e.Created, d)})
		}
	}
	return out
}

// judgeEventsSince is whether got may answer events_since(q, limit) from s
// with times at precision d (client.events_since.after_seq,
// client.events_since.limit), and s with the numbers it shows of events
// whose number was open bound.
func (s ClientState) judgeEventsSince(q int64, limit uint32, got []cli.Event, d int64) (ClientState, bool) {
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
func (s ClientState) alignEvents(k int, q int64, got []cli.Event, d int64) (ClientState, bool) {
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
