package linearizability

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/anishathalye/porcupine"

	"github.com/storecheck/storecheck/linearizability/model"
	"github.com/storecheck/storecheck/spec"
)

// Verdict is the checker's answer. The three are kept apart: an unknown
// (the search ran out of time) is inconclusive, never a pass.
type Verdict string

const (
	Linearizable Verdict = "ok"
	Illegal      Verdict = "illegal"
	Unknown      Verdict = "unknown"
)

// Result is a check's verdict and what porcupine found, for the
// visualization.
type Result struct {
	Verdict    Verdict
	Partitions int
	Took       time.Duration
	// Stuck explains an illegal history in words: for every part of it
	// that no order explains, smallest part first, the operation no order
	// could place.
	Stuck []Stuck
	info  porcupine.LinearizationInfo
	model porcupine.Model
}

// Stuck is one illegal part of a history, explained: the longest order of
// its operations the contract allows (Placed), and the operation that had
// to come next, by its return, and that nothing after Placed lets answer
// what it answered.
type Stuck struct {
	// Part is the part's position among the history's parts, Size its
	// number of operations.
	Part, Size int
	Placed     []*Entry
	Entry      *Entry
	// Allowed is every answer the model allows Entry after Placed, with
	// the rule that decides it; Rules the rules they name.
	Allowed []string
	Rules   []string
	// Why says how Rules were narrowed from the answers (model.BlameOf),
	// and why there are several when there are.
	Why string
}

// Visualize writes porcupine's interactive HTML view of the check: each
// partition's longest linearizable prefix and where it got stuck.
//
// The view steps the model again along every partial linearization, and
// those share their prefixes: each step is taken once (memoized), and each
// state described once (describer).
func (r Result) Visualize(w io.Writer) error {
	return porcupine.Visualize(memoized(r.model), r.info, w)
}

// memoized is pm with its Step remembered: a state set and an entry lead
// where they led before.
func memoized(pm porcupine.Model) porcupine.Model {
	type key struct {
		hash uint64
		e    *Entry
	}
	type step struct {
		from pstate
		ok   bool
		to   any
	}
	seen := map[key][]step{}
	inner := pm.Step
	pm.Step = func(state, input, output any) (bool, any) {
		from := state.(pstate)
		k := key{from.hash(), input.(*Entry)}
		for _, s := range seen[k] {
			if s.from.equal(from) {
				return s.ok, s.to
			}
		}
		ok, to := inner(state, input, output)
		seen[k] = append(seen[k], step{from, ok, to})
		return ok, to
	}
	return pm
}

// Check decides whether h is linearizable with respect to m, giving up
// after timeout.
func Check(m model.Model, h History, timeout time.Duration) (Result, error) {
	if err := h.Validate(); err != nil {
		return Result{}, err
	}
	pm := Porcupine(m)
	ops := operations(m, h)
	start := time.Now()
	res, info := porcupine.CheckOperationsVerbose(pm, ops, timeout)
	parts := pm.Partition(ops)
	out := Result{Took: time.Since(start), info: info, model: pm, Partitions: len(parts)}
	switch res {
	case porcupine.Ok:
		out.Verdict = Linearizable
	case porcupine.Illegal:
		out.Verdict = Illegal
		out.Stuck = stuck(m, parts, info)
	default:
		out.Verdict = Unknown
	}
	return out, nil
}

