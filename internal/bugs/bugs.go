// Package bugs holds the deliberately broken variants of the reference
// stores. Each one breaks a single rule of a contract, so the kit can show
// that it catches what it claims (storecheck selftest's detection table).
// The package is internal: only storecheck's own tests and selftest open a
// broken store.
//
// Where the bugs live. The reference knows of none: it reads as the
// contract. Each reference store decides by a Rules value it is opened with
// (refcontinuity.Rules, ...): every decision a seed's comment shows going
// wrong in a real store is one rule there, a plain function (or the SQL
// condition it puts in a statement) of what the store read, named by the
// contract's rule, and Rules{} is the contract. A bug is built here from
// those seams, in one of two ways:
//
//   - a replaced rule: the reference opened with one rule of its Rules
//     swapped for a broken one (a fence compared with > where the contract
//     says >=), injected explicitly at Open, never a global; most bugs are
//     this, and the swap is the whole bug, one line;
//   - a wrapper: the reference's contract interface wrapped, for a bug that
//     is about the shape of an operation rather than one decision: a check
//     outside the transaction that writes (the stored state read in a read
//     transaction of its own, Stored, and the write, deciding on that
//     earlier read, in another, through a view of the same store whose
//     decision is the one taken: WithRules), a write-behind buffer, a commit
//     whose failed check still writes, an operation done as another;
//   - a database setting: the reference opened with SQLite's synchronous
//     lowered (synchronous.go) or its journal in memory (sidefile.go), a
//     commit acknowledged before it is on disk, which only a power cut
//     shows (Bug.NeedsPowerCut);
//   - files beside the database (sidefile.go): the runtime reference with
//     its attachments' bytes or its session meta answered from files of
//     its own, each made durable wrong in one step (no folder sync after
//     a rename, no sync, two files assumed to persist in order, a failed
//     sync retried), which only a crash state of the forgetful file
//     system's model shows.
//
// Build-tagged variants were another choice and are not used: selftest
// runs the correct reference and every bug in one binary, through every
// layer, and a build tag would need a binary per bug.
package bugs

import (
	"context"

	"github.com/storecheck/storecheck/adapters"
	"github.com/storecheck/storecheck/spec"
)

// Bug is one deliberate bug; the zero Bug is none.
type Bug struct{ name string }

// variant is what a registered bug is: the store it breaks and how to open
// it, and, for a bug whose store is declared otherwise than the
// reference's, how it is declared.
type variant struct {
	store string
	open  func(ctx context.Context, o spec.OpenOptions) (adapters.Target, error)
	// declares is the broken store's own capabilities, from the
	// reference's (nil: the reference's).
	declares func(spec.Capabilities) spec.Capabilities
}

// all is every bug of every store, in registration order.
var (
	all      []Bug
	variants = map[string]variant{}
)

// register adds a bug of store to the registry.
func register(name, store string, open func(ctx context.Context, o spec.OpenOptions) (adapters.Target, error)) Bug {
	b := Bug{name}
	all = append(all, b)
	variants[name] = variant{store: store, open: open}
	return b
}

// declared is b with its store declared as declares makes it from the
// reference's capabilities.
func declared(b Bug, declares func(spec.Capabilities) spec.Capabilities) Bug {
	v := variants[b.name]
	v.declares = declares
	variants[b.name] = v
	return b
}

// Name is the bug's stable name ("" for none).
func (b Bug) Name() string { return b.name }

// Store is the store the bug breaks ("" for none).
func (b Bug) Store() string { return variants[b.name].store }

// Open opens the broken store on o as an adapters.Target, in process and
// armable at the reference's crash points, as the reference's own
// OpenTarget opens the correct one.
func (b Bug) Open(ctx context.Context, o spec.OpenOptions) (adapters.Target, error) {
	return variants[b.name].open(ctx, o)
}

// Declares is the broken store's own capabilities, as its backend declares
// them in the hello (capabilities.stores), made from ref, the reference's;
// false when the bug's store is declared as the reference's is.
func (b Bug) Declares(ref spec.Capabilities) (spec.Capabilities, bool) {
	d := variants[b.name].declares
	if d == nil {
		return ref, false
	}
	return d(ref), true
}

// ByName finds a bug by its name.
func ByName(name string) (Bug, bool) {
	if _, ok := variants[name]; !ok {
		return Bug{}, false
	}
	return Bug{name}, true
}

// Of lists the bugs of store, in the order they are declared (each
// store's list is its registration's, internal/stores: the one list of
// every bug).
func Of(store string) []Bug {
	var out []Bug
	for _, b := range all {
		if b.Store() == store {
			out = append(out, b)
		}
	}
	return out
}

func always[T any](T, T) bool { return true }
