package stores

import (
	"strings"

	"github.com/storecheck/storecheck/reports"
	"github.com/storecheck/storecheck/spec"
)

// IOUnreachable is why a layer's workload is not meant to reach an
// operation's io cell, unless the store lists another reason.
const IOUnreachable = "io is the answer of a store that cannot do its work (a disk that fails, a connection that breaks): " +
	"no workload makes the reference fail so, and the io the simulator injects is refused before the backend (not sent), so it is no backend's answer"

// Cells are the store's coverage matrix, every cell with the reason it is
// out of the workloads' reach when it is (Unreachable, else IOUnreachable
// for io).
func (s Store) Cells() []reports.CoverageCell {
	var out []reports.CoverageCell
	for _, c := range s.Contract.Cells() {
		why := s.Unreachable[c.Key()]
		if why == "" && c.Answer == string(spec.ErrIO) {
			why = IOUnreachable
		}
		out = append(out, reports.CoverageCell{Op: c.Op, Answer: c.Answer, Rules: c.Rules, Unreachable: why})
	}
	return out
}

// Coverage is the store's coverage matrix as layer reached it, over what
// it counted ("seeds 1..100"): counts by cell ("<operation>:<answer>").
// Counts of anything but one of the store's operations (the simulator's
// events) are left out.
func (s Store) Coverage(layer, over string, counts map[string]int) reports.Coverage {
	c := reports.Coverage{Store: s.Name(), Layer: layer, Over: over, Cells: s.Cells()}
	for key, n := range counts {
		op, _, ok := strings.Cut(key, ":")
		if _, isOp := s.Contract.Op(op); ok && isOp {
			c.Count(key, n)
		}
	}
	return c
}