// stuck explains each illegal part from porcupine's longest partial
// linearizations: the operation not placed with the earliest return is the
// one that had to come next, and the model says what it could have
// answered there.
func stuck(m model.Model, parts [][]porcupine.Operation, info porcupine.LinearizationInfo) []Stuck {
	partials := info.PartialLinearizationsOperations()
	var out []Stuck
	for p, part := range parts {
		if p >= len(partials) {
			break
		}
		var longest []porcupine.Operation
		for _, l := range partials[p] {
			if len(l) > len(longest) {
				longest = l
			}
		}
		if len(longest) >= len(part) {
			continue
		}
		placed := map[*Entry]bool{}
		st := Stuck{Part: p + 1, Size: len(part)}
		for _, op := range longest {
			e := op.Input.(*Entry)
			placed[e] = true
			st.Placed = append(st.Placed, e)
		}
		var next *porcupine.Operation
		for i := range part {
			if e := part[i].Input.(*Entry); !placed[e] && (next == nil || part[i].Return < next.Return) {
				next = &part[i]
			}
		}
		if next == nil {
			continue
		}
		st.Entry = next.Input.(*Entry)
		states := stateSet{m.Init()}
		var writers []spec.Op
		for _, e := range st.Placed {
			next := step(m, states, e)
			if !e.Indefinite && !next.equal(states) && model.Touches(m, e.Op, st.Entry.Op) {
				writers = append(writers, e.Op)
			}
			states = next
		}
		var branches []model.Branch
		for _, s := range states {
			branches = append(branches, m.Step(s, st.Entry.Op, st.Entry.NowMS)...)
		}
		// A writer stepped again in the states the stuck operation met: what
		// the contract allows it there, for a read that shows its values.
		again := func(w spec.Op) []model.Branch {
			var out []model.Branch
			for _, s := range states {
				out = append(out, m.Step(s, w, st.Entry.NowMS)...)
			}
			return out
		}
		blame := model.BlameOf(m.Contract(), st.Entry.Op, st.Entry.Outcome, branches, writers, again)
		st.Allowed, st.Rules, st.Why = model.Allowed(branches), blame.Rules, blame.Why
		if blame.Why == model.NoRuleOfTheContract {
			st.Allowed = model.AllowedAnswers(branches)
		}
		out = append(out, st)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Size < out[j].Size })
	return out
}

// Headline is an illegal check in one line: the operation no order could
// place in the smallest failing part (its client and its answer), what the
// contract allows there, and how many more parts fail.
func (r Result) Headline() string {
	if len(r.Stuck) == 0 {
		return "no sequential order of the history is one the contract allows: " + r.Summary()
	}
	st := r.Stuck[0]
	e := st.Entry
	s := fmt.Sprintf("no sequential order of the history is one the contract allows: client %d's %s answered %s, where the contract allows only %s",
		e.Client, e.Op.Name(), clipText(e.answer(), 160), clipText(strings.Join(st.Allowed, " or "), 240))
	if n := len(r.Stuck); n > 1 {
		s += fmt.Sprintf(" (and %d more parts of the history fail; every one below)", n-1)
	}
	return s
}

// Excerpt is the smallest failing part as a history a person reads: the
// last n operations of the longest order the contract allows of it, in that
// order, then the operation no order could place ("" when the check was
// not illegal).
func (r Result) Excerpt(n int) string {
	if len(r.Stuck) == 0 {
		return ""
	}
	st := r.Stuck[0]
	placed := st.Placed[max(0, len(st.Placed)-n):]
	var h History
	for _, e := range placed {
		h.Entries = append(h.Entries, *e)
	}
	head := fmt.Sprintf("part 1 (%d operations): the last %d of the %d operations the contract allows in this order", st.Size, len(placed), len(st.Placed))
	return head + ":\n" + h.Text() + "then the one no order could place:\n" + History{Entries: []Entry{*st.Entry}}.Text()
}

// answer is what the entry's operation answered, with the backend's words
// when it keeps them (a bad_request's: Entry.Message).
func (e *Entry) answer() string {
	if e.Message == "" {
		return e.Outcome.String()
	}
	return e.Outcome.String() + " (its message: " + e.Message + ")"
}

// clipText is s cut to n bytes, saying so.
func clipText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + fmt.Sprintf("... (%d bytes)", len(s))
}

