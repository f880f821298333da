package sim

import (
	"context"
	"sync"

	"github.com/jonboulle/clockwork"

	"github.com/storecheck/storecheck/adapters"
	"github.com/storecheck/storecheck/spec"
)

// InProcess runs each simulated process as a handle of a Go store in this
// process, opened through b. A crash at an armed point ends the operation
// the way a killed process would (its transaction uncommitted, or its answer
// lost after the commit), and a kill drops the handle without writing what
// it has not written yet (adapters.Crash). The store reaches the yield
// points of the context it is given (spec.Yield) if it has any: the
// reference does, before and after each of its transactions.
func InProcess(b adapters.Driver, store string) Launcher { return inProcess{b: b, store: store} }

type inProcess struct {
	b     adapters.Driver
	store string
}

func (ip inProcess) CrashPoints() []string { return ip.b.Info().Capabilities.CrashPoints[ip.store] }

func (ip inProcess) Start(ctx context.Context, _ int, path string, clock clockwork.Clock) (Process, error) {
	t, err := ip.b.Open(ctx, ip.store, spec.OpenOptions{Path: path, Clock: clock})
	if err != nil {
		return nil, err
	}
	return &inProcessProc{target: t}, nil
}

type inProcessProc struct {
	target adapters.Target
	dead   bool
}

// Arm arms the crash point on the target (adapters.Armer: the reference's
// in-process targets arm their stores' points); a target that cannot arm
// points declares none, so the simulator never asks.
func (p *inProcessProc) Arm(point string) error {
	return adapters.Arm(p.target, point)
}

func (p *inProcessProc) Apply(ctx context.Context, op spec.Op) (any, error) {
	if p.dead {
		return nil, spec.Errorf(spec.ErrCrashed, "process is dead")
	}
	return p.target.Apply(ctx, op)
}

func (p *inProcessProc) Kill() error {
	if p.dead {
		return nil
	}
	p.dead = true
	return adapters.Crash(p.target)
}

func (p *inProcessProc) Close() error {
	if p.dead {
		return nil
	}
	p.dead = true
	return p.target.Close()
}

// Exec runs each simulated process as a backend program speaking the wire
// protocol, one program per process: a kill is a SIGKILL, an armed crash
// point makes the program exit at that point for real, and a backend that
// declares yield points is asked to pause at each of them.
func Exec(o adapters.ExecOptions, store string) Launcher { return &execBackend{o: o, store: store} }

type execBackend struct {
	o      adapters.ExecOptions
	store  string
	mu     sync.Mutex
	points []string
}

func (eb *execBackend) CrashPoints() []string {
	eb.mu.Lock()
	defer eb.mu.Unlock()
	return eb.points
}

func (eb *execBackend) Start(ctx context.Context, n int, path string, clock clockwork.Clock) (Process, error) {
	e, err := adapters.StartExec(ctx, eb.o)
	if err != nil {
		return nil, err
	}
	eb.mu.Lock()
	eb.points = e.Info().Capabilities.CrashPoints[eb.store]
	eb.mu.Unlock()
	t, err := e.Open(ctx, eb.store, spec.OpenOptions{Path: path, Clock: clock})
	if err != nil {
		e.Close()
		return nil, err
	}
	return &execProc{e: e, target: t}, nil
}

type execProc struct {
	e      *adapters.Exec
	target adapters.Target
}

func (p *execProc) Arm(point string) error {
	return p.e.ArmCrash(context.Background(), point, 1)
}

func (p *execProc) Apply(ctx context.Context, op spec.Op) (any, error) {
	return p.target.Apply(ctx, op)
}

func (p *execProc) Kill() error { return p.e.Kill() }

// Failed is the backend's own failure (a protocol violation, a silence
// the kit timed out on, a death the kit did not cause), nil while none.
func (p *execProc) Failed() error { return p.e.Err() }

// Doom tells the process's adapter that whatever the process does from now
// on (dies of SIGBUS on a mapped file, exits after an EIO) is the kit's
// doing: the power is about to be cut under it.
func (p *execProc) Doom() { p.e.Expect() }

func (p *execProc) Close() error {
	p.target.Close()
	return p.e.Close()
}
