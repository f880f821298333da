package sim

import (
	"context"
	"fmt"

	"github.com/jonboulle/clockwork"

	"github.com/storecheck/storecheck/adapters"
	"github.com/storecheck/storecheck/reference/sqlitedb"
	"github.com/storecheck/storecheck/spec"
	"github.com/storecheck/storecheck/spec/suite"
)

// InProcess runs each simulated process as a handle of a Go store in this
// process, opened through b. A crash at an armed point ends the operation
// the way a killed process would (its transaction uncommitted, or its answer
// lost after the commit), and a kill drops the handle without writing what
// it has not written yet (adapters.Crash).
func InProcess(b adapters.Backend, store string) Backend { return inProcess{b: b, store: store} }

type inProcess struct {
	b     adapters.Backend
	store string
}

func (ip inProcess) Start(ctx context.Context, _ int, path string, clock clockwork.Clock) (Process, error) {
	t, err := ip.b.Open(ctx, ip.store, suite.Options{Path: path, Clock: clock})
	if err != nil {
		return nil, err
	}
	return &inProcessProc{target: t}, nil
}

type inProcessProc struct {
	target adapters.Target
	armed  string
	dead   bool
}

func (p *inProcessProc) Arm(point string) error {
	p.armed = point
	return nil
}

func (p *inProcessProc) Apply(ctx context.Context, op spec.Op) (any, error) {
	if p.dead {
		return nil, spec.Errorf(spec.ErrCrashed, "process is dead")
	}
	if p.armed != "" {
		ctx = sqlitedb.ArmCrash(ctx, p.armed)
		p.armed = ""
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
// protocol: a kill is a SIGKILL, and an armed crash point makes the program
// exit at that point for real.
func Exec(o adapters.ExecOptions, store string) Backend { return execBackend{o: o, store: store} }

type execBackend struct {
	o     adapters.ExecOptions
	store string
}

func (eb execBackend) Start(ctx context.Context, n int, path string, clock clockwork.Clock) (Process, error) {
	e, err := adapters.StartExec(ctx, eb.o)
	if err != nil {
		return nil, err
	}
	if len(e.Info().Capabilities.CrashPoints[eb.store]) == 0 {
		e.Close()
		return nil, fmt.Errorf("backend %s declares no crash points for the %s store: the simulator needs them", e.Info().Name, eb.store)
	}
	t, err := e.Open(ctx, eb.store, suite.Options{Path: path, Clock: clock})
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

func (p *execProc) Close() error {
	p.target.Close()
	return p.e.Close()
}
