package model

import (
	"hash/maphash"
	"iter"
	"maps"
	"reflect"
)

// cowShards is how many parts a cow table is cut into.
const cowShards = 32

// cow is a table of an immutable state, copied on write one shard at a
// time: a write copies the shard of its key (about n/32 entries) and the
// shard pointers, not the whole table. A big draw puts 501 rows in one
// table, and a nondeterministic checker keeps many states and writes each
// one row at a time: copying whole tables made a run of n writes cost n^2
// (the client sweeps' largest cost after SQLite's own). Its iteration order
// is a map's, unspecified: callers that print or order sort, as before.
type cow[K comparable, V comparable] struct {
	shards *[cowShards]map[K]V
	n      int
}

var cowSeed = maphash.MakeSeed()

func cowShard[K comparable](k K) int { return int(maphash.Comparable(cowSeed, k) % cowShards) }

func (m cow[K, V]) len() int { return m.n }

func (m cow[K, V]) get(k K) (V, bool) {
	if m.shards == nil {
		var zero V
		return zero, false
	}
	v, ok := m.shards[cowShard(k)][k]
	return v, ok
}

// at is get without the ok.
func (m cow[K, V]) at(k K) V {
	v, _ := m.get(k)
	return v
}

func (m cow[K, V]) all() iter.Seq2[K, V] {
	return func(yield func(K, V) bool) {
		if m.shards == nil {
			return
		}
		for _, sh := range m.shards {
			for k, v := range sh {
				if !yield(k, v) {
					return
				}
			}
		}
	}
}

func (m cow[K, V]) keys() iter.Seq[K] {
	return func(yield func(K) bool) {
		for k := range m.all() {
			if !yield(k) {
				return
			}
		}
	}
}

// with is a copy of m with k set to v (deleted when v is nil).
func (m cow[K, V]) with(k K, v *V) cow[K, V] {
	var shards [cowShards]map[K]V
	if m.shards != nil {
		shards = *m.shards
	}
	i := cowShard(k)
	_, had := shards[i][k]
	if v == nil && !had {
		return m
	}
	sh := maps.Clone(shards[i])
	if sh == nil {
		sh = map[K]V{}
	}
	if v == nil {
		delete(sh, k)
		m.n--
	} else {
		sh[k] = *v
		if !had {
			m.n++
		}
	}
	shards[i] = sh
	m.shards = &shards
	return m
}

// sameCow compares two tables; a shard a write did not touch is shared
// between the states, and is then the same without a look at its entries.
func sameCow[K, V comparable](a, b cow[K, V]) bool {
	if a.n != b.n {
		return false
	}
	if a.n == 0 || a.shards == b.shards {
		return true
	}
	for i := range a.shards {
		x, y := a.shards[i], b.shards[i]
		if len(x) != len(y) {
			return false
		}
		if len(x) == 0 || reflect.ValueOf(x).UnsafePointer() == reflect.ValueOf(y).UnsafePointer() {
			continue
		}
		if !maps.Equal(x, y) {
			return false
		}
	}
	return true
}
