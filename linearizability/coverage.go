package linearizability

import "github.com/storecheck/storecheck/spec"

// Answers counts the history's answers by cell of the contract's coverage
// matrix ("<operation>:<answer>", spec.Contract.AnswerCell): what the run
// reached. An operation cut by a crash or a timeout answered nothing of
// the backend's and is not counted; one the backend failed with io is.
func (h History) Answers(c spec.Contract) map[string]int {
	out := map[string]int{}
	for _, e := range h.Entries {
		if key, ok := c.AnswerCell(e.Op, e.Outcome.Result, e.Outcome.Kind); ok {
			out[key]++
		}
	}
	return out
}
