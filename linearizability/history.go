// Package linearizability records what concurrent clients did to a backend
// and asks porcupine whether some sequential order of it is one the
// contract's model (package model) allows.
package linearizability

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/storecheck/storecheck/linearizability/model"
	"github.com/storecheck/storecheck/spec"
)

// Entry is one operation of a history: who issued it, the operation value,
// the injected time it ran at, when it was called and returned (logical
// ticks: a return before a call means real-time order), and its outcome.
// An indefinite entry may or may not have taken effect (its reply was lost
// to a crash or a timeout); it has no return.
type Entry struct {
	Client     int
	Op         spec.Op
	NowMS      int64
	Call       int64
	Return     int64
	Outcome    model.Outcome
	Indefinite bool
	// Message is the backend's own words when it answered bad_request
	// (OutcomeMessage): a refusal of the request itself, whose kind alone
	// does not say why ("crash point ... reached but not declared").
	Message string
	// split numbers the operation an entry is a part of (model.Splitter),
	// from 1, and rank is the part's place among that operation's parts
	// in the entry's partition of the history: a part is placed after the
	// one ranked before it (check.go). 0 for an entry that is not a part.
	split, rank, ranks int
	part               int
}

// History is what a run did to one store.
type History struct {
	Store   string
	Seed    int64
	Command string
	// Capabilities are what the backend declared (its hello): the choices
	// the seed leaves open that a backend declares rather than the model
	// learns (model.For reads them).
	Capabilities spec.Capabilities
	Entries      []Entry
}

// Validate checks that the history is well formed: every return after its
// call, no client with two operations outstanding at once, and nothing after
// an indefinite operation of the same client.
func (h History) Validate() error {
	busyUntil := map[int]int64{}
	indefinite := map[int]bool{}
	for i, e := range h.Entries {
		if e.Op == nil {
			return fmt.Errorf("entry %d: no operation", i)
		}
		if !e.Indefinite && e.Return < e.Call {
			return fmt.Errorf("entry %d (%s, client %d): returns at %d before its call at %d", i, e.Op.Name(), e.Client, e.Return, e.Call)
		}
		if indefinite[e.Client] {
			return fmt.Errorf("entry %d (%s): client %d issued it after an indefinite operation", i, e.Op.Name(), e.Client)
		}
		if until, ok := busyUntil[e.Client]; ok && e.Call <= until {
			return fmt.Errorf("entry %d (%s): client %d called it at %d with an operation outstanding until %d", i, e.Op.Name(), e.Client, e.Call, until)
		}
		busyUntil[e.Client] = e.Return
		indefinite[e.Client] = e.Indefinite
	}
	return nil
}

// Outcome turns what a backend answered into a model outcome, and says
// whether it is definite (the contract's Definite: spec.KindTable decides).
func Outcome(contract spec.Contract, result any, err error) (model.Outcome, bool) {
	if err == nil {
		return model.OK(result), true
	}
	return model.Fail(spec.OutcomeKind(err)), contract.Definite(err)
}

// OutcomeMessage is what a history keeps of err's words: for bad_request
// only, its first line without the kind, cut short. A contract's kinds
// say all a checker needs; bad_request is no rule's, and only its message
// tells its author what to fix.
func OutcomeMessage(err error) string {
	if spec.OutcomeKind(err) != spec.ErrBadRequest {
		return ""
	}
	s, _, _ := strings.Cut(err.Error(), "\n")
	s = strings.TrimPrefix(s, string(spec.ErrBadRequest)+": ")
	if r := []rune(s); len(r) > 300 {
		s = string(r[:300]) + "…"
	}
	return s
}

type entryJSON struct {
	Client     int             `json:"client"`
	Op         string          `json:"op"`
	Args       json.RawMessage `json:"args"`
	NowMS      int64           `json:"now_ms"`
	Call       int64           `json:"call"`
	Return     int64           `json:"return,omitempty"`
	Result     json.RawMessage `json:"result,omitempty"`
	Error      spec.Kind       `json:"error,omitempty"`
	Message    string          `json:"message,omitempty"`
	Indefinite bool            `json:"indefinite,omitempty"`
}

