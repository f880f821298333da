package sim

import (
	"fmt"
	"slices"
	"strings"

	"github.com/storecheck/storecheck/linearizability/model"
	"github.com/storecheck/storecheck/spec"
)

// settled is an operation of the run that is over: acknowledged (a
// definite answer) or left indefinite by a crash at one of its crash
// points, a kill or a lost answer. A failure after a crash or a power cut
// names from these the operation the crash left half applied, or the
// acknowledged writes the cut may have lost.
type settled struct {
	step, client int
	op           spec.Op
	// acked: the backend answered it, and the answer was no error.
	acked bool
	// crashedAt is the crash point it died at ("" for none): it was left
	// indefinite inside its transaction.
	crashedAt string
	// answeredAt is the step its answer (or its crash) came at.
	answeredAt int
	// wrote: its answer changed the model's state (a write).
	wrote bool
}

// settle records an operation that is over.
func (e *engine) settle(i int, f *flight, acked, wrote bool, crashedAt string) {
	e.settledOps = append(e.settledOps, settled{step: f.step, client: f.client, op: f.op, acked: acked, wrote: wrote, crashedAt: crashedAt, answeredAt: i})
}

// writers are the acknowledged operations of the run that changed the
// model's state and touch what op does, in the order they ended; after a
// power cut only those since it: one before it is suspect of being lost
// (the durability rule, named apart), not of breaking its own rules.
func (e *engine) writers(op spec.Op) []spec.Op {
	var out []spec.Op
	for _, s := range e.settledOps {
		if s.acked && s.wrote && s.answeredAt > e.cutAt && model.Touches(e.subj.Model, s.op, op) {
			out = append(out, s.op)
		}
	}
	return out
}

// blame is the rules op's answer got breaks where the model allowed only
// allowed (model.BlameOf, over the writes before it), widened, after a
// crash inside a write that touches what op does, by the rule that write
// breaks if the crash left it half applied (model.HalfApplied).
func (e *engine) blame(op spec.Op, got model.Outcome, allowed []model.Branch, again func(spec.Op) []model.Branch) model.Blame {
	contract := e.subj.Model.Contract()
	b := model.BlameOf(contract, op, got, allowed, e.writers(op), again)
	if cut, ok := e.halfApplied(op); ok && got.Kind != spec.ErrBadRequest {
		b = model.HalfApplied(contract, b, cut.op, got, allowed)
	}
	return b
}

// halfApplied is the last operation that died at a crash point inside its
// transaction and touches what op does: it must have taken effect whole or
// not at all (false: none).
func (e *engine) halfApplied(op spec.Op) (settled, bool) {
	for j := len(e.settledOps) - 1; j >= 0; j-- {
		if s := e.settledOps[j]; s.crashedAt != "" && model.Touches(e.subj.Model, s.op, op) {
			return s, true
		}
	}
	return settled{}, false
}

// crashNote says, for a failure of op after a crash or a power cut, which
// operation the crash left half applied or which acknowledged writes the
// cut may have lost, and at which step ("" when no crash came before, or
// none touched what op reads).
func (e *engine) crashNote(op spec.Op) string {
	m := e.subj.Model
	var notes []string
	if s, ok := e.halfApplied(op); ok {
		notes = append(notes, fmt.Sprintf("the crash at step %d inside client %d's %s (sent at step %d, crash point %s) may have left it half applied: it must take effect whole or not at all",
			s.answeredAt, s.client, describeOp(s.op), s.step, s.crashedAt))
	}
	if e.cutAt >= 0 {
		var lost []string
		for j := len(e.settledOps) - 1; j >= 0 && len(lost) < 3; j-- {
			s := e.settledOps[j]
			if s.acked && s.answeredAt < e.cutAt && s.wrote && model.Touches(m, s.op, op) {
				lost = append(lost, fmt.Sprintf("step %d client %d's %s (acknowledged at step %d)", s.step, s.client, describeOp(s.op), s.answeredAt))
			}
		}
		if len(lost) > 0 {
			slices.Reverse(lost)
			notes = append(notes, fmt.Sprintf("the power cut at step %d lost an acknowledged write this answer reads: the last of them before the cut are %s", e.cutAt, strings.Join(lost, "; ")))
		}
	}
	return strings.Join(notes, "; ")
}