// Explain is an illegal check in words: every stuck part, smallest first,
// with the operation no order could place (its client, arguments and
// answer), what the model allowed there, and the rules (explained by
// contract's table).
func (r Result) Explain(contract spec.Contract) string {
	var b strings.Builder
	for i, st := range r.Stuck {
		e := st.Entry
		args, _ := json.Marshal(e.Op)
		fmt.Fprintf(&b, "part %d of %d (%d operations): client %d's %s %s at %dms answered %s,\n", i+1, len(r.Stuck), st.Size,
			e.Client, e.Op.Name(), args, e.NowMS, e.answer())
		fmt.Fprintf(&b, "  but after the longest order of the operations before it (%d placed), the contract allows only %s\n",
			len(st.Placed), strings.Join(st.Allowed, " or "))
		if len(st.Rules) > 0 {
			fmt.Fprintf(&b, "  broken: %s (%s)\n", strings.Join(st.Rules, ", "), st.Why)
		} else if st.Why != "" {
			fmt.Fprintf(&b, "  broken: %s\n", st.Why)
		}
		for _, id := range st.Rules {
			fmt.Fprintf(&b, "  rule %s\n", contract.Explain(id))
		}
		if n := len(st.Placed); n > 0 {
			from := max(0, n-5)
			fmt.Fprintf(&b, "  the last %d placed:\n", n-from)
			for _, p := range st.Placed[from:] {
				pargs, _ := json.Marshal(p.Op)
				out := p.Outcome.String()
				if p.Indefinite {
					out = "? (indefinite)"
				}
				fmt.Fprintf(&b, "    client %d: %s %s at %dms -> %s\n", p.Client, p.Op.Name(), pargs, p.NowMS, out)
			}
		}
	}
	return b.String()
}

// operations turns a history into porcupine's form. An indefinite entry
// returns after everything else: porcupine may then place it anywhere after
// its call, including after every other operation, which is the same as
// never having happened.
func operations(m model.Model, h History) []porcupine.Operation {
	var last int64
	nextClient := 0
	for _, e := range h.Entries {
		last = max(last, e.Call, e.Return)
		nextClient = max(nextClient, e.Client+1)
	}
	splitter, _ := m.(model.Splitter)
	ops := make([]porcupine.Operation, 0, len(h.Entries))
	for i := range h.Entries {
		e := &h.Entries[i]
		ret := e.Return
		if e.Indefinite {
			ret = last + 1
		}
		if splitter != nil && !e.Indefinite {
			if parts, outs, ok := splitter.Split(e.Op, e.Outcome); ok {
				// Each part is its own atomic step somewhere inside the
				// operation's span, after the part before it: a client
				// of its own, placed only once the part before it is
				// (pstate).
				for j, p := range parts {
					part := *e
					part.Op, part.Outcome = p, outs[j]
					part.split, part.part = i+1, j
					if j > 0 {
						part.Client = nextClient
						nextClient++
					}
					ops = append(ops, porcupine.Operation{ClientId: part.Client, Input: &part, Call: e.Call, Output: part.Outcome, Return: ret})
				}
				continue
			}
		}
		ops = append(ops, porcupine.Operation{ClientId: e.Client, Input: e, Call: e.Call, Output: e.Outcome, Return: ret})
	}
	return ops
}

// Porcupine is m as a porcupine model. A porcupine state is the set of
// model states the operations so far allow (the power set of porcupine's
// NondeterministicModel, kept here so that sets hash): a definite entry
// keeps the states in which it answers what it answered; an indefinite one
// keeps every state it may have left, including the one where it never
// happened.
func Porcupine(m model.Model) porcupine.Model {
	return porcupine.Model{
		Partition: func(ops []porcupine.Operation) [][]porcupine.Operation { return ranked(partition(m, ops)) },
		Init:      func() any { return pstate{set: stateSet{m.Init()}} },
		Step: func(state, input, output any) (bool, any) {
			e := input.(*Entry)
			ps := state.(pstate)
			open, ok := ps.place(e)
			if !ok {
				return false, ps
			}
			next := step(m, ps.set, e)
			return len(next) > 0, pstate{next, open}
		},
		Equal: func(a, b any) bool { return a.(pstate).equal(b.(pstate)) },
		Hash:  func(s any) uint64 { return s.(pstate).hash() },
		DescribeOperation: func(input, output any) string {
			e := input.(*Entry)
			if e.Indefinite {
				return fmt.Sprintf("%s %s -> ? (indefinite)", e.Op.Name(), describeArgs(e))
			}
			return fmt.Sprintf("%s %s -> %s", e.Op.Name(), describeArgs(e), output.(model.Outcome))
		},
		DescribeState: describer(),
	}
}

