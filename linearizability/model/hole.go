package model

import (
	"encoding/json"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/storecheck/storecheck/spec"
)

// Hole is a placeholder for a value the backend chooses and the seed does not
// fix: the id of the n-th thing of a kind the model minted ("batch", 3). An
// expected outcome holds it where the value goes, alone or inside a longer
// string ("<hole>:item:0"); Unify binds it to what the backend answered,
// and the state keeps that value from then on (Binder).
func Hole(kind string, n int64) string { return "⟨?" + kind + " " + strconv.FormatInt(n, 10) + "⟩" }

var holePattern = regexp.MustCompile(`⟨\?[a-z_]+ [0-9]+⟩`)

// HasHole reports whether s holds a hole.
func HasHole(s string) bool { return strings.Contains(s, "⟨?") && holePattern.MatchString(s) }

// Fill replaces every bound hole of s by its value.
func Fill(s string, values map[string]string) string {
	if len(values) == 0 || !strings.Contains(s, "⟨?") {
		return s
	}
	return holePattern.ReplaceAllStringFunc(s, func(h string) string {
		if v, ok := values[h]; ok {
			return v
		}
		return h
	})
}

// Unify matches got, a backend's result, against expected, a model's result
// that may hold holes: the same as spec.SameResult everywhere but where a
// hole stands, which binds to the text the backend answered there (the same
// hole always to the same text). It returns the bindings.
func Unify(expected, got any) (map[string]string, bool) {
	u := unifier{values: map[string]string{}}
	if !u.unify(reflect.ValueOf(expected), reflect.ValueOf(got)) {
		return nil, false
	}
	return u.values, true
}

type unifier struct{ values map[string]string }

var (
	timeType    = reflect.TypeFor[time.Time]()
	rawJSONType = reflect.TypeFor[json.RawMessage]()
	rawTextType = reflect.TypeFor[spec.RawJSON]()
)

func (u *unifier) unify(a, b reflect.Value) bool {
	if !a.IsValid() || !b.IsValid() {
		return spec.SameResult(valueOf(a), valueOf(b))
	}
	if a.Type() != b.Type() {
		return false
	}
	switch a.Type() {
	case timeType, rawJSONType, rawTextType:
		return spec.SameResult(a.Interface(), b.Interface())
	}
	switch a.Kind() {
	case reflect.String:
		return u.text(a.String(), b.String())
	case reflect.Slice:
		if a.Type().Elem().Kind() == reflect.Uint8 {
			return spec.SameResult(a.Interface(), b.Interface())
		}
		if a.Len() != b.Len() {
			return false
		}
		for i := 0; i < a.Len(); i++ {
			if !u.unify(a.Index(i), b.Index(i)) {
				return false
			}
		}
		return true
	case reflect.Map:
		if a.Len() != b.Len() {
			return false
		}
		for _, k := range a.MapKeys() {
			bv := b.MapIndex(k)
			if !bv.IsValid() || !u.unify(a.MapIndex(k), bv) {
				return false
			}
		}
		return true
	case reflect.Pointer, reflect.Interface:
		if a.IsNil() || b.IsNil() {
			return a.IsNil() == b.IsNil()
		}
		return u.unify(a.Elem(), b.Elem())
	case reflect.Struct:
		for i := 0; i < a.NumField(); i++ {
			if !u.unify(a.Field(i), b.Field(i)) {
				return false
			}
		}
		return true
	}
	return spec.SameResult(a.Interface(), b.Interface())
}

func valueOf(v reflect.Value) any {
	if !v.IsValid() {
		return nil
	}
	return v.Interface()
}

// text matches one string: literally, or, where want holds holes, binding
// each unbound hole to the non-empty text at its place.
func (u *unifier) text(want, got string) bool {
	if !strings.Contains(want, "⟨?") {
		return want == got
	}
	want = Fill(want, u.values)
	locs := holePattern.FindAllStringIndex(want, -1)
	switch len(locs) {
	case 0:
		return want == got
	case 1:
		// One hole, the common case (an id, or an id inside a longer
		// text): the text around it must match, the middle binds.
		l := locs[0]
		prefix, suffix := want[:l[0]], want[l[1]:]
		if len(got) <= len(prefix)+len(suffix) || !strings.HasPrefix(got, prefix) || !strings.HasSuffix(got, suffix) {
			return false
		}
		u.values[want[l[0]:l[1]]] = got[len(prefix) : len(got)-len(suffix)]
		return true
	}
	var re strings.Builder
	re.WriteString("^")
	var holes []string
	last := 0
	for _, l := range locs {
		re.WriteString(regexp.QuoteMeta(want[last:l[0]]))
		re.WriteString("(.+?)")
		holes = append(holes, want[l[0]:l[1]])
		last = l[1]
	}
	re.WriteString(regexp.QuoteMeta(want[last:]))
	re.WriteString("$")
	m := compiled(re.String()).FindStringSubmatch(got)
	if m == nil {
		return false
	}
	for i, h := range holes {
		if v, ok := u.values[h]; ok && v != m[i+1] {
			return false
		}
		u.values[h] = m[i+1]
	}
	return true
}

var patterns sync.Map // string → *regexp.Regexp

// compiled is the regexp of pattern, compiled once.
func compiled(pattern string) *regexp.Regexp {
	if re, ok := patterns.Load(pattern); ok {
		return re.(*regexp.Regexp)
	}
	re := regexp.MustCompile(pattern)
	patterns.Store(pattern, re)
	return re
}
