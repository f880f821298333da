package model

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/storecheck/storecheck/spec"
)

// Blame is the rules an answer breaks, as narrow as the evidence allows,
// and why those: what a failure names.
type Blame struct {
	// Rules are the rule IDs of the contract's table, one when the
	// evidence points at one.
	Rules []string
	// Why says how the rules were found, and, when there are several, why
	// the evidence cannot tell them apart.
	Why string
}

// NoRuleOfTheContract is the blame of a bad_request answer: the kit sends
// only requests the protocol defines, so the backend refused the request
// itself (a crash point reached but not declared, an operation it lacks),
// and naming the operation's rules would send its author to the wrong place.
const NoRuleOfTheContract = "no rule of the contract: bad_request is the backend refusing the request itself, which the kit sent well formed (its message says why: a crash point reached but not declared, an operation it does not implement)"

// BlameOf names the rules that op, answering got where the model allowed
// only the branches allowed, breaks:
//   - none for bad_request (NoRuleOfTheContract);
//   - else the rules the allowed answers name (the rule that decides them);
//   - else, for a refusal, the rules that make that kind for op (the
//     contract's Refusals): the backend refused where their condition
//     does not hold;
//   - else, for a wrong result, op's rules that name a field in which the
//     answer differs from the nearest allowed one;
//   - else every rule of op (of the store, for an op without one), with
//     why no fewer.
//
// writers are the operations before op that changed what it reads, the
// latest last (none when unknown): for a wrong result, the rules of theirs
// that name a field that differs are added, for a read that answers what a
// write stored wrongly. again, when not nil, is what the contract allows a
// writer where op failed (the model's step of it in the states op met):
// when the read shows the very values one writer wrote and the contract
// refuses that writer there, its write landed where it must not (a check
// decided on a read another write overtook), and the refusal's rule is the
// one broken, not every rule naming the fields.
func BlameOf(c spec.Contract, op spec.Op, got Outcome, allowed []Branch, writers []spec.Op, again func(spec.Op) []Branch) Blame {
	if got.Kind == spec.ErrBadRequest {
		return Blame{Why: NoRuleOfTheContract}
	}
	if rules := Rules(allowed); len(rules) > 0 {
		why := "the rule that decides the answer the model allows here"
		if len(rules) > 1 {
			why = "the rules that decide the answers the model allows here (each allowed answer names its own)"
		}
		return Blame{Rules: rules, Why: why}
	}
	name := op.Name()
	if got.Kind != "" {
		var rules []string
		for _, r := range c.Refusals[name] {
			if r.Kind == got.Kind && !slices.Contains(rules, r.Rule) {
				rules = append(rules, r.Rule)
			}
		}
		if len(rules) > 0 {
			why := fmt.Sprintf("the only rule that refuses %s with %s, and its condition does not hold here", name, got.Kind)
			if len(rules) > 1 {
				why = fmt.Sprintf("the rules that refuse %s with %s (the kind alone cannot tell which one the backend applied), and the condition of none holds here", name, got.Kind)
			}
			return Blame{Rules: rules, Why: why}
		}
	}
	if got.Kind == "" {
		// The backend answered where the model refuses: the rules that
		// make the refusals allowed are the ones it did not apply.
		var kinds []string
		var rules []string
		for _, b := range allowed {
			if b.Outcome.Kind == "" || b.Match != nil {
				kinds = nil
				break
			}
			for _, r := range c.Refusals[name] {
				if r.Kind == b.Outcome.Kind && !slices.Contains(rules, r.Rule) {
					rules = append(rules, r.Rule)
				}
			}
			if !slices.Contains(kinds, string(b.Outcome.Kind)) {
				kinds = append(kinds, string(b.Outcome.Kind))
			}
		}
		if len(kinds) > 0 && len(rules) > 0 {
			why := fmt.Sprintf("the model refuses %s here with %s, which only this rule makes, and the backend went ahead", name, strings.Join(kinds, " or "))
			if len(rules) > 1 {
				why = fmt.Sprintf("the model refuses %s here with %s, which these rules make (the kind alone cannot tell which one's condition holds), and the backend went ahead", name, strings.Join(kinds, " or "))
			}
			return Blame{Rules: rules, Why: why}
		}
	}
	own := opRules(c, name)
	if len(own) == 0 {
		own = opRules(c, "")
	}
	fields := differingFields(got, allowed)
	if len(fields) > 0 {
		var named []string
		for _, id := range own {
			r, _ := c.Rule(id)
			if mentionsAny(r, fields) {
				named = append(named, id)
			}
		}
		read := own
		if len(named) > 0 {
			read = named
		}
		if rules, why, ok := shownWrite(c, name, got, allowed, fields, writers, again); ok {
			return Blame{Rules: append(slices.Clone(read), rules...), Why: fmt.Sprintf("the answer differs from the model's in %s: %s; so either %s answered an older state (%s) or that write broke %s",
				strings.Join(fields, ", "), why, name, strings.Join(read, ", "), strings.Join(rules, ", "))}
		}
		if w, wrote := writerRules(c, name, fields, writers); len(wrote) > 0 {
			return Blame{Rules: append(slices.Clone(read), wrote...), Why: fmt.Sprintf("the answer differs from the model's in %s: %s states what %s answers, and the writes before it that may have set %s (%s) are governed by %s",
				strings.Join(fields, ", "), strings.Join(read, ", "), name, strings.Join(fields, ", "), w, strings.Join(wrote, ", "))}
		}
		if len(named) > 0 && len(named) < len(own) {
			return Blame{Rules: named, Why: fmt.Sprintf("the answer differs from the model's in %s, which %s of %s's rules name", strings.Join(fields, ", "), countWord(len(named)), name)}
		}
		if len(own) == 1 {
			return Blame{Rules: own, Why: fmt.Sprintf("the answer differs from the model's in %s, and %s has this one rule", strings.Join(fields, ", "), name)}
		}
		return Blame{Rules: own, Why: fmt.Sprintf("the answer differs from the model's in %s, which every rule of %s decides together", strings.Join(fields, ", "), name)}
	}
	switch len(own) {
	case 0:
		return Blame{Why: "the contract states no rule of " + name}
	case 1:
		return Blame{Rules: own, Why: fmt.Sprintf("the one rule of %s", name)}
	}
	what := "the answer " + clip(got.String(), 40)
	if got.Kind != "" {
		what = "the refusal " + string(got.Kind)
	}
	if len(allowed) > 0 {
		what += " where the model allows " + clip(allowed[0].Outcome.String(), 40)
	}
	return Blame{Rules: own, Why: fmt.Sprintf("%s: every rule of %s decides it together, and the answer alone cannot tell which one the backend broke", what, name)}
}

