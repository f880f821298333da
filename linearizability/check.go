package linearizability

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"github.com/anishathalye/porcupine"

	"github.com/storecheck/storecheck/linearizability/model"
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
	info       porcupine.LinearizationInfo
	model      porcupine.Model
}

// Visualize writes porcupine's interactive HTML view of the check: each
// partition's longest linearizable prefix and where it got stuck.
func (r Result) Visualize(w io.Writer) error { return porcupine.Visualize(r.model, r.info, w) }

// Check decides whether h is linearizable with respect to m, giving up
// after timeout.
func Check(m model.Model, h History, timeout time.Duration) (Result, error) {
	if err := h.Validate(); err != nil {
		return Result{}, err
	}
	pm := Porcupine(m)
	ops := operations(h)
	start := time.Now()
	res, info := porcupine.CheckOperationsVerbose(pm, ops, timeout)
	out := Result{Took: time.Since(start), info: info, model: pm, Partitions: len(pm.Partition(ops))}
	switch res {
	case porcupine.Ok:
		out.Verdict = Linearizable
	case porcupine.Illegal:
		out.Verdict = Illegal
	default:
		out.Verdict = Unknown
	}
	return out, nil
}

// operations turns a history into porcupine's form. An indefinite entry
// returns after everything else: porcupine may then place it anywhere after
// its call, including after every other operation, which is the same as
// never having happened.
func operations(h History) []porcupine.Operation {
	var last int64
	for _, e := range h.Entries {
		last = max(last, e.Call, e.Return)
	}
	ops := make([]porcupine.Operation, len(h.Entries))
	for i := range h.Entries {
		e := &h.Entries[i]
		ret := e.Return
		if e.Indefinite {
			ret = last + 1
		}
		ops[i] = porcupine.Operation{ClientId: e.Client, Input: e, Call: e.Call, Output: e.Outcome, Return: ret}
	}
	return ops
}

// Porcupine is m as a porcupine model. A definite entry must answer what the
// model answers; an indefinite one takes the model's effect whatever it
// answered.
func Porcupine(m model.Model) porcupine.Model {
	return porcupine.Model{
		Partition: func(ops []porcupine.Operation) [][]porcupine.Operation { return partition(m, ops) },
		Init:      func() any { return m.Init() },
		Step: func(state, input, output any) (bool, any) {
			e := input.(*Entry)
			next, want := m.Step(state.(model.State), e.Op, e.NowMS)
			if e.Indefinite {
				return true, next
			}
			return want.Same(output.(model.Outcome)), next
		},
		Equal: func(a, b any) bool { return a.(model.State).Equal(b.(model.State)) },
		Hash:  func(s any) uint64 { return s.(model.State).Hash() },
		DescribeOperation: func(input, output any) string {
			e := input.(*Entry)
			if e.Indefinite {
				return fmt.Sprintf("%s %s -> ? (indefinite)", e.Op.Name(), describeArgs(e))
			}
			return fmt.Sprintf("%s %s -> %s", e.Op.Name(), describeArgs(e), output.(model.Outcome))
		},
		DescribeState: func(s any) string { return s.(model.State).String() },
	}
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