// describer is porcupine's DescribeState for one check: a state set's text,
// computed once for each distinct set. The visualization describes the
// state after every step of every partial linearization, and those share
// their prefixes: most of the states it describes it has described before.
func describer() func(any) string {
	var mu sync.Mutex
	seen := map[uint64][]struct {
		set  stateSet
		text string
	}{}
	return func(s any) string {
		set := s.(pstate).set
		h := set.hash()
		mu.Lock()
		defer mu.Unlock()
		for _, d := range seen[h] {
			if d.set.equal(set) {
				return d.text
			}
		}
		text := set.String()
		seen[h] = append(seen[h], struct {
			set  stateSet
			text string
		}{set, text})
		return text
	}
}

// step is every state e may leave one of states in.
func step(m model.Model, states stateSet, e *Entry) stateSet {
	var next []model.State
	for _, s := range states {
		if e.Indefinite {
			for _, n := range model.Effects(m, s, e.Op, e.NowMS) {
				next = model.AppendState(next, n)
			}
			continue
		}
		ns, _ := model.Judge(m, s, e.Op, e.NowMS, e.Outcome)
		for _, n := range ns {
			next = model.AppendState(next, n)
		}
	}
	return stateSet(next)
}

// stateSet is a set of model states, in no particular order.
type stateSet []model.State

// pstate is a porcupine state: the model states, and the operations cut
// into parts of which some, not all, are placed: for each (by split, in
// order) how many. A part is placed only after the one ranked before it,
// so the parts see the store at successive moments, as the statements of
// a read do. The placed entries already fix open; it is here because
// porcupine's Step sees only the state.
type pstate struct {
	set  stateSet
	open []placedParts
}

type placedParts struct{ split, n int }

// place is open after e is placed, and whether e may be placed now.
func (p pstate) place(e *Entry) ([]placedParts, bool) {
	if e.ranks < 2 {
		return p.open, true
	}
	i := sort.Search(len(p.open), func(i int) bool { return p.open[i].split >= e.split })
	n := 0
	if i < len(p.open) && p.open[i].split == e.split {
		n = p.open[i].n
	}
	if n != e.rank {
		return nil, false
	}
	open := slices.Clone(p.open)
	switch {
	case n+1 == e.ranks:
		open = slices.Delete(open, i, i+1)
	case n == 0:
		open = slices.Insert(open, i, placedParts{e.split, 1})
	default:
		open[i].n++
	}
	return open, true
}

func (p pstate) hash() uint64 {
	h := p.set.hash()
	for _, o := range p.open {
		h = (h^uint64(o.split))*0x100000001b3 ^ uint64(o.n)
	}
	return h
}

func (p pstate) equal(q pstate) bool { return slices.Equal(p.open, q.open) && p.set.equal(q.set) }

// ranked ranks the parts of each split operation among those of its parts
// that share a partition. Parts of independent keys (resolve_many's
// identities) may fall in different partitions, checked apart: no order
// holds between those, which allows more than the seed's order, never less.
func ranked(parts [][]porcupine.Operation) [][]porcupine.Operation {
	for _, part := range parts {
		bySplit := map[int][]*Entry{}
		for _, op := range part {
			if e := op.Input.(*Entry); e.split > 0 {
				bySplit[e.split] = append(bySplit[e.split], e)
			}
		}
		for _, es := range bySplit {
			sort.Slice(es, func(i, j int) bool { return es[i].part < es[j].part })
			for i, e := range es {
				e.rank, e.ranks = i, len(es)
			}
		}
	}
	return parts
}

