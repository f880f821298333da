package conformance

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/jonboulle/clockwork"

	"github.com/storecheck/storecheck/adapters"
	"github.com/storecheck/storecheck/internal/stores"
	"github.com/storecheck/storecheck/linearizability"
	"github.com/storecheck/storecheck/reports"
	"github.com/storecheck/storecheck/sim"
	"github.com/storecheck/storecheck/spec"
	cli "github.com/storecheck/storecheck/spec/client"
	c "github.com/storecheck/storecheck/spec/continuity"
	r "github.com/storecheck/storecheck/spec/runtime"
	"github.com/storecheck/storecheck/spec/suite"
)

// Backend is what a check runs against: Go stores in this process (the
// embedded reference, a Go author's harness, any adapters.Driver), or a
// program speaking the wire protocol. The zero Backend is none.
type Backend struct {
	// local is the backend in this process; nil for a program.
	local adapters.Driver
	// command is the program, when it is one.
	command []string
	env     []string
	// harness: the stores of a Go harness, which no storecheck command
	// reaches.
	harness bool
}

// Reference is the embedded reference: every store the kit knows, on
// modernc.org/sqlite, in this process.
func Reference() Backend { return Backend{local: stores.Reference()} }

// InProcess is the stores of a Go harness, in this process: the specs call
// them, and the linearizability check and the simulator open their handles
// through the harness's openers. The simulator pauses their operations at
// the yield points they reach (spec.Yield) and crashes them at the crash
// points the harness declares (Harness.CrashPoints) when they reach one
// (spec.CrashPoint); a crashed handle is dropped as a killed process's
// would be (its Crash method when it has one, else Close), and the store
// opened again on the same file.
func InProcess(h suite.Harness) Backend { return Backend{local: harnessBackend(h), harness: true} }

// Adapter is b, a backend in this process as the adapters see it (the
// reference with a deliberate bug, a wrapper of one); for a program use
// Program, which starts a process per handle.
func Adapter(b adapters.Driver) Backend { return Backend{local: b} }

// Program is a program speaking the wire protocol (docs/protocol.md),
// started with command: a process of its own for every handle of a
// linearizability run after the first, and for every simulated process.
func Program(command ...string) Backend { return Backend{command: slices.Clone(command)} }

// WithEnv is b, a program, started with env (NAME=value) added to this
// process's environment; its reproduce lines set env too, so that they run
// what failed.
func (b Backend) WithEnv(env ...string) Backend {
	b.env = append(slices.Clone(b.env), env...)
	return b
}

// harnessBackend is h's stores as an in-process adapters.Driver: each one
// opened through h's opener and applied as operation values
// (adapters.Local), armable at its crash points.
func harnessBackend(h suite.Harness) adapters.Driver {
	caps := h.Capabilities
	caps.ClientSchemaWriter = caps.ClientSchemaWriter || h.WriteClientSchema != nil
	var local []adapters.LocalStore
	if h.Continuity != nil {
		local = append(local, adapters.LocalStore{Contract: c.Contract, Open: localOpener(h.Continuity, c.Apply)})
	}
	if h.Runtime != nil {
		local = append(local, adapters.LocalStore{Contract: r.Contract, Open: localOpener(h.Runtime, r.Apply)})
	}
	if h.Client != nil {
		ls := adapters.LocalStore{Contract: cli.Contract, Open: localOpener(h.Client, cli.Apply)}
		if w := h.WriteClientSchema; w != nil {
			ls.WriteSchema = func(_ context.Context, path, marker string, version int) error { return w(path, marker, version) }
		}
		local = append(local, ls)
	}
	var own adapters.StoreCapabilityMap
	for store, c := range h.StoreCapabilities {
		if own == nil {
			own = adapters.StoreCapabilityMap{}
		}
		c.ClientSchemaWriter = c.ClientSchemaWriter || (store == cli.StoreName && h.WriteClientSchema != nil)
		own[store] = adapters.StoreCapabilities{Capabilities: c, Yields: true}
	}
	return adapters.InProcess(adapters.Hello{Name: h.Name, Capabilities: adapters.Capabilities{
		Capabilities: caps, Yields: true, CrashPoints: h.CrashPoints, Stores: own}}, local...)
}

