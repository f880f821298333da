package spec

import (
	"encoding/json"
	"reflect"
	"strconv"
	"strings"
)

// A store mints values the seed does not define (a batch id, a claim token):
// a caller learns them from the answer that minted them and presents them
// back. A workload is written before the answers exist (a simulated
// schedule is generated from its seed alone), so where an operation presents
// such a value it holds a reference instead: the value at a path of the
// answer to an earlier operation, named by its id. The runner resolves
// references just before it applies the operation, from the answers it has
// seen; the backend, the history and the checkers only ever see values.

// OpID names the n-th operation (from 0) that client issues in a run: the
// name a reference to its answer uses.
func OpID(client, n int) string { return "c" + strconv.Itoa(client) + "." + strconv.Itoa(n) }

// Ref is a reference to the value at path in the answer to operation op: a
// dotted path of JSON member names and array indexes ("claim_id",
// "batches.0.batch_id"), or "" for the whole answer.
func Ref(op, path string) string { return "⟨ref " + op + " " + path + "⟩" }

// IsRef reports whether s is a reference.
func IsRef(s string) bool { return strings.HasPrefix(s, "⟨ref ") && strings.HasSuffix(s, "⟩") }

// Unresolved is what a reference becomes when the answer it names is not
// there (the operation failed, was lost, or was shrunk away) or lacks the
// path: a value no store minted.
func Unresolved(op, path string) string { return "unresolved " + op + " " + path }

// Answers are the answers a run has seen, by operation id.
type Answers map[string]any

// Resolve returns op with every reference replaced by the value it names.
// Operations without references come back unchanged.
func (a Answers) Resolve(op Op) Op {
	if op == nil {
		return nil
	}
	v, changed := a.resolve(reflect.ValueOf(op))
	if !changed {
		return op
	}
	return v.Interface().(Op)
}

// lookup is the text at path in the answer to op.
func (a Answers) lookup(op, path string) string {
	ans, ok := a[op]
	if !ok {
		return Unresolved(op, path)
	}
	b, err := json.Marshal(ans)
	if err != nil {
		return Unresolved(op, path)
	}
	var cur any
	if json.Unmarshal(b, &cur) != nil {
		return Unresolved(op, path)
	}
	if path != "" {
		for _, part := range strings.Split(path, ".") {
			switch x := cur.(type) {
			case map[string]any:
				cur, ok = x[part]
			case []any:
				i, err := strconv.Atoi(part)
				ok = err == nil && i >= 0 && i < len(x)
				if ok {
					cur = x[i]
				}
			default:
				ok = false
			}
			if !ok || cur == nil {
				return Unresolved(op, path)
			}
		}
	}
	if s, ok := cur.(string); ok {
		return s
	}
	b, _ = json.Marshal(cur)
	return string(b)
}

func (a Answers) resolve(v reflect.Value) (reflect.Value, bool) {
	switch v.Kind() {
	case reflect.String:
		s := v.String()
		if !IsRef(s) {
			return v, false
		}
		op, path, _ := strings.Cut(strings.TrimSuffix(strings.TrimPrefix(s, "⟨ref "), "⟩"), " ")
		out := reflect.New(v.Type()).Elem()
		out.SetString(a.lookup(op, path))
		return out, true
	case reflect.Struct:
		var out reflect.Value
		for i := 0; i < v.NumField(); i++ {
			if !v.Type().Field(i).IsExported() {
				continue
			}
			f, changed := a.resolve(v.Field(i))
			if !changed {
				continue
			}
			if !out.IsValid() {
				out = reflect.New(v.Type()).Elem()
				out.Set(v)
			}
			out.Field(i).Set(f)
		}
		if out.IsValid() {
			return out, true
		}
	case reflect.Slice:
		if v.Type().Elem().Kind() == reflect.Uint8 {
			return v, false // bytes hold no reference, and may be MiB
		}
		var out reflect.Value
		for i := 0; i < v.Len(); i++ {
			e, changed := a.resolve(v.Index(i))
			if !changed {
				continue
			}
			if !out.IsValid() {
				out = reflect.MakeSlice(v.Type(), v.Len(), v.Len())
				reflect.Copy(out, v)
			}
			out.Index(i).Set(e)
		}
		if out.IsValid() {
			return out, true
		}
	case reflect.Pointer:
		if v.IsNil() {
			return v, false
		}
		if e, changed := a.resolve(v.Elem()); changed {
			out := reflect.New(v.Type().Elem())
			out.Elem().Set(e)
			return out, true
		}
	case reflect.Interface:
		if v.IsNil() {
			return v, false
		}
		if e, changed := a.resolve(v.Elem()); changed {
			out := reflect.New(v.Type()).Elem()
			out.Set(e)
			return out, true
		}
	case reflect.Map:
		var out reflect.Value
		iter := v.MapRange()
		for iter.Next() {
			e, changed := a.resolve(iter.Value())
			if !changed {
				continue
			}
			if !out.IsValid() {
				out = reflect.MakeMapWithSize(v.Type(), v.Len())
				for it := v.MapRange(); it.Next(); {
					out.SetMapIndex(it.Key(), it.Value())
				}
			}
			out.SetMapIndex(iter.Key(), e)
		}
		if out.IsValid() {
			return out, true
		}
	}
	return v, false
}
