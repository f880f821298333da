package sim

import (
	"bytes"
	"encoding/json"
	"reflect"
	"regexp"
	"sort"
	"strings"

	"github.com/storecheck/storecheck/linearizability/model"
)

// Differing is a mismatch as far as it differs: the backend's answer got
// and each answer the model allows (as model.Allowed writes them, a rule
// after each), cut to the parts in which they differ, so a person sees the
// one field that is wrong, not two long values to compare by eye. An
// object keeps the keys in which some allowed answer differs from got
// ("…" stands for the keys left out, "(absent)" for a key one side lacks);
// a hole of the model (model.Hole) matches whatever the backend answered
// there. Answers that are not both objects are shown whole.
func Differing(got string, allowed []string) (string, []string) {
	g, ok := decodeObject(got)
	if !ok {
		return got, allowed
	}
	values := make([]any, len(allowed))
	var union *diffNode
	for i, a := range allowed {
		value, _ := splitRule(a)
		v, ok := decodeObject(value)
		if !ok {
			continue
		}
		values[i] = v
		if d, differs := diffOf(g, v); differs {
			union = union.merge(d)
		}
	}
	if union == nil || union.whole {
		return got, allowed
	}
	shown := make([]string, len(allowed))
	for i, a := range allowed {
		if values[i] == nil {
			shown[i] = a
			continue
		}
		_, rule := splitRule(a)
		shown[i] = render(values[i], union) + rule
	}
	return render(g, union), shown
}

// differing is the backend's answer and a copy of f whose Allowed are cut
// to where they differ from it (Differing), for Error: the field that is
// wrong, not two long values to compare by eye.
func (f *Failure) differing() (string, *Failure) {
	shown := *f
	if f.Part != nil {
		// Allowed are answers for the part: compared to the whole, every
		// other part would show as a difference.
		got, allowed := Differing(f.Part.String(), f.Allowed)
		shown.Allowed = allowed
		return got + " (in the part of its answer read by a statement of its own)", &shown
	}
	got, allowed := Differing(f.Got.String(), f.Allowed)
	shown.Allowed = allowed
	return got, &shown
}

// splitRule cuts an allowed answer into its value and its " (rule R)".
func splitRule(a string) (value, rule string) {
	if i := strings.LastIndex(a, " (rule "); i >= 0 && strings.HasSuffix(a, ")") {
		return a[:i], a[i:]
	}
	return a, ""
}

// decodeObject is s as a JSON object (false: s is something else).
func decodeObject(s string) (map[string]any, bool) {
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return nil, false
	}
	m, ok := v.(map[string]any)
	return m, ok
}

// diffNode is where two values differ: whole, or in the keys of kids.
type diffNode struct {
	whole bool
	kids  map[string]*diffNode
}

// diffOf is where got and want differ (false: nowhere).
func diffOf(got, want any) (*diffNode, bool) {
	g, gok := got.(map[string]any)
	w, wok := want.(map[string]any)
	if !gok || !wok {
		if sameValue(got, want) {
			return nil, false
		}
		return &diffNode{whole: true}, true
	}
	n := &diffNode{kids: map[string]*diffNode{}}
	for k, gv := range g {
		wv, ok := w[k]
		if !ok {
			n.kids[k] = &diffNode{whole: true}
			continue
		}
		if d, differs := diffOf(gv, wv); differs {
			n.kids[k] = d
		}
	}
	for k := range w {
		if _, ok := g[k]; !ok {
			n.kids[k] = &diffNode{whole: true}
		}
	}
	return n, len(n.kids) > 0
}

// merge is the places n or o differ.
func (n *diffNode) merge(o *diffNode) *diffNode {
	switch {
	case n == nil:
		return o
	case o == nil:
		return n
	case n.whole || o.whole:
		return &diffNode{whole: true}
	}
	m := &diffNode{kids: map[string]*diffNode{}}
	for k, v := range n.kids {
		m.kids[k] = v
	}
	for k, v := range o.kids {
		m.kids[k] = m.kids[k].merge(v)
	}
	return m
}

// sameValue compares two decoded JSON values, a model's hole matching any
// text in its place.
func sameValue(got, want any) bool {
	if w, ok := want.(string); ok && model.HasHole(w) {
		g, ok := got.(string)
		return ok && holeMatch(w).MatchString(g)
	}
	return reflect.DeepEqual(got, want)
}

var holes = regexp.MustCompile(`⟨\?[a-z_]+ [0-9]+⟩`)

// holeMatch matches the strings s stands for, each hole any text.
func holeMatch(s string) *regexp.Regexp {
	parts := holes.Split(s, -1)
	for i, p := range parts {
		parts[i] = regexp.QuoteMeta(p)
	}
	return regexp.MustCompile("^" + strings.Join(parts, ".+") + "$")
}

// render is v as JSON, only the keys where n says the values differ.
func render(v any, n *diffNode) string {
	m, ok := v.(map[string]any)
	if n == nil || n.whole || !ok {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(false)
		enc.Encode(v)
		return strings.TrimSuffix(b.String(), "\n")
	}
	keys := make([]string, 0, len(n.kids))
	for k := range n.kids {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var parts []string
	for _, k := range keys {
		name, _ := json.Marshal(k)
		if kv, ok := m[k]; ok {
			parts = append(parts, string(name)+":"+render(kv, n.kids[k]))
		} else {
			parts = append(parts, string(name)+":(absent)")
		}
	}
	shown := 0
	for k := range m {
		if _, ok := n.kids[k]; ok {
			shown++
		}
	}
	if shown < len(m) {
		parts = append(parts, "…")
	}
	return "{" + strings.Join(parts, ",") + "}"
}
