package sim

import "slices"

// dropped takes operation id that is known never to have reached the
// backend (its answer is marked spec.NotSent: a fault the kit injected at
// its own boundary): definite, and of no effect, so the run is as if it had
// never been issued. A configuration that placed it early assumed an effect
// it never had, and is left out, unless none is left.
func (o *oracle) dropped(id int) {
	if _, ok := o.flying[id]; !ok {
		return
	}
	delete(o.flying, id)
	var next []config
	for _, c := range o.configs {
		if c.find(id) < 0 {
			next = addConfig(next, c)
		}
	}
	if len(next) == 0 {
		for _, c := range o.configs {
			i := c.find(id)
			next = addConfig(next, config{state: c.state, early: slices.Delete(slices.Clone(c.early), i, i+1)})
		}
	}
	o.configs = o.bounded(next)
}
