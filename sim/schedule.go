// Package sim is the deterministic simulator: one seed decides which logical
// client issues which operation, and, at every yield point inside the
// operations in flight, which process moves next; when the fake clock
// jumps; and which fault strikes where. Every decision is recorded as a
// step of an explicit schedule, so a failure can be saved, replayed, and
// shrunk to a small schedule that still fails the same way. The oracle is
// the contract's model (linearizability/model), which judges overlapping
// operations by every order their overlap allows.
package sim

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"

	"github.com/storecheck/storecheck/fault"
	"github.com/storecheck/storecheck/fault/lossyfs"
	"github.com/storecheck/storecheck/spec"
)

// Step kinds.
const (
	// StepOp: a client issues an operation on its process. The operation
	// runs to its first yield point (or to its end, for a backend without
	// yield points). When the process still has an operation in flight,
	// that one runs to its end first; where the schedule overlaps
	// operations inside a process (Schedule.Overlap), only the client's
	// own does.
	StepOp = "op"
	// StepResume: the operation in flight on a process runs from the yield
	// point it waits at to the next one (or to its end); where the
	// schedule overlaps operations inside a process, the operation of the
	// step's client, on the client's process. A resume of nothing in
	// flight does nothing.
	StepResume = "resume"
	// StepFault: a fault (package fault) strikes: a clock jump, a kill, a
	// crash point armed, a busy database, an I/O error, a lost reply, a
	// pause, a restart, a power cut (which acts on every process). Faults
	// that act on a process act on Process.
	StepFault = "fault"
)

// Step is one move of a schedule.
type Step struct {
	Kind string
	// ID names an operation step for the references of later steps to its
	// answer (spec.Ref): the client's n-th operation, spec.OpID.
	ID      string
	Client  int
	Op      spec.Op
	Process int
	Fault   fault.Fault
	// Alone is an operation issued with none other in flight, and none
	// issued until it has ended (a big draw's): the oracle judges it
	// whole, as a read of many keys in one moment, which it is when
	// nothing comes between its parts.
	Alone bool
}

// Schedule is a whole simulated run: how many clients over how many
// processes (client c runs on process c mod Processes), and every step.
type Schedule struct {
	Store     string
	Seed      int64
	Clients   int
	Processes int
	// Strategy says how the run chose who moves at each yield point
	// ("pct depth 2", "random"), for the report; a replay does not read it.
	Strategy string
	// Capabilities are the backend's declared choices the run's model read
	// (Subject.Capabilities).
	Capabilities spec.Capabilities
	// Overlap: every client may have an operation in flight, several on
	// one process, as callers of a backend that serves several requests
	// at once (capability concurrent_requests); without it, a process has
	// one operation in flight at a time.
	Overlap bool
	// EntryModel is the directory-entry model the run's power cuts follow
	// (lossyfs.EntriesPOSIX or EntriesExt4Ordered; "" for entry ops durable
	// at once), drawn from the seed for a run on a forgetful file system.
	EntryModel string
	// Branches, for a guided sweep's child, are where its random streams
	// were drawn afresh (guide.go); a replay reads the steps only.
	Branches []Branch
	Steps    []Step
}

// ProcessOf is the process client c runs on.
func (s Schedule) ProcessOf(client int) int { return client % max(s.Processes, 1) }

type stepJSON struct {
	Kind    string          `json:"kind"`
	ID      string          `json:"id,omitempty"`
	Client  int             `json:"client,omitempty"`
	Op      string          `json:"op,omitempty"`
	Args    json.RawMessage `json:"args,omitempty"`
	Process int             `json:"process,omitempty"`
	Fault   json.RawMessage `json:"fault,omitempty"`
	Alone   bool            `json:"alone,omitempty"`
}

type scheduleJSON struct {
	Store     string `json:"store"`
	Seed      int64  `json:"seed"`
	Clients   int    `json:"clients"`
	Processes int    `json:"processes"`
	Strategy  string `json:"strategy,omitempty"`
	// Capabilities: see Schedule.Capabilities.
	Capabilities *spec.Capabilities `json:"capabilities,omitempty"`
	Overlap      bool               `json:"overlap,omitempty"`
	EntryModel   string             `json:"entry_model,omitempty"`
	Branches     []Branch           `json:"branches,omitempty"`
	Steps        []stepJSON         `json:"steps"`
}