// validateCrashPoints says what of h's declared crash points the simulator
// could never arm: a store h does not open, a point not named
// "<operation>/<place>" after one of the store's operations.
func validateCrashPoints(info adapters.Hello) error {
	for _, store := range slices.Sorted(maps.Keys(info.Capabilities.CrashPoints)) {
		points := info.Capabilities.CrashPoints[store]
		reg, ok := stores.Lookup(store)
		if !ok || !slices.Contains(info.Stores, store) {
			return configError("CrashPoints", "crash points of %q, a store the harness does not open (it opens: %s)", store, strings.Join(info.Stores, ", "))
		}
		for _, p := range points {
			op, place, _ := strings.Cut(p, "/")
			if _, isOp := reg.Contract.Op(op); !isOp || place == "" {
				return configError("CrashPoints", "%s crash point %q: want <operation>/<place>, the operation one of the %s store's", store, p, store)
			}
		}
	}
	return nil
}

// localOpener opens a harness's store of type S as an in-process Target.
func localOpener[S interface{ Close() error }](open func(context.Context, spec.OpenOptions) (S, error),
	apply func(context.Context, S, spec.Op) (any, error)) adapters.Opener {
	return func(ctx context.Context, o spec.OpenOptions) (adapters.Target, error) {
		s, err := open(ctx, o)
		if err != nil {
			return nil, err
		}
		if any(s) == nil {
			return nil, spec.Errorf(spec.ErrBackendFailure, "the harness's opener answered neither a store nor an error")
		}
		return adapters.Local(s, apply), nil
	}
}

// A BackendError is a backend that failed (it would not start, broke the
// wire protocol, or crashed outside an injected fault): what the run found
// before is kept, but it is no verdict on the backend's conformance.
type BackendError struct{ Err error }

func (e *BackendError) Error() string { return "backend failure: " + e.Err.Error() }
func (e *BackendError) Unwrap() error { return e.Err }

// session is a backend opened for one run: its stores as Targets (through
// b), what it declared, and, for a program, its first process.
type session struct {
	b       adapters.Driver
	info    adapters.Hello
	exec    *adapters.Exec
	options adapters.ExecOptions
	command []string
	// env is what the program was started with on top of this process's
	// environment (WithEnv): its reproduce lines set it too.
	env     []string
	harness bool

	mu       sync.Mutex
	siblings []*adapters.Exec // the processes of a history's other handles
}

// open opens b for a run configured by cfg: a program is started (its
// hello read); the capabilities cfg withdraws are taken off either way.
func (b Backend) open(ctx context.Context, cfg Config) (*session, error) {
	s := &session{command: b.command, env: b.env, harness: b.harness}
	switch {
	case b.local != nil:
		s.b = b.local
	case len(b.command) > 0:
		s.options = b.execOptions(cfg)
		e, err := adapters.StartExec(ctx, s.options)
		if err != nil {
			return nil, &BackendError{err}
		}
		s.b, s.exec = e, e
	default:
		return nil, configError("Backend", "no backend: want Reference, InProcess, Adapter or Program")
	}
	if len(cfg.Withdraw) > 0 {
		s.b = withdrawn{s.b, cfg.Withdraw}
	}
	s.info = s.b.Info()
	return s, nil
}

// execOptions run b's program over the wire protocol, speaking every
// store the kit knows.
func (b Backend) execOptions(cfg Config) adapters.ExecOptions {
	o := adapters.ExecOptions{Command: b.command, Env: b.env, Timeout: cfg.ReplyTimeout, Contracts: stores.Contracts()}
	if cfg.Verbose && cfg.Log != nil {
		o.Stderr = cfg.Log
	}
	return o
}

// err is the backend's own failure so far (nil in this process): its
// first process's, else the first of the processes a history opened.
func (s *session) err() error {
	if s.exec == nil {
		return nil
	}
	if err := s.exec.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.siblings {
		if err := e.Err(); err != nil {
			return err
		}
	}
	return nil
}

// ownProcess starts, for a spec that cuts the power, a process of the
// program's own (suite.Harness.OwnProcess), its answers counted with the
// rest and its capabilities withdrawn as the config says; nil in process.
func (s *session) ownProcess(cfg Config, answers *adapters.Answers) func(context.Context) (suite.Harness, func(), func() error, error) {
	if s.exec == nil {
		return nil
	}
	return func(ctx context.Context) (suite.Harness, func(), func() error, error) {
		e, err := s.exec.Sibling(ctx)
		if err != nil {
			return suite.Harness{}, nil, nil, err
		}
		s.mu.Lock()
		s.siblings = append(s.siblings, e)
		s.mu.Unlock()
		var b adapters.Driver = e
		if len(cfg.Withdraw) > 0 {
			b = withdrawn{b, cfg.Withdraw}
		}
		return suite.HarnessOf(adapters.Counting(b, answers)), e.Expect, e.Kill, nil
	}
}

