package sim

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/storecheck/storecheck/adapters"
	"github.com/storecheck/storecheck/fault/lossyfs"
	"github.com/storecheck/storecheck/linearizability/model"
	"github.com/storecheck/storecheck/spec"
)

// Coverage events every store's runs count.
const (
	// EventCrashInside: a process died at a crash point inside a
	// multi-write operation, before its commit.
	EventCrashInside = "crash inside a multi-write operation"
	// EventAnswerLost: a process died after an operation's commit, before
	// its answer.
	EventAnswerLost = "answer lost after the commit"
	// EventKill: a process was killed (between operations, or with one
	// paused at a yield point).
	EventKill = "process killed"
)

// Epoch is where every run's fake clock starts.
var Epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Launcher starts the processes of a simulated run: each one a handle on the
// run's one database, as separate processes of the seeds' stores would be.
type Launcher interface {
	// Start starts process n on the database at path; clock is the only
	// time it may read.
	Start(ctx context.Context, n int, path string, clock clockwork.Clock) (Process, error)
	// CrashPoints are the crash points the backend declares for the store
	// (none: the simulator draws no crash steps, and says so).
	CrashPoints() []string
}

// Process is one running backend process. Its Apply reaches the yield
// points of the context it is given (spec.WithYield), if the backend has
// any.
type Process interface {
	adapters.Target
	// Arm makes the process crash at point during its next operation, if
	// that operation reaches it. The operation in flight is then
	// indefinite, and the process is started again.
	Arm(point string) error
	// Kill ends the process at once, without closing anything.
	Kill() error
}

// Result is what a run found.
type Result struct {
	// Schedule is every step the run took: a replay of it is the same run.
	Schedule Schedule
	// Trace is the run step by step; the same schedule gives the same
	// trace, byte for byte. Moves is the same, by process.
	Trace []string
	Moves []Move
	// Failure is the first divergence from the model, or nil.
	Failure *Failure
	// Inconclusive: the overlapping operations allowed more orders than
	// the oracle keeps, and an answer diverged from the part it kept: the
	// orders it dropped may allow it, so the run proves nothing (never a
	// pass, nor a failure). A run whose every answer the part allowed
	// passes: the whole allows at least as much.
	Inconclusive bool
	// Stalled, when set, is why the run stopped with no verdict: the kit
	// or the machine stalled (the backend was given no CPU, or was held in
	// the kit's own file system), which says nothing of the backend
	// (adapters.StallError). Inconclusive is then set too.
	Stalled string
	// Yielded: some operation reached a yield point, so interleavings
	// inside operations were explored; CrashPoints: the backend declared
	// crash points, so crashes inside operations were.
	Yielded, CrashPoints bool
	// Coverage counts the events the run reached; Reached is when, in
	// step order: each event's count reaching 1, 2, 4, ... 128.
	Coverage map[string]int
	Reached  []Milestone
	// Issued is the step at which the clients stopped issuing operations
	// (the operations in flight run to their ends and the state is read
	// back after it): a guided sweep's child branches no later, where its
	// choices still make a run.
	Issued int
	// NoPowerCuts is why the run could not cut the power ("" when it
	// could): power cuts off, no FUSE here to mount the forgetful file
	// system with, or a backend that declares it keeps its writes across
	// process crashes only where the seed allows it.
	NoPowerCuts string
	// Rechecked: a sweep ran the seed twice (Rechecked); Nondeterminism is
	// where the two runs parted, nil when they gave the same trace.
	Rechecked      bool
	Nondeterminism *Divergence
	// ShrinkRuns is how many runs the shrink that made this result counted
	// (0: not shrunk).
	ShrinkRuns int
	// Ops is how many operations ran; SimTime how far the clock went.
	Ops     int
	SimTime time.Duration
}

// Move is one line of a run, on the process it happened on: of client
// Client's operation, or of the process itself (Client -1: a fault, a
// kill). Where a run overlaps operations inside a process, the client is
// the caller the interleaving's column is.
type Move struct {
	Step    int
	Process int
	Client  int
	Text    string
}

// Hash is the trace's SHA-256, in hex.
func (r Result) Hash() string {
	sum := sha256.Sum256([]byte(strings.Join(r.Trace, "\n")))
	return hex.EncodeToString(sum[:])
}

// Unexplored says what the run could not reach for want of a capability,
// one line each ("" when nothing).
func (r Result) Unexplored() []string {
	var out []string
	if !r.Yielded {
		out = append(out, "interleavings inside operations were not explored: the backend reached no yield point (operations interleave whole)")
	}
	if !r.CrashPoints {
		out = append(out, "crashes inside operations were not explored: the backend declares no crash points (processes are killed between and inside operations only)")
	}
	if r.NoPowerCuts != "" {
		out = append(out, "power loss not explored: "+r.NoPowerCuts)
	}
	if s := r.Schedule; s.Processes == 1 && s.Clients > 1 && !s.Overlap {
		out = append(out, spec.NoteRacesInsideProcess+": the run had one process and one operation in flight on it at a time (a backend that serves several requests at once declares concurrent_requests)")
	}
	return out
}

// The coverage keys of crash points: CrashedAt+point counts the runs that
// crashed there, armedAt+point the operations armed at it. A point armed
// and never crashed at is one the store never reaches.
const (
	CrashedAt = "crash at "
	armedAt   = "armed at "
)

