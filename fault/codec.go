package fault

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"time"
)

// Names are the faults' stable names, as a schedule writes them.
var Names = []string{"kill", "crash_at", "restart", "clock_jump", "busy", "io_error", "lost_reply", "pause", "power_cut"}

// Name is f's stable name.
func Name(f Fault) string {
	switch f.(type) {
	case Kill:
		return "kill"
	case CrashAt:
		return "crash_at"
	case Restart:
		return "restart"
	case ClockJump:
		return "clock_jump"
	case Busy:
		return "busy"
	case IOError:
		return "io_error"
	case LostReply:
		return "lost_reply"
	case Pause:
		return "pause"
	case PowerCut:
		return "power_cut"
	}
	return ""
}

// faultJSON is every fault's fields; each fault writes the ones it has.
type faultJSON struct {
	Type  string `json:"type"`
	Point string `json:"point,omitempty"`
	Nth   int    `json:"nth,omitempty"`
	ByMS  int64  `json:"by_ms,omitempty"`
	Op    string `json:"op,omitempty"`
	Times int    `json:"times,omitempty"`
	ForMS int64  `json:"for_ms,omitempty"`
	File  string `json:"file,omitempty"`
	Keep  int    `json:"keep,omitempty"`
}

// Marshal writes f as JSON: its name as "type", and its fields.
func Marshal(f Fault) ([]byte, error) {
	j := faultJSON{Type: Name(f)}
	switch v := f.(type) {
	case CrashAt:
		j.Point, j.Nth = v.Point, v.Nth
	case ClockJump:
		j.ByMS = v.By.Milliseconds()
	case Busy:
		j.Op, j.Times = v.Op, v.Times
	case IOError:
		j.Op = v.Op
	case LostReply:
		j.Op = v.Op
	case Pause:
		j.Op, j.ForMS = v.Op, v.For.Milliseconds()
	case PowerCut:
		j.File, j.Keep = v.File, v.Keep
	case Kill, Restart:
	default:
		return nil, fmt.Errorf("fault %T has no name", f)
	}
	return json.Marshal(j)
}

// Unmarshal reads a fault Marshal wrote; an unknown type or field, or a
// field the type does not have, is an error that names it.
func Unmarshal(b []byte) (Fault, error) {
	var j faultJSON
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j); err != nil {
		return nil, fmt.Errorf("fault: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("fault: trailing data after the JSON value")
	}
	extra := func(what string, set bool) error {
		if set {
			return fmt.Errorf("fault %s has no %s", j.Type, what)
		}
		return nil
	}
	check := func(point, nth, by, op, times, forMS bool) error {
		cut := j.Type == "power_cut"
		for _, e := range []error{extra("point", j.Point != "" && !point), extra("nth", j.Nth != 0 && !nth),
			extra("by_ms", j.ByMS != 0 && !by), extra("op", j.Op != "" && !op), extra("times", j.Times != 0 && !times),
			extra("for_ms", j.ForMS != 0 && !forMS), extra("file", j.File != "" && !cut), extra("keep", j.Keep != 0 && !cut)} {
			if e != nil {
				return e
			}
		}
		return nil
	}
	var f Fault
	var err error
	switch j.Type {
	case "kill":
		f, err = Kill{}, check(false, false, false, false, false, false)
	case "restart":
		f, err = Restart{}, check(false, false, false, false, false, false)
	case "crash_at":
		if j.Point == "" {
			return nil, fmt.Errorf("fault crash_at needs a point")
		}
		f, err = CrashAt{Point: j.Point, Nth: j.Nth}, check(true, true, false, false, false, false)
	case "clock_jump":
		if j.ByMS < 0 {
			return nil, fmt.Errorf("fault clock_jump: the clock never goes back (%d ms)", j.ByMS)
		}
		f, err = ClockJump{By: time.Duration(j.ByMS) * time.Millisecond}, check(false, false, true, false, false, false)
	case "busy":
		f, err = Busy{Op: j.Op, Times: j.Times}, check(false, false, false, true, true, false)
	case "io_error":
		f, err = IOError{Op: j.Op}, check(false, false, false, true, false, false)
	case "lost_reply":
		f, err = LostReply{Op: j.Op}, check(false, false, false, true, false, false)
	case "pause":
		f, err = Pause{Op: j.Op, For: time.Duration(j.ForMS) * time.Millisecond}, check(false, false, false, true, false, true)
	case "power_cut":
		if j.Keep < 0 || (j.Keep > 0 && j.File == "") {
			return nil, fmt.Errorf("fault power_cut: keep %d needs a file and is never negative", j.Keep)
		}
		f, err = PowerCut{File: j.File, Keep: j.Keep}, check(false, false, false, false, false, false)
	default:
		return nil, fmt.Errorf("unknown fault type %q (want one of %v)", j.Type, Names)
	}
	if err != nil {
		return nil, err
	}
	return f, nil
}
