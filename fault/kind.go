package fault

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
)

// Def defines a kind of fault F, whose fields a schedule writes as W (a
// struct of JSON fields, each omitempty; struct{} for none). Each kind's
// file registers its Def (Register), next to F and F's Inject: that is the
// whole of the kind, which the simulator, its replay, the specs and the
// codec read from the registry.
type Def[F Fault, W any] struct {
	// Name is the kind's stable name, a schedule's "type".
	Name string
	// Rank orders the kinds wherever order matters: a seed's swarm draws
	// the kinds' rates in rank order, and the simulator tries them in rank
	// order at each decision. A new kind takes a rank above the others'
	// (any new kind changes every seed's runs: it is one more choice at
	// each decision).
	Rank int
	// Wire is f's fields as a schedule writes them; Unwire reads them
	// back, and refuses values no fault of the kind has. Both nil: the
	// kind has no fields (W is struct{}).
	Wire   func(f F) W
	Unwire func(w W) (F, error)
	// Draw is how the simulator draws the kind from a seed; nil: never (a
	// schedule or a spec names it).
	Draw *Draw
	// Shrink is a smaller fault that may fail the same way (a shorter
	// jump), tried while a failing schedule shrinks and kept when it does;
	// false when there is none. Nil: the kind does not shrink (its step
	// may still be dropped).
	Shrink func(f F) (F, bool)
	// ForgetfulDisk: the kind acts on a forgetful file system (package
	// fault/lossyfs), which a run that draws or replays it mounts. It
	// draws from a stream of its own (Draw.Stream), so that a run without
	// such a disk is step for step the run of a seed that draws none.
	ForgetfulDisk bool
}

// Draw is how the simulator draws a kind from a run's seed.
type Draw struct {
	// Rates are the shares of a run's decisions that strike: each seed's
	// swarm picks one of them.
	Rates []float64
	// Stream, when not 0, is the kind's own random stream (seeded by the
	// run's seed and Stream), from which its rate is picked when the run
	// starts and its faults are drawn, before the run's other draws at
	// each decision; else they come from the run's stream.
	Stream uint64
	// BeforeOp: the kind is drawn once an operation is chosen, as a step
	// of its own just before it, on its process; else in place of a
	// decision.
	BeforeOp bool
	// Ready, when set, says whether the kind can strike at this decision
	// (a crash point needs an operation that reaches one); a kind not
	// ready draws nothing there.
	Ready func(d *Drawing) bool
	// Make draws the fault that strikes, and the process it strikes.
	Make func(d *Drawing) (Fault, int)
}

// Drawing is what a kind's draw reads of the run at a decision.
type Drawing struct {
	// R is the stream the kind draws from.
	R *rand.Rand
	// Processes is how many processes the run has; Process, for a kind
	// drawn before an operation, the operation's.
	Processes, Process int
	// CrashPoints are, for a kind drawn before an operation, the crash
	// points the backend declares for it.
	CrashPoints []string
	// NowMS is the run's clock, in milliseconds since its start;
	// Deadlines the deadlines (leases', claims') not yet past, the same
	// way, in order. BoundaryRate is the share of clock jumps that land on
	// one; MaxMS the longest a clock jump or a pause may be.
	NowMS        int64
	Deadlines    func() []int64
	BoundaryRate float64
	MaxMS        int64
	// Unsynced is the unsynced writes and truncations of each file of the
	// run's folder, in order, on a run on a forgetful file system (else
	// nil): the sectors each write covers (lossyfs.SectorSize), 0 for a
	// truncation.
	Unsynced func() (map[string][]int, error)
	// Entries is the directory entry ops of the run's folder not yet
	// durable, oldest first, under the run's entry model (else none).
	Entries func() ([]string, error)
}

// Kind is a registered kind of fault.
type Kind struct {
	Name          string
	Rank          int
	Draw          *Draw
	ForgetfulDisk bool
	typ           reflect.Type
	fields        []string
	encode        func(Fault) ([]byte, error)
	decode        func([]byte) (Fault, error)
	smaller       func(Fault) (Fault, bool)
}