// CrashPointsUnreached are the declared points no run crashed at, each
// with how many operations were armed at it.
func (c Coverage) CrashPointsUnreached(declared []string) (points []string, armed []int) {
	for _, p := range declared {
		if c[CrashedAt+p] == 0 {
			points, armed = append(points, p), append(armed, c[armedAt+p])
		}
	}
	return points, armed
}

// errorText is an error's first line without its kind, cut to a length a
// failure line holds.
func errorText(err error) string {
	s, _, _ := strings.Cut(err.Error(), "\n")
	s = strings.TrimPrefix(s, string(spec.KindOf(err))+": ")
	if r := []rune(s); len(r) > 300 {
		s = string(r[:300]) + "…"
	}
	return s
}

// Failure is where the backend left the contract.
type Failure struct {
	// Step is the failing step's index in the schedule (-1 before the
	// first).
	Step int
	// What the operation was, what the backend answered, and every answer
	// the model allowed there.
	What string
	Op   string
	Got  model.Outcome
	// Part, for an answer the model judges in parts (a read the seed runs
	// as a statement per key: model.Splitter), is the part of Got no
	// order allows, which Allowed are answers for; nil when Got was
	// judged whole.
	Part *model.Outcome
	// Message is the backend's own words when it answered an error: the
	// one line that often says why ("crash point ... not declared").
	Message string
	// Allowed are the answers the model allowed, each with the rule that
	// decides it; Rules the rules they name.
	Allowed []string
	Rules   []string
	// Why says how Rules were narrowed (model.BlameOf), and why there are
	// several when there are.
	Why string
	// AfterCrash, when a crash or a power cut came before the failure and
	// touched what the failing operation reads, names the operation the
	// crash left half applied, or the acknowledged writes the cut may
	// have lost, with their steps.
	AfterCrash string
	// Backend is set when the backend itself failed (could not start,
	// broke the protocol) rather than answering against the contract.
	Backend error
	// AfterPowerCut, when the run cut the power before the failure, is
	// the rule that holds every acknowledged write across a cut (it is in
	// Rules too), and PowerCutStep the last cut's step: a wrong answer
	// after one may be a write it lost.
	AfterPowerCut string
	PowerCutStep  int
	// CrashState is the states the run's cuts left the disk in, each at
	// its step: which unsynced writes it kept (whole or torn) and which
	// directory entry ops it undid, under which entry model: the states
	// the backend could not survive, when the failure is its.
	CrashState string
}

func (f *Failure) Error() string {
	if f.Backend != nil {
		return fmt.Sprintf("step %d: %s: backend failure: %v", f.Step, f.What, f.Backend)
	}
	got, f := f.differing()
	if f.Message != "" {
		got += " (its message: " + f.Message + ")"
	}
	msg := fmt.Sprintf("step %d: %s: the backend answered %s, the model allows %s", f.Step, f.What, got, strings.Join(f.Allowed, " or "))
	if len(f.Rules) > 0 {
		broken := f.Rules
		if f.AfterPowerCut != "" {
			broken = slices.DeleteFunc(slices.Clone(broken), func(r string) bool { return r == f.AfterPowerCut })
		}
		if len(broken) > 0 {
			msg += fmt.Sprintf("; broken: %s (%s)", strings.Join(broken, ", "), f.Why)
		}
	} else if f.Why != "" {
		// No rule of the contract (model.NoRuleOfTheContract): why none.
		msg += "; broken: " + f.Why
	}
	if f.AfterPowerCut != "" {
		msg += fmt.Sprintf(" (after the power cut at step %d: every write acknowledged before it must survive it, rule %s)", f.PowerCutStep, f.AfterPowerCut)
	}
	if f.CrashState != "" {
		msg += "; the crash states the power cuts left: " + f.CrashState
	}
	if f.AfterCrash != "" {
		msg += "; " + f.AfterCrash
	}
	return msg
}

// Signature is what "fails the same way" means when shrinking: the same
// operation answered with the same kind of wrong answer.
func (f *Failure) Signature() string {
	if f.Backend != nil {
		return "backend"
	}
	return f.Op + " -> " + outcomeName(f.Got)
}

// Run replays a schedule against the backend in a fresh folder under dir
// and checks every answer against the model as it goes; it stops at the
// first divergence. A schedule that cuts the power runs on a forgetful file
// system mounted under dir for the run; where none can be mounted, Run
// says so in its error.
func Run(ctx context.Context, subj Subject, b Launcher, s Schedule, dir string) (Result, error) {
	d, done, err := diskFor(subj, s, dir)
	defer done()
	if err != nil {
		return Result{}, err
	}
	return run(ctx, subj, b, s, dir, d)
}

// run is Run on disk (nil: under dir, with no power to cut).
func run(ctx context.Context, subj Subject, b Launcher, s Schedule, dir string, d *lossyfs.Disk) (Result, error) {
	e, cleanup, err := newEngine(ctx, subj, b, s, dir, d)
	if err != nil {
		return Result{}, err
	}
	defer cleanup()
	e.res.CrashPoints = len(b.CrashPoints()) > 0
	if e.res.Failure != nil {
		return *e.res, nil
	}
	for i, st := range s.Steps {
		if err := ctx.Err(); err != nil {
			return *e.res, err
		}
		if !e.do(i, st) {
			break
		}
	}
	return *e.res, nil
}