// shownWrite narrows the writers' part of a read's blame when the read's
// differing values are the very ones one writer wrote (the latest such):
// then that write is what the read shows, and of the writers only its
// rules are suspects. Where the contract refuses that writer in the states
// the read met, the write landed where it must not (decided on a state
// another write had overtaken): the refusal's rule. Else its rules that
// name a differing field.
func shownWrite(c spec.Contract, op string, got Outcome, allowed []Branch, fields []string, writers []spec.Op, again func(spec.Op) []Branch) (rules []string, why string, ok bool) {
	if again == nil {
		return nil, "", false
	}
	shown := differingValues(got, allowed)
	for j := len(writers) - 1; j >= 0; j-- {
		w := writers[j]
		wv, ok := asJSON(w)
		if !ok || w.Name() == op {
			continue
		}
		has := map[string][]string{}
		leaves(wv, "", has)
		if slices.ContainsFunc(fields, func(f string) bool {
			return !slices.ContainsFunc(shown[f], func(v string) bool { return slices.Contains(has[f], v) })
		}) {
			continue
		}
		wrote := fmt.Sprintf("its values there are the ones %s %s wrote", w.Name(), clip(describeJSON(wv), 120))
		branches := again(w)
		if len(branches) > 0 && !slices.ContainsFunc(branches, func(b Branch) bool { return b.Outcome.Kind == "" }) {
			if rules := Rules(branches); len(rules) > 0 {
				var kinds []string
				for _, b := range branches {
					if !slices.Contains(kinds, string(b.Outcome.Kind)) {
						kinds = append(kinds, string(b.Outcome.Kind))
					}
				}
				return rules, fmt.Sprintf("%s, and where this read came the contract refuses that write with %s (it landed where it must not: decided on a state another write had overtaken)",
					wrote, strings.Join(kinds, " or ")), true
			}
		}
		var named []string
		for _, id := range opRules(c, w.Name()) {
			r, _ := c.Rule(id)
			if mentionsAny(r, fields) {
				named = append(named, id)
			}
		}
		if len(named) == 0 {
			return nil, "", false
		}
		return named, wrote + ", and of its rules these name " + strings.Join(fields, ", "), true
	}
	return nil, "", false
}

