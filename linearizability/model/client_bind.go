package model

// Binding: the holes a branch leaves for values the backend mints (sequence
// numbers, ids, previews), bound from the answers seen.

import (
	"strconv"
	"strings"
)

// holesBound are the values t binds to the holes of s: the numbers of the
// events and faults open in s and known in t.
func holesBound(s, t ClientState) map[string]string {
	out := map[string]string{}
	for i, e := range s.events {
		if e.Seq == 0 && t.events[i].Seq != 0 {
			out[Hole("event", int64(i))] = strconv.FormatInt(t.events[i].Seq, 10)
		}
	}
	for i, f := range s.faults {
		if !f.Known && t.faults[i].Known {
			out[Hole("fault", int64(i))] = strconv.FormatInt(t.faults[i].ID, 10)
		}
	}
	return out
}

// Bind fills the holes values binds: the i-th event's number (hole "event
// i"), the i-th fault's id ("fault i"), the preview of a head ("preview
// ..."). A value that contradicts what s knows (a number taken by another
// answer, numbers out of order) leaves a broken state, from which no answer
// follows: an order of the operations that placed an answer where it cannot
// be.
func (s ClientState) Bind(values map[string]string) State {
	for k, v := range values {
		kind, n, ok := parseHole(k)
		if !ok {
			continue
		}
		switch kind {
		case "event", "fault":
			x, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				s.broken = true
				continue
			}
			if kind == "event" && int(n) < len(s.events) {
				e := s.events[n]
				switch {
				case e.Seq == 0:
					e.Seq = x
					s = s.withEvent(int(n), e)
				case e.Seq != x:
					s.broken = true
				}
			}
			if kind == "fault" && int(n) < len(s.faults) {
				f := s.faults[n]
				switch {
				case !f.Known:
					f.ID, f.Known = x, true
					s = s.withFault(int(n), f)
				case f.ID != x:
					s.broken = true
				}
			}
		case "preview":
			for _, head := range s.outHeads {
				if previewHole(head) != k {
					continue
				}
				if p, ok := s.previews[head]; ok {
					s.broken = s.broken || p != v
				} else {
					s = s.withPreview(head, v)
				}
			}
		}
	}
	if !s.ordered() {
		s.broken = true
	}
	return s.learned(values)
}

// ordered reports whether the known event numbers and fault ids grow with
// their place.
func (s ClientState) ordered() bool {
	var last int64
	for _, e := range s.events {
		if e.Seq != 0 {
			if e.Seq <= last {
				return false
			}
			last = e.Seq
		}
	}
	first := true
	for _, f := range s.faults {
		if f.Known {
			if !first && f.ID <= last {
				return false
			}
			last, first = f.ID, false
		}
	}
	return true
}

// parseHole reads a hole back: its kind and number.
func parseHole(h string) (string, int64, bool) {
	body, ok := strings.CutPrefix(h, "⟨?")
	if !ok {
		return "", 0, false
	}
	body, ok = strings.CutSuffix(body, "⟩")
	kind, num, found := strings.Cut(body, " ")
	if !ok || !found {
		return "", 0, false
	}
	n, err := strconv.ParseInt(num, 10, 64)
	return kind, n, err == nil
}