func (s stateSet) hash() uint64 {
	var h uint64
	for _, x := range s {
		h += x.Hash()*0x9e3779b97f4a7c15 + 1
	}
	return h
}

func (s stateSet) equal(t stateSet) bool {
	if len(s) != len(t) {
		return false
	}
	for _, x := range s {
		found := false
		for _, y := range t {
			if x.Hash() == y.Hash() && x.Equal(y) {
				found = true
				break
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func (s stateSet) String() string {
	if len(s) == 1 {
		return s[0].String()
	}
	parts := make([]string, len(s))
	for i, x := range s {
		parts[i] = fmt.Sprintf("possible state %d of %d:\n%s", i+1, len(s), x.String())
	}
	return strings.Join(parts, "\n")
}

func describeArgs(e *Entry) string {
	s := fmt.Sprintf("%+v", e.Op)
	if e.NowMS != 0 {
		s += fmt.Sprintf(" @%dms", e.NowMS)
	}
	return s
}

// partition splits a history into parts no operation of which can affect
// another part: operations are joined when they share a key (model.Keys),
// a key "<prefix>*" joins every operation with a key of that prefix, and an
// operation with no keys joins everything.
func partition(m model.Model, ops []porcupine.Operation) [][]porcupine.Operation {
	parent := make([]int, len(ops))
	for i := range parent {
		parent[i] = i
	}
	var find func(int) int
	find = func(i int) int {
		for parent[i] != i {
			parent[i] = parent[parent[i]]
			i = parent[i]
		}
		return i
	}
	owner := map[string]int{}
	keys := make([][]string, len(ops))
	var prefixes []string
	for i, op := range ops {
		keys[i] = m.Keys(op.Input.(*Entry).Op)
		if keys[i] == nil {
			return [][]porcupine.Operation{ops}
		}
		for _, k := range keys[i] {
			if j, ok := owner[k]; ok {
				parent[find(i)] = find(j)
			} else {
				owner[k] = i
				if p, ok := strings.CutSuffix(k, "*"); ok {
					prefixes = append(prefixes, p)
				}
			}
		}
	}
	for _, p := range prefixes {
		scan := find(owner[p+"*"])
		for i := range ops {
			for _, k := range keys[i] {
				if strings.HasPrefix(k, p) {
					parent[find(i)] = scan
					scan = find(scan)
					break
				}
			}
		}
	}
	groups := map[int][]porcupine.Operation{}
	var roots []int
	for i, op := range ops {
		r := find(i)
		if _, ok := groups[r]; !ok {
			roots = append(roots, r)
		}
		groups[r] = append(groups[r], op)
	}
	sort.Ints(roots)
	out := make([][]porcupine.Operation, len(roots))
	for i, r := range roots {
		out[i] = groups[r]
	}
	return out
}

// Summary describes a result in one line.
func (r Result) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s (%d partitions, checked in %v)", r.Verdict, r.Partitions, r.Took.Round(time.Millisecond))
	return b.String()
}

// Text is the history one operation a line: when it was called and
// returned, by which client, what it did and what it answered.
func (h History) Text() string {
	var b strings.Builder
	for _, e := range h.Entries {
		args, _ := json.Marshal(e.Op)
		ret, out := fmt.Sprint(e.Return), e.Outcome.String()
		if e.Indefinite {
			ret, out = "?", "? (indefinite)"
		}
		fmt.Fprintf(&b, "[%d, %s] client %d @%dms %s %s -> %s\n", e.Call, ret, e.Client, e.NowMS, e.Op.Name(), args, out)
	}
	return b.String()
}