func (s *session) close() error {
	if s.exec == nil {
		return nil
	}
	return s.exec.Close()
}

// implements reports whether the backend implements store.
func (s *session) implements(store string) bool { return slices.Contains(s.info.Stores, store) }

// caps are the capabilities the backend declared for store (its own, where
// the hello gives the store capabilities of its own), less the withdrawn.
func (s *session) caps(store string) spec.Capabilities {
	return s.info.CapabilitiesOf(store).Capabilities
}

// simBackend starts the simulated processes of store: handles in this
// process, or a program's process each.
func (s *session) simBackend(store string) sim.Launcher {
	if s.exec != nil {
		return sim.Exec(s.options, store)
	}
	return sim.InProcess(s.b, store)
}

// withdrawn is a Backend with some of its declared capabilities taken off:
// the backend-wide ones and each store's own.
type withdrawn struct {
	adapters.Driver
	names []string
}

func (w withdrawn) Info() adapters.Hello {
	info := w.Driver.Info()
	info.Capabilities.Capabilities = withdraw(info.Capabilities.Capabilities, w.names)
	if len(info.Capabilities.Stores) > 0 {
		own := adapters.StoreCapabilityMap{}
		for store, c := range info.Capabilities.Stores {
			c.Capabilities = withdraw(c.Capabilities, w.names)
			own[store] = c
		}
		info.Capabilities.Stores = own
	}
	return info
}

func (w withdrawn) WriteForeignSchema(ctx context.Context, store, path, marker string, version int) error {
	sw, ok := w.Driver.(adapters.SchemaWriter)
	if !ok {
		return spec.Errorf(spec.ErrBadRequest, "write_foreign_schema: backend %s writes no %q file", w.Info().Name, store)
	}
	return sw.WriteForeignSchema(ctx, store, path, marker, version)
}

// opener opens every handle of a linearizability run of store s on one
// database in dir (in memory when the backend keeps no files: then one
// handle only); nil when it does not implement the store. A program gets a
// process of its own for every handle after the first, so that races
// between processes are real whatever the backend's own concurrency;
// closing the handle ends its process.
func (s *session) opener(store, dir string) (linearizability.Opener, int) {
	if !s.implements(store) {
		return nil, 0
	}
	path, handles := "", 1
	if caps := s.caps(store); caps.Files {
		path = filepath.Join(dir, store+".db")
		if caps.SharedFiles {
			handles = 2
		}
	}
	var mu sync.Mutex
	opened := 0
	return func(ctx context.Context, clock clockwork.Clock) (adapters.Target, error) {
		o := spec.OpenOptions{Path: path, Clock: clock}
		mu.Lock()
		opened++
		first := opened == 1
		mu.Unlock()
		if first || s.exec == nil {
			return s.b.Open(ctx, store, o)
		}
		e, err := s.exec.Sibling(ctx)
		if err != nil {
			return nil, err
		}
		s.mu.Lock()
		s.siblings = append(s.siblings, e)
		s.mu.Unlock()
		t, err := e.Open(ctx, store, o)
		if err != nil {
			e.Close()
			return nil, err
		}
		return ownProcess{t, e}, nil
	}, handles
}

// ownProcess is a handle with a backend process of its own, which ends
// with it.
type ownProcess struct {
	adapters.Target
	e *adapters.Exec
}

func (t ownProcess) Close() error { return errors.Join(t.Target.Close(), t.e.Close()) }

// logf writes a line to the config's log, if any.
func (c Config) logf(format string, args ...any) {
	if c.Log != nil {
		fmt.Fprintf(c.Log, format+"\n", args...)
	}
}

// progress is a layer's progress on the config's Progress (quiet without).
func (c Config) progress(label string, total int) *reports.Progress {
	if c.Progress == nil {
		return reports.StartProgress(io.Discard, reports.ProgressQuiet, label, total)
	}
	return reports.StartProgress(c.Progress, reports.ProgressAuto, label, total)
}