var (
	kinds  []*Kind
	byName = map[string]*Kind{}
	byType = map[reflect.Type]*Kind{}
)

// Names are the kinds' stable names, as a schedule writes them, in rank
// order.
var Names []string

// Register adds a kind of fault to the registry; it panics when the name,
// the rank or the type is taken, or the Def is not whole.
func Register[F Fault, W any](d Def[F, W]) *Kind {
	typ := reflect.TypeFor[F]()
	wire := reflect.TypeFor[W]()
	switch {
	case d.Name == "" || byName[d.Name] != nil:
		panic(fmt.Sprintf("fault: kind %q: no name, or the name is taken", d.Name))
	case byType[typ] != nil:
		panic(fmt.Sprintf("fault: kind %s: type %s is kind %s already", d.Name, typ, byType[typ].Name))
	case slices.ContainsFunc(kinds, func(k *Kind) bool { return k.Rank == d.Rank }):
		panic(fmt.Sprintf("fault: kind %s: rank %d is taken", d.Name, d.Rank))
	case wire.Kind() != reflect.Struct || (d.Wire == nil) != (d.Unwire == nil) || (d.Wire == nil && wire.NumField() > 0):
		panic(fmt.Sprintf("fault: kind %s needs Wire and Unwire of a struct (none for struct{})", d.Name))
	case d.Draw != nil && (d.Draw.Make == nil || len(d.Draw.Rates) == 0):
		panic(fmt.Sprintf("fault: kind %s: a Draw needs Rates and Make", d.Name))
	case d.ForgetfulDisk && d.Draw != nil && d.Draw.Stream == 0:
		panic(fmt.Sprintf("fault: kind %s acts on a forgetful disk and draws from the run's stream", d.Name))
	}
	k := &Kind{Name: d.Name, Rank: d.Rank, Draw: d.Draw, ForgetfulDisk: d.ForgetfulDisk, typ: typ}
	for i := range wire.NumField() {
		name, _, _ := strings.Cut(wire.Field(i).Tag.Get("json"), ",")
		k.fields = append(k.fields, name)
	}
	k.encode = func(f Fault) ([]byte, error) {
		var w W
		if d.Wire != nil {
			w = d.Wire(f.(F))
		}
		return json.Marshal(w)
	}
	k.decode = func(b []byte) (Fault, error) {
		var w W
		if err := strictJSON(b, &w); err != nil {
			return nil, fmt.Errorf("fault %s: %w", d.Name, err)
		}
		if d.Unwire == nil {
			var f F
			return f, nil
		}
		return d.Unwire(w)
	}
	if d.Shrink != nil {
		k.smaller = func(f Fault) (Fault, bool) { return d.Shrink(f.(F)) }
	}
	i, _ := slices.BinarySearchFunc(kinds, k.Rank, func(k *Kind, rank int) int { return k.Rank - rank })
	kinds = slices.Insert(kinds, i, k)
	Names = slices.Insert(Names, i, k.Name)
	byName[k.Name], byType[typ] = k, k
	return k
}

// Kinds are the registered kinds, in rank order.
func Kinds() []*Kind { return slices.Clone(kinds) }

// KindOf is f's kind (nil when f's type registered none).
func KindOf(f Fault) *Kind { return byType[reflect.TypeOf(f)] }

// Name is f's stable name ("" when its type registered no kind).
func Name(f Fault) string {
	if k := KindOf(f); k != nil {
		return k.Name
	}
	return ""
}

// Smaller is a smaller fault than f that may fail the same way, as f's
// kind shrinks it (Def.Shrink); false when there is none.
func Smaller(f Fault) (Fault, bool) {
	if k := KindOf(f); k != nil && k.smaller != nil {
		return k.smaller(f)
	}
	return nil, false
}
