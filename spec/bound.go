package spec

import (
	"fmt"
	"strings"
)

// Bound is a number a clause of a rule turns on: a limit and what a limit
// of 0 takes, a batch size, a deadline or an expiry the clock is compared
// with, a stored value a presented one must not fall below, a counter that
// never runs backwards. A clause that names a number can only fail where
// the number is crossed: a store that ignores a cap of 500 passes every
// check that reads 100 rows. So each bound is checked one below it, at it
// and one above it (spec/suite's Bound labels a spec with the sides it
// checks, and a test fails for a side no spec checks), and has a
// deliberately broken variant its specs catch (internal/bugs).
type Bound struct {
	// Name tells the bound from the rule's others (dots and letters); its
	// ID is the rule's ID, "#" and the name (BoundID).
	Name string
	// Value is the number: a constant ("500"), or what it is when it is a
	// value of the store ("the stored fence", "the lease's expiry").
	Value string
	// Of is what a spec sets against the number: "the limit asked, of 501
	// due intents", "now".
	Of string
	// Below, At and Above are what the seed gives one below the number, at
	// it and one above it: the exact count or answer, or, where the seed
	// is silent, what the latitude allows there. "" for a side that cannot
	// exist, which Missing explains.
	Below, At, Above string
	// Missing says, for each side that cannot exist, why (a limit of 0
	// has nothing below it; a counter the store picks cannot be presented
	// below its last value).
	Missing map[Side]string
	// Source is where the number comes from: a seed line, checked word for
	// word as a rule's is, or the seed's silence.
	Source Source
	// Latitude, where the seed is silent on the bound or a side of it, is
	// what a backend may choose there; the specs check only what it allows.
	Latitude string
}

// Side is where a spec checks a bound: one below it, at it or one above it.
type Side string

// The sides of a bound.
const (
	Below Side = "below"
	At    Side = "at"
	Above Side = "above"
)

// Sides are the three sides, in order.
var Sides = []Side{Below, At, Above}

// Answer is what the seed gives at side s of the bound ("" when the side
// cannot exist).
func (b Bound) Answer(s Side) string {
	switch s {
	case Below:
		return b.Below
	case At:
		return b.At
	case Above:
		return b.Above
	}
	return ""
}

// BoundID is the ID of the bound name of the rule rule: "<rule ID>#<name>".
func BoundID(rule, name string) string { return rule + "#" + name }

// RuleBound is a bound with its ID and the rule it belongs to.
type RuleBound struct {
	ID   string
	Rule Rule
	Bound
}

// Bounds are every bound of the contract's rules, in table order: the
// inventory a test checks the specs against.
func (c Contract) Bounds() []RuleBound {
	var out []RuleBound
	for _, r := range c.Rules {
		for _, b := range r.Bounds {
			out = append(out, RuleBound{ID: BoundID(r.ID, b.Name), Rule: r, Bound: b})
		}
	}
	return out
}

// Bound finds a bound of the contract by its ID.
func (c Contract) Bound(id string) (RuleBound, bool) {
	for _, b := range c.Bounds() {
		if b.ID == id {
			return b, true
		}
	}
	return RuleBound{}, false
}

// String is the bound in one line, for reports: its number, what is set
// against it, and what each side gives.
func (b Bound) String() string {
	var sides []string
	for _, s := range Sides {
		if a := b.Answer(s); a != "" {
			sides = append(sides, sideWords[s]+": "+a)
		}
	}
	return fmt.Sprintf("%s against %s (%s)", b.Value, b.Of, strings.Join(sides, "; "))
}

// sideWords are the sides as a sentence names them.
var sideWords = map[Side]string{Below: "one below", At: "at it", Above: "one above"}
