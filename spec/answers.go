package spec

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
)

// The coverage matrix of a contract: every operation crossed with every
// answer the contract allows it. A randomized layer only checks what its
// workload reaches, so each layer counts the cells it reached, and a cell
// nobody reaches is a rule nobody checked.
//
// The cells come from the contract alone, never from what a backend
// happens to answer: an operation's result type names its answers (see
// ResultAnswers), and its error kinds are the ones the contract's rules
// refuse it with (Contract.Refusals), and io, which any operation may
// answer when the store cannot do its work.

// The answers a result type allows.
const (
	// AnswerOK is the answer of an operation that yields nothing, or a
	// value (a number, a text, a struct).
	AnswerOK = "ok"
	// AnswerTrue and AnswerFalse are a bool's.
	AnswerTrue  = "true"
	AnswerFalse = "false"
	// AnswerNull and AnswerNonNull are a pointer's: nil, or something.
	AnswerNull    = "null"
	AnswerNonNull = "non-null"
	// AnswerEmpty and AnswerNonEmpty are a map's or a slice's: nil or
	// empty, or something.
	AnswerEmpty    = "empty"
	AnswerNonEmpty = "non-empty"
)

// Refusal is an error kind an operation may answer, and the rule (a
// spec.Rule ID of the contract's table) that makes it.
type Refusal struct {
	Kind Kind
	Rule string
}

// Cell is one answer an operation may give: one cell of the contract's
// coverage matrix.
type Cell struct {
	Op     string
	Answer string
	// Rules are the rules that make the answer, for an error kind the
	// contract's rules refuse with (none for a result, or for io the store
	// answers only when it cannot do its work).
	Rules []string
}

// Key names the cell: "<operation>:<answer>".
func (c Cell) Key() string { return CellKey(c.Op, c.Answer) }

// CellKey is the key of the cell of operation op and answer.
func CellKey(op, answer string) string { return op + ":" + answer }

// ResultAnswers are the answers op's result type allows: ok for nothing or
// a value, true and false for a bool, null and non-null for a pointer,
// empty and non-empty for a map or a slice.
func ResultAnswers(op Op) []string {
	zero := op.Result()
	if zero == nil {
		return []string{AnswerOK}
	}
	switch reflect.TypeOf(zero).Kind() {
	case reflect.Bool:
		return []string{AnswerTrue, AnswerFalse}
	case reflect.Pointer:
		return []string{AnswerNull, AnswerNonNull}
	case reflect.Map, reflect.Slice:
		return []string{AnswerEmpty, AnswerNonEmpty}
	}
	return []string{AnswerOK}
}

// AnswerOf is the answer an outcome of op is: its error kind, else the
// shape of its result as ResultAnswers names it.
func AnswerOf(op Op, result any, kind Kind) string {
	if kind != "" {
		return string(kind)
	}
	zero := op.Result()
	if zero == nil {
		return AnswerOK
	}
	switch reflect.TypeOf(zero).Kind() {
	case reflect.Bool:
		if b, _ := result.(bool); b {
			return AnswerTrue
		}
		return AnswerFalse
	case reflect.Pointer:
		if v := reflect.ValueOf(result); !v.IsValid() || (v.Kind() == reflect.Pointer && v.IsNil()) {
			return AnswerNull
		}
		return AnswerNonNull
	case reflect.Map, reflect.Slice:
		if v := reflect.ValueOf(result); !v.IsValid() || ((v.Kind() == reflect.Map || v.Kind() == reflect.Slice) && v.Len() == 0) {
			return AnswerEmpty
		}
		return AnswerNonEmpty
	}
	return AnswerOK
}

// Cells are every cell of the contract's coverage matrix, operation by
// operation in the contract's order: the answers of its result, then each
// kind its rules refuse it with (Refusals, in the contract's order of
// kinds), then io.
func (c Contract) Cells() []Cell {
	var out []Cell
	for _, op := range c.Ops {
		name := op.Name()
		for _, a := range ResultAnswers(op) {
			out = append(out, Cell{Op: name, Answer: a})
		}
		kinds := append(slices.DeleteFunc(slices.Clone(c.Kinds), func(k Kind) bool { return k == ErrIO }), ErrIO)
		for _, k := range kinds {
			var rules []string
			for _, r := range c.Refusals[name] {
				if r.Kind == k && !slices.Contains(rules, r.Rule) {
					rules = append(rules, r.Rule)
				}
			}
			if len(rules) > 0 || k == ErrIO {
				out = append(out, Cell{Op: name, Answer: string(k), Rules: rules})
			}
		}
	}
	return out
}

// CheckRefusals reports what is wrong with the contract's Refusals: an
// operation it does not have, a kind outside its closed set, a rule not in
// its table or governing another operation.
func (c Contract) CheckRefusals() []error {
	var errs []error
	for _, name := range slices.Sorted(maps.Keys(c.Refusals)) {
		if _, ok := c.Op(name); !ok {
			errs = append(errs, fmt.Errorf("%s: refusals of %q, which is no operation of the contract", c.Name, name))
		}
		for _, r := range c.Refusals[name] {
			if !c.HasKind(r.Kind) {
				errs = append(errs, fmt.Errorf("%s %s: %q is not a kind of the contract", c.Name, name, r.Kind))
			}
			rule, ok := c.Rule(r.Rule)
			switch {
			case !ok:
				errs = append(errs, fmt.Errorf("%s %s %s: rule %q is not in the table", c.Name, name, r.Kind, r.Rule))
			case rule.Op != "" && rule.Op != name:
				errs = append(errs, fmt.Errorf("%s %s %s: rule %s governs %s", c.Name, name, r.Kind, r.Rule, rule.Op))
			}
		}
	}
	return errs
}

// AnswerCell is the key of the cell an answer of op falls in: its result,
// or its error kind. It is false for an answer the kit made up rather than
// the backend (a crash, a timeout, a broken protocol: the kinds of
// KindTable outside the contract's closed set), which is no cell. A kind
// neither the contract nor the kit knows is the backend's, outside every
// cell.
func (c Contract) AnswerCell(op Op, result any, kind Kind) (string, bool) {
	if _, kit := KindInfoOf(kind); kit && !c.HasKind(kind) {
		return "", false
	}
	return CellKey(op.Name(), AnswerOf(op, result, kind)), true
}