// describeJSON is v as compact JSON.
func describeJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// leaves adds to set every scalar of v, as JSON, under the key it sits
// under (at any depth; a list's elements under the list's key).
func leaves(v any, key string, set map[string][]string) {
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			leaves(x, k, set)
		}
	case []any:
		for _, x := range v {
			leaves(x, key, set)
		}
	default:
		if key != "" {
			b, _ := json.Marshal(v)
			set[key] = append(set[key], string(b))
		}
	}
}

// differingValues are got's values, as JSON, under the keys where it
// differs from the allowed answer nearest to it (differingFields').
func differingValues(got Outcome, allowed []Branch) map[string][]string {
	out := map[string][]string{}
	g, ok := asJSON(got.Result)
	if !ok {
		return out
	}
	fields := differingFields(got, allowed)
	for _, b := range allowed {
		if b.Outcome.Kind != "" || b.Match != nil {
			continue
		}
		w, ok := asJSON(b.Outcome.Result)
		if !ok {
			continue
		}
		set := map[string]bool{}
		diff(g, w, "", set)
		if len(set) != len(fields) {
			continue
		}
		diffValues(g, w, "", out)
		return out
	}
	return out
}

// diffValues is diff, keeping a's values where they differ.
func diffValues(a, b any, key string, out map[string][]string) {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if aok && bok {
		for k, av := range am {
			if bv, ok := bm[k]; ok {
				diffValues(av, bv, k, out)
			} else {
				leaves(av, k, out)
			}
		}
		return
	}
	al, aok := a.([]any)
	bl, bok := b.([]any)
	if aok && bok && len(al) == len(bl) {
		for i := range al {
			diffValues(al[i], bl[i], key, out)
		}
		return
	}
	if isHole(b) || equalJSON(a, b) || key == "" {
		return
	}
	leaves(a, key, out)
}

// writerRules are the rules of writers (not op itself) that name one of
// fields, the latest writer's first, and the writers' names: the evidence
// of a read does not tell which of the writes before it stored the wrong
// value, so each is a suspect.
func writerRules(c spec.Contract, op string, fields []string, writers []spec.Op) (string, []string) {
	var names, out []string
	for j := len(writers) - 1; j >= 0; j-- {
		w := writers[j].Name()
		if w == op || slices.Contains(names, w) {
			continue
		}
		found := false
		for _, id := range opRules(c, w) {
			r, _ := c.Rule(id)
			if mentionsAny(r, fields) && !slices.Contains(out, id) {
				out, found = append(out, id), true
			}
		}
		if found {
			names = append(names, w)
		}
	}
	return strings.Join(names, ", "), out
}

// Touches reports whether a and b share a key of m (a key "<prefix>*"
// covers every key of the prefix; an operation of no keys touches
// anything).
func Touches(m Model, a, b spec.Op) bool {
	ka, kb := m.Keys(a), m.Keys(b)
	if ka == nil || kb == nil {
		return true
	}
	for _, x := range ka {
		for _, y := range kb {
			if keyCovers(x, y) || keyCovers(y, x) {
				return true
			}
		}
	}
	return false
}

func keyCovers(k, other string) bool {
	if p, ok := strings.CutSuffix(k, "*"); ok {
		return strings.HasPrefix(other, p)
	}
	return k == other
}

func countWord(n int) string {
	if n == 1 {
		return "only this one"
	}
	return fmt.Sprintf("only these %d", n)
}

func clip(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}

