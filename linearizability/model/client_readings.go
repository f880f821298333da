package model

// The backend's readings the contract leaves open (time precision, which
// binding answers, which of a member named twice an envelope means), and the
// branches that learn them from answers.

import (
	"cmp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/storecheck/storecheck/spec"
	cli "github.com/storecheck/storecheck/spec/client"
)

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
	return byPrecision(s, s.prec, learnPrec, cli.RuleTimePrecision, f)
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

func invalid() Outcome { return Fail(cli.ErrInvalidArgument) }

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
		out = append(out, learning(s, invalid(), cli.RulePayloadJSON, map[string]string{learnWord + key: "0"}))
	}
	for _, b := range acted {
		if b.Outcome.Result == false {
			b.Rule = cli.RuleRefusalOrder
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
			b.Rule = cli.RulePayloadJSON
		}
		out = append(out, b)
	}
	return out
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
		learning(s, OK(a), cli.RuleEnvelopeTask, map[string]string{learnEnv: strconv.Itoa(int(envFirst))}),
		learning(s, OK(b), cli.RuleEnvelopeTask, map[string]string{learnEnv: strconv.Itoa(int(envLast))}),
	}
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

// ----- tasks: the words a backend takes -----

// word is what s has learned of a word outside the contract's own: taken,
// and known.
func (s ClientState) word(key string) (taken, known bool) {
	taken, known = s.words[key]
	return taken, known
}
