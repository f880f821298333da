package sim

import (
	"slices"
	"strconv"
	"strings"

	"github.com/storecheck/storecheck/linearizability/model"
	"github.com/storecheck/storecheck/spec"
)

// oracle is the model stepped as the run goes. Operations overlap (each
// process has at most one in flight, paused at its yield points while others
// move), so an operation may take effect at any point between its call and
// its return: the oracle judges each answer by every order the overlap
// allows, never by the order the operations happened to finish in.
//
// It holds configurations: a state the run may be in, and which operations
// still in flight that state already counts, with the answer it assumed for
// each (linearized early, just in time for another operation's answer).
// When an operation returns, each configuration either checks the answer it
// assumed, or places the operation now, after any order of the other
// operations in flight, each with any of its answers. A backend's choices (branches, holes) and
// indefinite operations (a crash, a lost reply) multiply configurations in
// the same way. An answer is right when some configuration allows it.
type oracle struct {
	m       model.Model
	configs []config
	flying  map[int]flying
	// limit bounds the configurations; past it the run is inconclusive
	// rather than judged on a part of them.
	limit        int
	inconclusive bool
}

type flying struct {
	op  spec.Op
	now int64
}

type config struct {
	state model.State
	early []early // by id
}

// early is an in-flight operation a configuration already placed, with
// the branch (answer) it assumed.
type early struct {
	id     int
	branch model.Branch
}

func newOracle(m model.Model) *oracle {
	return &oracle{m: m, configs: []config{{state: m.Init()}}, flying: map[int]flying{}, limit: 20_000}
}

// call records that operation id was sent at nowMS.
func (o *oracle) call(id int, op spec.Op, nowMS int64) {
	o.flying[id] = flying{op: op, now: nowMS}
}

// ret checks operation id's definite answer got. When no configuration
// allows it, it returns every branch the model allowed, for the report.
func (o *oracle) ret(id int, got model.Outcome) ([]model.Branch, bool) {
	f := o.flying[id]
	delete(o.flying, id)
	var next []config
	var allowed []model.Branch
	for _, c := range o.configs {
		if i := c.find(id); i >= 0 {
			b := c.early[i].branch
			if values, ok := b.Allows(got); ok {
				next = addConfig(next, config{state: model.Bind(c.state, values), early: slices.Delete(slices.Clone(c.early), i, i+1)})
			} else {
				allowed = append(allowed, b)
			}
			continue
		}
		o.placeBefore(c, id, f, func(s model.State, placed []early) {
			ns, bs := model.Judge(o.m, s, f.op, f.now, got)
			for _, n := range ns {
				next = addConfig(next, config{state: n, early: placed})
			}
			allowed = append(allowed, bs...)
		})
	}
	if len(next) == 0 {
		return allowed, false
	}
	o.configs = o.bounded(next)
	return nil, true
}

// indefinite takes operation id whose answer will never come (its process
// was killed or crashed, its reply lost): it happened at some point of its
// span, or never. A configuration that placed it early keeps it; any other
// either never sees it or sees it now.
func (o *oracle) indefinite(id int) {
	f, ok := o.flying[id]
	if !ok {
		return
	}
	delete(o.flying, id)
	var next []config
	for _, c := range o.configs {
		if i := c.find(id); i >= 0 {
			next = addConfig(next, config{state: c.state, early: slices.Delete(slices.Clone(c.early), i, i+1)})
			continue
		}
		next = addConfig(next, c)
		// It took effect before now, perhaps after operations still in
		// flight that it conflicts with.
		o.placeBefore(c, id, f, func(s model.State, placed []early) {
			for _, b := range o.m.Step(s, f.op, f.now) {
				next = addConfig(next, config{state: b.Next, early: placed})
			}
		})
	}
	o.configs = o.bounded(next)
}

// placeBefore calls place with each state c may be in just before id takes
// effect: after every order of any of the other operations in flight, each
// with any of its answers. (Keys cannot prune them: two operations with no
// key in common may still be told apart by a later scan, so their order
// matters too.)
func (o *oracle) placeBefore(c config, id int, f flying, place func(model.State, []early)) {
	var cands []int
	for j := range o.flying {
		if j != id && c.find(j) < 0 {
			cands = append(cands, j)
		}
	}
	slices.Sort(cands)
	var walk func(s model.State, placed []early, left []int)
	walk = func(s model.State, placed []early, left []int) {
		place(s, placed)
		for i, j := range left {
			rest := slices.Delete(slices.Clone(left), i, i+1)
			g := o.flying[j]
			for _, b := range o.m.Step(s, g.op, g.now) {
				walk(b.Next, insertEarly(placed, early{id: j, branch: b}), rest)
			}
		}
	}
	walk(c.state, c.early, cands)
}

// states are the states the run may be in, counting only what has
// returned or been placed.
func (o *oracle) states() []model.State {
	out := make([]model.State, 0, len(o.configs))
	for _, c := range o.configs {
		out = model.AppendState(out, c.state)
	}
	return out
}

// events are the coverage events op, answered got, reaches from the first
// configuration; an indefinite operation is counted as the model expects it
// to answer.
func (o *oracle) events(op spec.Op, nowMS int64, got model.Outcome, definite bool) []string {
	ev, ok := o.m.(model.Eventful)
	if !ok || len(o.configs) == 0 {
		return nil
	}
	s := o.configs[0].state
	if !definite {
		_, got = model.Expect(o.m, s, op, nowMS)
	}
	return ev.Events(s, op, nowMS, got)
}

func (o *oracle) bounded(cs []config) []config {
	if len(cs) > o.limit {
		o.inconclusive = true
		return cs[:o.limit]
	}
	return cs
}

func (c config) find(id int) int {
	for i, e := range c.early {
		if e.id == id {
			return i
		}
	}
	return -1
}

func insertEarly(es []early, e early) []early {
	out := slices.Clone(es)
	i, _ := slices.BinarySearchFunc(out, e.id, func(x early, id int) int { return x.id - id })
	return slices.Insert(out, i, e)
}

// key is what tells two configurations apart beside their states.
func (c config) key() string {
	if len(c.early) == 0 {
		return ""
	}
	var b strings.Builder
	for _, e := range c.early {
		b.WriteString(strconv.Itoa(e.id))
		b.WriteString("=")
		b.WriteString(e.branch.Describe())
		b.WriteString(";")
	}
	return b.String()
}

func addConfig(cs []config, c config) []config {
	k := c.key()
	for _, d := range cs {
		if d.state.Hash() == c.state.Hash() && d.key() == k && d.state.Equal(c.state) {
			return cs
		}
	}
	return append(cs, c)
}