type historyJSON struct {
	Store   string `json:"store"`
	Seed    int64  `json:"seed"`
	Command string `json:"command,omitempty"`
	// Capabilities are the backend's declared choices the model reads
	// (spec.Capabilities), so an offline check judges by the same model.
	Capabilities *spec.Capabilities `json:"capabilities,omitempty"`
	Entries      []entryJSON        `json:"entries"`
}

// MarshalJSON writes the history with each operation as its name and
// arguments, the form the wire protocol uses.
func (h History) MarshalJSON() ([]byte, error) {
	out := historyJSON{Store: h.Store, Seed: h.Seed, Command: h.Command, Entries: make([]entryJSON, len(h.Entries))}
	if h.Capabilities != (spec.Capabilities{}) {
		caps := h.Capabilities
		out.Capabilities = &caps
	}
	for i, e := range h.Entries {
		args, err := json.Marshal(e.Op)
		if err != nil {
			return nil, err
		}
		j := entryJSON{Client: e.Client, Op: e.Op.Name(), Args: args, NowMS: e.NowMS, Call: e.Call, Indefinite: e.Indefinite}
		if !e.Indefinite {
			j.Return = e.Return
			j.Error, j.Message = e.Outcome.Kind, e.Message
			if e.Outcome.Kind == "" && e.Outcome.Result != nil {
				if j.Result, err = json.Marshal(e.Outcome.Result); err != nil {
					return nil, err
				}
			}
		}
		out.Entries[i] = j
	}
	return json.Marshal(out)
}

// Read decodes a saved history of one of the given stores.
func Read(r io.Reader, contracts []spec.Contract) (History, error) {
	var raw historyJSON
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		return History{}, fmt.Errorf("history: %w", err)
	}
	var contract *spec.Contract
	for i := range contracts {
		if contracts[i].Name == raw.Store {
			contract = &contracts[i]
		}
	}
	if contract == nil {
		return History{}, fmt.Errorf("history: unknown store %q", raw.Store)
	}
	h := History{Store: raw.Store, Seed: raw.Seed, Command: raw.Command, Entries: make([]Entry, len(raw.Entries))}
	if raw.Capabilities != nil {
		h.Capabilities = *raw.Capabilities
	}
	for i, j := range raw.Entries {
		op, err := contract.DecodeOp(j.Op, j.Args)
		if err != nil {
			return History{}, fmt.Errorf("history entry %d: %w", i, err)
		}
		e := Entry{Client: j.Client, Op: op, NowMS: j.NowMS, Call: j.Call, Return: j.Return, Indefinite: j.Indefinite}
		switch {
		case j.Indefinite:
		case j.Error != "":
			e.Outcome, e.Message = model.Fail(j.Error), j.Message
		default:
			v, err := spec.DecodeResult(op, j.Result)
			if err != nil {
				return History{}, fmt.Errorf("history entry %d: %w", i, err)
			}
			e.Outcome = model.OK(v)
		}
		h.Entries[i] = e
	}
	if err := h.Validate(); err != nil {
		return History{}, fmt.Errorf("history: %w", err)
	}
	return h, nil
}

// ReadFile reads a saved history.
func ReadFile(path string, contracts []spec.Contract) (History, error) {
	f, err := os.Open(path)
	if err != nil {
		return History{}, err
	}
	defer f.Close()
	h, err := Read(f, contracts)
	if err != nil {
		return History{}, fmt.Errorf("%s: %w", path, err)
	}
	return h, nil
}

// WriteFile saves the history as JSON.
func (h History) WriteFile(path string) error {
	// MarshalJSON's own bytes: json.Marshal(h) would compact them again.
	b, err := h.MarshalJSON()
	if err != nil {
		return err
	}
	return errors.Join(os.WriteFile(path, append(b, '\n'), 0o644))
}