// HalfApplied is b with the rule w breaks if a crash inside its
// transaction kept some of its writes and lost the rest: w is the write a
// crash cut before the failing read, whose answer got differs from the
// allowed ones. Of w's rules naming a field that differs (all of them, for
// an answer without fields), the ones that make its writes one
// transaction, else every one; b unchanged when none.
func HalfApplied(c spec.Contract, b Blame, w spec.Op, got Outcome, allowed []Branch) Blame {
	fields := differingFields(got, allowed)
	var named, atomic []string
	for _, id := range opRules(c, w.Name()) {
		r, _ := c.Rule(id)
		if len(fields) > 0 && !mentionsAny(r, fields) {
			continue
		}
		named = append(named, id)
		if strings.Contains(strings.ToLower(r.Says), "transaction") {
			atomic = append(atomic, id)
		}
	}
	if len(atomic) > 0 {
		named = atomic
	}
	named = slices.DeleteFunc(named, func(id string) bool { return slices.Contains(b.Rules, id) })
	if len(named) == 0 {
		return b
	}
	b.Rules = append(slices.Clone(b.Rules), named...)
	b.Why += fmt.Sprintf("; or the crash inside %s left it half applied, against %s", w.Name(), strings.Join(named, ", "))
	return b
}

// opRules are the IDs of the rules that govern op ("": the store as a
// whole), in the table's order.
func opRules(c spec.Contract, op string) []string {
	var out []string
	for _, r := range c.Rules {
		if r.Op == op {
			out = append(out, r.ID)
		}
	}
	return out
}

// mentionsAny reports whether r's ID or text names one of fields (a
// field "checkpoint_version" is named as it is, or as "checkpoint
// version").
func mentionsAny(r spec.Rule, fields []string) bool {
	text := strings.ToLower(r.ID + " " + r.Says)
	for _, f := range fields {
		if strings.Contains(text, f) || strings.Contains(text, strings.ReplaceAll(f, "_", " ")) {
			return true
		}
	}
	return false
}

// differingFields are the names of the fields (JSON object keys, at any
// depth) in which got differs from the allowed answer nearest to it, the
// one that differs in fewest: none when the answers are not results or
// differ as a whole (a number, a bool, null against a value).
func differingFields(got Outcome, allowed []Branch) []string {
	if got.Kind != "" {
		return nil
	}
	g, ok := asJSON(got.Result)
	if !ok {
		return nil
	}
	var best []string
	for _, b := range allowed {
		if b.Outcome.Kind != "" || b.Match != nil {
			continue
		}
		w, ok := asJSON(b.Outcome.Result)
		if !ok {
			continue
		}
		set := map[string]bool{}
		diff(g, w, "", set)
		fields := make([]string, 0, len(set))
		for f := range set {
			fields = append(fields, f)
		}
		sort.Strings(fields)
		if len(fields) > 0 && (best == nil || len(fields) < len(best)) {
			best = fields
		}
	}
	return best
}

func asJSON(v any) (any, bool) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, false
	}
	var out any
	if json.Unmarshal(b, &out) != nil {
		return nil, false
	}
	return out, true
}

// diff adds to set the keys under which a and b differ; key is the key
// a and b sit under ("" at the top, or in a list).
func diff(a, b any, key string, set map[string]bool) {
	am, aok := a.(map[string]any)
	bm, bok := b.(map[string]any)
	if aok && bok {
		for k, av := range am {
			bv, ok := bm[k]
			if !ok {
				set[k] = true
				continue
			}
			diff(av, bv, k, set)
		}
		for k := range bm {
			if _, ok := am[k]; !ok {
				set[k] = true
			}
		}
		return
	}
	al, aok := a.([]any)
	bl, bok := b.([]any)
	if aok && bok && len(al) == len(bl) {
		for i := range al {
			diff(al[i], bl[i], key, set)
		}
		return
	}
	if isHole(b) || equalJSON(a, b) {
		return
	}
	if key != "" {
		set[key] = true
	}
}

// isHole reports whether an expected value is a hole the backend fills
// (or holds one, in its text form "⟨?...⟩"): the backend's value may fit it.
func isHole(v any) bool {
	s, ok := v.(string)
	return ok && HasHole(s)
}

func equalJSON(a, b any) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}
