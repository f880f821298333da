package sim

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/storecheck/storecheck/adapters"
	"github.com/storecheck/storecheck/linearizability"
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
	// EventKill: a process was killed between operations.
	EventKill = "process killed between operations"
)

// Epoch is where every run's fake clock starts.
var Epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Backend starts the processes of a simulated run: each one a handle on the
// run's one database, as separate processes of the seeds' stores would be.
type Backend interface {
	// Start starts process n on the database at path; clock is the only
	// time it may read.
	Start(ctx context.Context, n int, path string, clock clockwork.Clock) (Process, error)
}

// Process is one running backend process.
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
	Schedule Schedule
	// Trace is the run step by step; the same schedule gives the same trace,
	// byte for byte.
	Trace []string
	// Failure is the first divergence from the model, or nil.
	Failure *Failure
	// Coverage counts the events the run reached.
	Coverage map[string]int
	// Ops is how many operations ran; SimTime how far the clock went.
	Ops     int
	SimTime time.Duration
}

// Hash is the trace's SHA-256, in hex.
func (r Result) Hash() string {
	sum := sha256.Sum256([]byte(strings.Join(r.Trace, "\n")))
	return hex.EncodeToString(sum[:])
}

// Failure is where the backend left the contract.
type Failure struct {
	// Step is the failing step's index in the schedule.
	Step int
	// What the step was, what the backend answered, and every answer the
	// model allowed there (one per state the run may be in after the
	// indefinite operations before it).
	What string
	Op   string
	Got  model.Outcome
	// Allowed are the answers the model allowed, each with the rule that
	// decides it; Rules the rules they name.
	Allowed []string
	Rules   []string
	// Backend is set when the backend itself failed (could not start,
	// broke the protocol) rather than answering against the contract.
	Backend error
}

func (f *Failure) Error() string {
	if f.Backend != nil {
		return fmt.Sprintf("step %d: %s: backend failure: %v", f.Step, f.What, f.Backend)
	}
	return fmt.Sprintf("step %d: %s: the backend answered %s, the model allows %s", f.Step, f.What, f.Got, strings.Join(f.Allowed, " or "))
}

// Signature is what "fails the same way" means when shrinking: the same
// operation answered with the same kind of wrong answer.
func (f *Failure) Signature() string {
	if f.Backend != nil {
		return "backend"
	}
	return f.Op + " -> " + outcomeName(f.Got)
}

// Run executes a schedule against the backend in a fresh folder under dir
// and checks every answer against the model as it goes; it stops at the
// first divergence.
func Run(ctx context.Context, subj Subject, b Backend, s Schedule, dir string) (Result, error) {
	work, err := os.MkdirTemp(dir, "sim-")
	if err != nil {
		return Result{}, err
	}
	defer os.RemoveAll(work)
	path := filepath.Join(work, s.Store+".db")
	clock := clockwork.NewFakeClockAt(Epoch)
	res := Result{Schedule: s, Coverage: map[string]int{}}
	contract := subj.Model.Contract()

	procs := make([]Process, s.Processes)
	defer func() {
		for _, p := range procs {
			if p != nil {
				p.Close()
			}
		}
	}()
	start := func(n int) error {
		p, err := b.Start(ctx, n, path, clock)
		if err != nil {
			return err
		}
		procs[n] = p
		return nil
	}
	for n := range procs {
		if err := start(n); err != nil {
			res.Failure = &Failure{What: fmt.Sprintf("start process %d", n), Backend: err}
			return res, nil
		}
	}

	oracle := newOracle(subj.Model)
	answers := spec.Answers{}
	for i, st := range s.Steps {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		line := fmt.Sprintf("%04d %s", i, st)
		switch st.Kind {
		case StepJump:
			clock.Advance(time.Duration(st.JumpMS) * time.Millisecond)
			res.SimTime += time.Duration(st.JumpMS) * time.Millisecond
		case StepKill:
			procs[st.Process].Kill()
			if err := start(st.Process); err != nil {
				res.Failure = &Failure{Step: i, What: line, Backend: fmt.Errorf("restart: %w", err)}
				return res, nil
			}
			res.Coverage[EventKill]++
		case StepOp:
			// What the backend is sent: the step with its references to
			// earlier answers resolved.
			op := answers.Resolve(st.Op)
			sent := st
			sent.Op = op
			line = fmt.Sprintf("%04d %s", i, sent)
			n := s.ProcessOf(st.Client)
			p := procs[n]
			if st.CrashAt != "" {
				if err := p.Arm(st.CrashAt); err != nil {
					res.Failure = &Failure{Step: i, What: line, Backend: fmt.Errorf("arm %s: %w", st.CrashAt, err)}
					return res, nil
				}
			}
			v, err := p.Apply(ctx, op)
			res.Ops++
			got, definite := linearizability.Outcome(contract, v, err)
			crashed := spec.KindOf(err) == spec.ErrCrashed
			if st.CrashAt != "" || crashed {
				// The process may have died at the point; either way, a
				// process armed for one operation is started afresh.
				p.Kill()
				if err := start(n); err != nil {
					res.Failure = &Failure{Step: i, What: line, Backend: fmt.Errorf("restart: %w", err)}
					return res, nil
				}
			}
			now := clock.Now().UnixMilli()
			for _, e := range oracle.events(op, now, got, definite) {
				res.Coverage[e]++
			}
			if crashed {
				res.Coverage["crash at "+st.CrashAt]++
				if strings.HasSuffix(st.CrashAt, "/after_commit") {
					res.Coverage[EventAnswerLost]++
				} else {
					res.Coverage[EventCrashInside]++
				}
			}
			if !definite {
				line += " -> ? (" + string(got.Kind) + ")"
				oracle.fork(op, now)
				break
			}
			line += " -> " + got.String()
			if got.Kind == "" && st.ID != "" {
				answers[st.ID] = got.Result
			}
			if allowed, ok := oracle.step(op, now, got); !ok {
				res.Trace = append(res.Trace, line)
				res.Failure = &Failure{Step: i, What: fmt.Sprintf("%04d %s", i, sent), Op: op.Name(), Got: got,
					Allowed: model.Allowed(allowed), Rules: model.Rules(allowed)}
				return res, nil
			}
			res.Coverage[op.Name()+":"+outcomeName(got)]++
		}
		res.Trace = append(res.Trace, line)
	}
	return res, nil
}

func outcomeName(o model.Outcome) string {
	if o.Kind != "" {
		return string(o.Kind)
	}
	return "ok"
}
