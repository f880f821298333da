package sim

import "github.com/storecheck/storecheck/spec"

// dropped takes operation id that is known never to have taken effect: it
// never reached the backend (its answer is marked spec.NotSent: a fault the
// kit injected at its own boundary), or its process was killed while it
// waited at its first yield point (see abandon). It is definite, and of no
// effect, so the run is as if it had never been issued. A configuration that placed a step of it early assumed
// an effect it never had, and is left out (the one that placed nothing of
// it is always there).
func (o *oracle) dropped(id int, op spec.Op) {
	n := len(o.parts(id, op))
	var next []config
	for _, c := range o.configs {
		if !c.placedAny(id, n) {
			next = append(next, c)
		}
	}
	for j := range n {
		delete(o.flying, unit{id, j})
	}
	o.configs = o.bounded(dedupe(next))
}
