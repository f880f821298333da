package model

// Faults, and the ids the backend mints for them.

import (
	"strconv"
	"time"

	"github.com/storecheck/storecheck/spec"
	cli "github.com/storecheck/storecheck/spec/client"
)

// cfault is a fault; Known is false while the backend's id is not known
// (its insert's answer was lost).
type cfault struct {
	cli.Fault
	Known     bool
	CreatedNS int64
}

// stepFaults answers the operations on faults; false: op is not one of them.
func (m Client) stepFaults(s ClientState, op spec.Op, now int64) ([]Branch, bool) {
	switch o := op.(type) {
	case cli.InsertFault:
		f := o.Fault
		f.ID = 0
		cf := cfault{Fault: f, CreatedNS: nsOf(f.CreatedAt)}
		cf.CreatedAt = time.Time{}
		i := len(s.faults)
		next := s.withFault(i, cf)
		return []Branch{{Outcome: OK(s.guessFaultID(i)), Next: next, Rule: cli.RuleFaultID, Match: func(got Outcome) (map[string]string, bool) {
			id, ok := got.Result.(int64)
			if got.Kind != "" || !ok {
				return nil, false
			}
			t, ok := next.bindFault(i, id)
			if !ok {
				return nil, false
			}
			return holesBound(next, t), true
		}}}, true

	case cli.ListFaults:
		var idx []int
		for i, f := range s.faults {
			if f.TaskID == o.TaskID {
				idx = append(idx, i)
			}
		}
		var out []Branch
		for _, g := range precGroups(s.unixPrec, len(idx), func(i int) int64 { return s.faults[idx[i]].CreatedNS }) {
			d := firstPrec(g)
			out = append(out, Branch{Outcome: OK(s.guessFaults(o.TaskID, d)), Next: s, Rule: "client.list_faults.order",
				Match: func(got Outcome) (map[string]string, bool) {
					fs, ok := got.Result.([]cli.Fault)
					if got.Kind != "" || !ok && got.Result != nil {
						return nil, false
					}
					t, ok := s.judgeFaults(idx, fs, d)
					if !ok {
						return nil, false
					}
					values := holesBound(s, t)
					values[learnUnix] = strconv.Itoa(int(g))
					return values, true
				}})
		}
		return out, true
	}
	return nil, false
}

func (s ClientState) faultID(i int) (int64, bool) { return s.faults[i].ID, s.faults[i].Known }

// bindFault is s with the i-th fault's id v, when v fits
// (client.insert_fault.id_increasing).
func (s ClientState) bindFault(i int, v int64) (ClientState, bool) {
	f := s.faults[i]
	if f.Known {
		return s, f.ID == v
	}
	if !fits(v, len(s.faults), i, s.faultID) {
		return s, false
	}
	f.ID, f.Known = v, true
	return s.withFault(i, f), true
}

func (s ClientState) guessFaultID(i int) int64 {
	var id int64
	for j := 0; j < i && j < len(s.faults); j++ {
		if s.faults[j].Known {
			id = s.faults[j].ID
		} else {
			id++
		}
	}
	return id + 1
}

func (f cfault) value(id int64, d int64) cli.Fault {
	v := f.Fault
	v.ID, v.CreatedAt = id, at(f.CreatedNS, d)
	return v
}

// guessFaults is what the reference answers list_faults(task), with times at
// precision d.
func (s ClientState) guessFaults(task string, d int64) []cli.Fault {
	var out []cli.Fault
	for i, f := range s.faults {
		if f.TaskID == task {
			id := f.ID
			if !f.Known {
				id = s.guessFaultID(i)
			}
			out = append(out, f.value(id, d))
		}
	}
	return out
}

// judgeFaults is whether got may answer list_faults of the task whose
// faults are at idx, with times at precision d (client.list_faults.order),
// and s with the open ids it shows bound.
func (s ClientState) judgeFaults(idx []int, got []cli.Fault, d int64) (ClientState, bool) {
	if len(idx) != len(got) {
		return s, false
	}
	t := s
	for n, i := range idx {
		f, g := t.faults[i], got[n]
		if !spec.SameResult(g, f.value(g.ID, d)) {
			return s, false
		}
		next, ok := t.bindFault(i, g.ID)
		if !ok {
			return s, false
		}
		t = next
	}
	return t, true
}