// MarshalJSON writes each operation as its name and arguments, each fault
// as fault.Marshal writes it.
func (s Schedule) MarshalJSON() ([]byte, error) {
	out := scheduleJSON{Store: s.Store, Seed: s.Seed, Clients: s.Clients, Processes: s.Processes, Strategy: s.Strategy,
		Overlap: s.Overlap, EntryModel: s.EntryModel, Branches: s.Branches, Steps: make([]stepJSON, len(s.Steps))}
	if s.Capabilities != (spec.Capabilities{}) {
		caps := s.Capabilities
		out.Capabilities = &caps
	}
	for i, st := range s.Steps {
		j := stepJSON{Kind: st.Kind, ID: st.ID, Client: st.Client, Process: st.Process, Alone: st.Alone}
		if st.Op != nil {
			args, err := json.Marshal(st.Op)
			if err != nil {
				return nil, err
			}
			j.Op, j.Args = st.Op.Name(), args
		}
		if st.Fault != nil {
			f, err := fault.Marshal(st.Fault)
			if err != nil {
				return nil, fmt.Errorf("step %d: %w", i, err)
			}
			j.Fault = f
		}
		out.Steps[i] = j
	}
	return json.MarshalIndent(out, "", " ")
}

// ReadSchedule decodes a saved schedule of one of contracts' stores,
// checking that every step is well formed.
func ReadSchedule(path string, contracts []spec.Contract) (Schedule, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return Schedule{}, err
	}
	var raw scheduleJSON
	if err := spec.StrictUnmarshal(b, &raw); err != nil {
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
	s := Schedule{Store: raw.Store, Seed: raw.Seed, Clients: raw.Clients, Processes: raw.Processes, Strategy: raw.Strategy,
		Overlap: raw.Overlap, EntryModel: raw.EntryModel, Branches: raw.Branches, Steps: make([]Step, len(raw.Steps))}
	if !slices.Contains(append([]string{lossyfs.EntriesDurable}, lossyfs.EntryModels...), raw.EntryModel) {
		return Schedule{}, fmt.Errorf("%s: unknown entry_model %q (want %q)", path, raw.EntryModel, lossyfs.EntryModels)
	}
	if raw.Capabilities != nil {
		s.Capabilities = *raw.Capabilities
	}
	for i, j := range raw.Steps {
		st := Step{Kind: j.Kind, ID: j.ID, Client: j.Client, Process: j.Process, Alone: j.Alone}
		if j.Process < 0 || j.Process >= raw.Processes {
			return Schedule{}, fmt.Errorf("%s: step %d: process %d of %d", path, i, j.Process, raw.Processes)
		}
		switch j.Kind {
		case StepOp:
			if st.Op, err = contract.DecodeOp(j.Op, j.Args); err != nil {
				return Schedule{}, fmt.Errorf("%s: step %d: %w", path, i, err)
			}
			if j.Client < 0 || j.Client >= raw.Clients {
				return Schedule{}, fmt.Errorf("%s: step %d: client %d of %d", path, i, j.Client, raw.Clients)
			}
		case StepResume:
			if j.Client < 0 || j.Client >= raw.Clients {
				return Schedule{}, fmt.Errorf("%s: step %d: client %d of %d", path, i, j.Client, raw.Clients)
			}
		case StepFault:
			if st.Fault, err = fault.Unmarshal(j.Fault); err != nil {
				return Schedule{}, fmt.Errorf("%s: step %d: %w", path, i, err)
			}
		default:
			return Schedule{}, fmt.Errorf("%s: step %d: unknown kind %q (want op, resume or fault)", path, i, j.Kind)
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
	case StepResume:
		if st.Client > 0 {
			return fmt.Sprintf("process %d: resume client %d", st.Process, st.Client)
		}
		return fmt.Sprintf("process %d: resume", st.Process)
	case StepFault:
		return fmt.Sprintf("process %d: %s", st.Process, st.Fault)
	}
	args, _ := json.Marshal(st.Op)
	return fmt.Sprintf("client %d: %s %s", st.Client, st.Op.Name(), args)
}
