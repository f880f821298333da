// Package fault holds what can go wrong, as values: kill the backend
// process, crash it at an armed point inside an operation, restart it on
// the same files, cut the power (losing what was never synced), jump the
// clock, make the database busy or fail with an
// I/O error at the adapter boundary, lose a reply, pause a client.
//
// A fault is injected into an Env, the things it acts on; a sequence of
// faults is data a simulator can generate from a seed and a report can
// print. After a crash or a lost reply the operation in flight is
// indefinite (spec.KindTable): it may or may not have taken effect, and
// every operation acknowledged before must still be there after a restart.
package fault

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jonboulle/clockwork"
)

// Process is a backend process the kit can crash and start again:
// *adapters.Exec is one.
type Process interface {
	// Kill ends the process with SIGKILL, between operations.
	Kill() error
	// Restart starts the program again on the same files.
	Restart(ctx context.Context) error
	// ArmCrash makes the process exit, without closing anything, the nth
	// time it reaches the named crash point.
	ArmCrash(ctx context.Context, point string, nth int) error
}

// Env is what faults act on. A fault whose part is missing fails to
// inject, with the reason, rather than doing nothing.
type Env struct {
	// Process is the backend process (nil for a backend in this process).
	Process Process
	// Clock is the clock the kit gives the backend.
	Clock *clockwork.FakeClock
	// Boundary is the Target wrapper the adapter-boundary faults go
	// through.
	Boundary *Injector
}

// Fault is one thing that goes wrong.
type Fault interface {
	Inject(ctx context.Context, env *Env) error
	String() string
}

// Kill SIGKILLs the backend process between operations.
type Kill struct{}

// CrashAt arms a crash point: the backend exits the Nth time (1 when 0) it
// reaches Point ("<operation>/<place>", as its hello declares them).
type CrashAt struct {
	Point string
	Nth   int
}

// Restart starts the backend process again on the same files (killing it
// first if it still runs).
type Restart struct{}

// ClockJump moves the kit's clock forward.
type ClockJump struct{ By time.Duration }

// Busy makes the next Times operations (1 when 0) named Op (any when "")
// fail before they reach the backend with the contract's io kind, as a
// database that stayed locked past its busy timeout. Definite (spec.NotSent):
// the kit refused it before the backend, although a store's own io is not.
type Busy struct {
	Op    string
	Times int
}

// IOError makes the next operation named Op (any when "") fail before it
// reaches the backend with the contract's io kind. Definite (spec.NotSent).
type IOError struct{ Op string }

// LostReply lets the next operation named Op (any when "") reach the
// backend and take effect, then loses its reply: the caller gets an
// indefinite timeout.
type LostReply struct{ Op string }

// Pause holds the next operation For before it is sent, as a client that
// stalled (a GC pause, a slow network) while its lease ran out.
type Pause struct {
	Op  string
	For time.Duration
}

// PowerCut cuts the power of the machine the backend runs on: every process
// on the database dies at once, everything the backend never synced (with
// fsync or fdatasync) is lost, and the processes start again on what was
// durable. The operations in flight are indefinite. With File set the cut
// is torn: the first Keep of that file's unsynced writes and truncations
// survive, as on a disk that wrote some of them before it lost power. It
// needs the database on a file system that forgets (package fault/lossyfs),
// which the simulator mounts; File names a file of the run's folder.
type PowerCut struct {
	File string
	Keep int
}

var errNoProcess = errors.New("the backend runs in this process: there is no process to crash")

func (Kill) Inject(ctx context.Context, env *Env) error {
	if env.Process == nil {
		return errNoProcess
	}
	return env.Process.Kill()
}

func (f CrashAt) Inject(ctx context.Context, env *Env) error {
	if env.Process == nil {
		return errNoProcess
	}
	return env.Process.ArmCrash(ctx, f.Point, max(f.Nth, 1))
}

func (Restart) Inject(ctx context.Context, env *Env) error {
	if env.Process == nil {
		return errNoProcess
	}
	return env.Process.Restart(ctx)
}

func (f ClockJump) Inject(ctx context.Context, env *Env) error {
	if env.Clock == nil {
		return errors.New("clock jump: the env has no fake clock")
	}
	if f.By < 0 {
		return fmt.Errorf("clock jump: the clock never goes back (%s)", f.By)
	}
	env.Clock.Advance(f.By)
	return nil
}

func (f PowerCut) Inject(ctx context.Context, env *Env) error {
	return errors.New("power cut: a power cut needs the database on a forgetful file system (fault/lossyfs), which the simulator mounts; an Env has none")
}

func (f Busy) Inject(ctx context.Context, env *Env) error {
	return boundary(env, f, planned{op: f.Op, times: max(f.Times, 1), io: "database is locked (SQLITE_BUSY): injected by fault.Busy"})
}

func (f IOError) Inject(ctx context.Context, env *Env) error {
	return boundary(env, f, planned{op: f.Op, times: 1, io: "disk I/O error (SQLITE_IOERR): injected by fault.IOError"})
}

func (f LostReply) Inject(ctx context.Context, env *Env) error {
	return boundary(env, f, planned{op: f.Op, times: 1, lose: true})
}

func (f Pause) Inject(ctx context.Context, env *Env) error {
	return boundary(env, f, planned{op: f.Op, times: 1, pause: f.For})
}

func boundary(env *Env, f Fault, p planned) error {
	if env.Boundary == nil {
		return fmt.Errorf("%s: the env has no Injector at the adapter boundary", f)
	}
	env.Boundary.plan(p)
	return nil
}

func (Kill) String() string        { return "kill the backend (SIGKILL)" }
func (f CrashAt) String() string   { return fmt.Sprintf("crash at %s (time %d)", f.Point, max(f.Nth, 1)) }
func (Restart) String() string     { return "restart the backend" }
func (f ClockJump) String() string { return fmt.Sprintf("jump the clock by %s", f.By) }
func (f PowerCut) String() string {
	if f.File == "" {
		return "cut the power (every unsynced write is lost)"
	}
	return fmt.Sprintf("cut the power, torn: the first %d unsynced writes of %s survive", f.Keep, f.File)
}
func (f Busy) String() string {
	return fmt.Sprintf("busy database for %d %s", max(f.Times, 1), opOrAny(f.Op))
}
func (f IOError) String() string   { return "I/O error on " + opOrAny(f.Op) }
func (f LostReply) String() string { return "lose the reply of " + opOrAny(f.Op) }
func (f Pause) String() string     { return fmt.Sprintf("pause %s before %s", f.For, opOrAny(f.Op)) }

func opOrAny(op string) string {
	if op == "" {
		return "any operation"
	}
	return op
}
