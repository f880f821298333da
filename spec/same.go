package spec

import (
	"bytes"
	"encoding/json"
	"reflect"
	"time"
)

// SameResult reports whether two results are equal as the contract sees them:
// deeply equal, where a nil and an empty slice or map are the same (a backend
// over the wire cannot tell them apart), two times are the same instant
// (whatever their location), and two JSON texts (json.RawMessage, RawJSON)
// are the same JSON value (whatever their spacing and key order; text that
// is not JSON is compared byte for byte).
func SameResult(a, b any) bool {
	return same(reflect.ValueOf(a), reflect.ValueOf(b))
}

func same(a, b reflect.Value) bool {
	if !a.IsValid() || !b.IsValid() {
		return a.IsValid() == b.IsValid() || isEmpty(a) && isEmpty(b)
	}
	if a.Type() != b.Type() {
		return false
	}
	switch a.Type() {
	case timeType:
		if a.CanInterface() && b.CanInterface() {
			return a.Interface().(time.Time).Equal(b.Interface().(time.Time))
		}
	case rawJSONType, rawTextType:
		return sameJSON(a.Bytes(), b.Bytes())
	}
	switch a.Kind() {
	case reflect.Slice, reflect.Map:
		if a.Len() != b.Len() {
			return false
		}
		if a.Kind() == reflect.Slice && a.Type().Elem().Kind() == reflect.Uint8 {
			// Bytes at once: a value of several MiB, element by element
			// through reflect, would take most of a second.
			return bytes.Equal(a.Bytes(), b.Bytes())
		}
		if a.Kind() == reflect.Slice {
			for i := 0; i < a.Len(); i++ {
				if !same(a.Index(i), b.Index(i)) {
					return false
				}
			}
			return true
		}
		for _, k := range a.MapKeys() {
			bv := b.MapIndex(k)
			if !bv.IsValid() || !same(a.MapIndex(k), bv) {
				return false
			}
		}
		return true
	case reflect.Pointer, reflect.Interface:
		if a.IsNil() || b.IsNil() {
			return a.IsNil() == b.IsNil()
		}
		return same(a.Elem(), b.Elem())
	case reflect.Struct:
		for i := 0; i < a.NumField(); i++ {
			if !same(a.Field(i), b.Field(i)) {
				return false
			}
		}
		return true
	}
	return a.Interface() == b.Interface()
}

func isEmpty(v reflect.Value) bool {
	if !v.IsValid() {
		return true
	}
	switch v.Kind() {
	case reflect.Slice, reflect.Map:
		return v.Len() == 0
	case reflect.Pointer, reflect.Interface:
		return v.IsNil()
	}
	return false
}

var (
	timeType    = reflect.TypeFor[time.Time]()
	rawJSONType = reflect.TypeFor[json.RawMessage]()
	rawTextType = reflect.TypeFor[RawJSON]()
)

// sameJSON compares two JSON texts as values; a text that is not JSON is
// compared byte for byte.
func sameJSON(a, b []byte) bool {
	if bytes.Equal(a, b) {
		return true
	}
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}
