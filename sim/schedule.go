// Package sim is the deterministic simulator: one seed decides which logical
// client moves next, what it does, how far the fake clock jumps, and when and
// where a backend process crashes. The schedule the seed generates is
// explicit data, so a failure can be saved, replayed, and shrunk to a small
// schedule that still fails the same way. The oracle is the contract's model
// (linearizability/model), stepped in the simulated order.
package sim

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/storecheck/storecheck/spec"
)

// Step kinds.
const (
	// StepOp: a client issues an operation on its process; CrashAt, when
	// set, arms that crash point for this operation only.
	StepOp = "op"
	// StepJump: the fake clock moves forward.
	StepJump = "jump"
	// StepKill: a process dies between operations and starts again on the
	// same files.
	StepKill = "kill"
)

// Step is one move of a schedule.
type Step struct {
	Kind string
	// ID names an operation step for the references of later steps to its
	// answer (spec.Ref): the client's n-th operation, spec.OpID.
	ID      string
	Client  int
	Op      spec.Op
	CrashAt string
	JumpMS  int64
	Process int
}

// Schedule is a whole simulated run: how many clients over how many
// processes (client c runs on process c mod Processes), and the steps.
type Schedule struct {
	Store     string
	Seed      int64
	Clients   int
	Processes int
	Steps     []Step
}

// ProcessOf is the process client c runs on.
func (s Schedule) ProcessOf(client int) int { return client % max(s.Processes, 1) }

type stepJSON struct {
	Kind    string          `json:"kind"`
	ID      string          `json:"id,omitempty"`
	Client  int             `json:"client,omitempty"`
	Op      string          `json:"op,omitempty"`
	Args    json.RawMessage `json:"args,omitempty"`
	CrashAt string          `json:"crash_at,omitempty"`
	JumpMS  int64           `json:"jump_ms,omitempty"`
	Process int             `json:"process,omitempty"`
}

type scheduleJSON struct {
	Store     string     `json:"store"`
	Seed      int64      `json:"seed"`
	Clients   int        `json:"clients"`
	Processes int        `json:"processes"`
	Steps     []stepJSON `json:"steps"`
}

// MarshalJSON writes each operation as its name and arguments.
func (s Schedule) MarshalJSON() ([]byte, error) {
	out := scheduleJSON{Store: s.Store, Seed: s.Seed, Clients: s.Clients, Processes: s.Processes, Steps: make([]stepJSON, len(s.Steps))}
	for i, st := range s.Steps {
		j := stepJSON{Kind: st.Kind, ID: st.ID, Client: st.Client, CrashAt: st.CrashAt, JumpMS: st.JumpMS, Process: st.Process}
		if st.Op != nil {
			args, err := json.Marshal(st.Op)
			if err != nil {
				return nil, err
			}
			j.Op, j.Args = st.Op.Name(), args
		}
		out.Steps[i] = j
	}
	return json.MarshalIndent(out, "", " ")
}

// ReadSchedule decodes a saved schedule of contract's store, checking that
// every step is well formed.
func ReadSchedule(path string, contracts []spec.Contract) (Schedule, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Schedule{}, err
	}
	var raw scheduleJSON
	if err := json.Unmarshal(b, &raw); err != nil {
		return Schedule{}, fmt.Errorf("%s: %w", path, err)
	}
	var contract *spec.Contract
	for i := range contracts {
		if contracts[i].Name == raw.Store {
			contract = &contracts[i]
		}
	}
	if contract == nil {
		return Schedule{}, fmt.Errorf("%s: unknown store %q", path, raw.Store)
	}
	if raw.Clients < 1 || raw.Processes < 1 {
		return Schedule{}, fmt.Errorf("%s: a schedule needs at least one client and one process", path)
	}
	s := Schedule{Store: raw.Store, Seed: raw.Seed, Clients: raw.Clients, Processes: raw.Processes, Steps: make([]Step, len(raw.Steps))}
	for i, j := range raw.Steps {
		st := Step{Kind: j.Kind, ID: j.ID, Client: j.Client, CrashAt: j.CrashAt, JumpMS: j.JumpMS, Process: j.Process}
		switch j.Kind {
		case StepOp:
			if st.Op, err = contract.DecodeOp(j.Op, j.Args); err != nil {
				return Schedule{}, fmt.Errorf("%s: step %d: %w", path, i, err)
			}
			if j.Client < 0 || j.Client >= raw.Clients {
				return Schedule{}, fmt.Errorf("%s: step %d: client %d of %d", path, i, j.Client, raw.Clients)
			}
		case StepJump:
			if j.JumpMS < 0 {
				return Schedule{}, fmt.Errorf("%s: step %d: the clock cannot jump back (%d ms)", path, i, j.JumpMS)
			}
		case StepKill:
			if j.Process < 0 || j.Process >= raw.Processes {
				return Schedule{}, fmt.Errorf("%s: step %d: process %d of %d", path, i, j.Process, raw.Processes)
			}
		default:
			return Schedule{}, fmt.Errorf("%s: step %d: unknown kind %q (want op, jump or kill)", path, i, j.Kind)
		}
		s.Steps[i] = st
	}
	return s, nil
}

// WriteFile saves the schedule.
func (s Schedule) WriteFile(path string) error {
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(b, '\n'), 0o644)
}

// String is the step as a trace shows it.
func (st Step) String() string {
	switch st.Kind {
	case StepJump:
		return fmt.Sprintf("clock +%dms", st.JumpMS)
	case StepKill:
		return fmt.Sprintf("kill process %d", st.Process)
	}
	args, _ := json.Marshal(st.Op)
	s := fmt.Sprintf("client %d: %s %s", st.Client, st.Op.Name(), args)
	if st.CrashAt != "" {
		s += " [crash at " + st.CrashAt + "]"
	}
	return s
}
