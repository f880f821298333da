package model

import (
	"fmt"
	"math/bits"
	"slices"
)

// Featured is a model whose states name a few facts of themselves that a
// guided sweep steers by (sim/guide.go): sizes by power-of-two bucket (a
// count crossing 8 or 100 is a state a run may need to reach a bug in a
// loop or a limit), leases and claims held, expired, stolen, and a deadline
// met exactly. A feature is a state reached, not a rule: no verdict reads it.
type Featured interface {
	Features(s State, nowMS int64) []string
}

// sized is "what: B" with n's power-of-two bucket B (0, 1, 2-3, 4-7, ...),
// or nothing for 0.
func sized(out []string, what string, n int) []string {
	if n <= 0 {
		return out
	}
	lo := 1 << (bits.Len(uint(n)) - 1)
	if lo == 1 {
		return append(out, what+": 1")
	}
	return append(out, fmt.Sprintf("%s: %d-%d", what, lo, 2*lo-1))
}

// holds tallies what is held until a deadline: how many, how many past it,
// and whether one is at it exactly.
type holds struct {
	held, past int
	exact      bool
}

func (h *holds) add(held bool, expires, now int64) {
	if !held {
		return
	}
	h.held++
	if !live(expires, now) {
		h.past++
	}
	h.exact = h.exact || expires == now
}

// Features of a runtime store: the queue's batches (queued, claimable in one
// session, claimed, a claim expired), the leases (held, expired, taken over: a fence above 1), a lease
// or a claim at its exact expiry, and the graph, turns and attachments.
func (Runtime) Features(st State, now int64) []string {
	s := st.(RuntimeState)
	var out []string
	var claims, leases holds
	for _, b := range s.batches {
		claims.add(b.Claimed, b.ClaimExpires, now)
	}
	out = sized(out, "queued batches", len(s.batches))
	// A claim takes at most max_batches of its session's claimable batches
	// in enqueue order: its bounds and its order show only when a session
	// has more of them than a claim takes.
	out = sized(out, "claimable batches of one session", s.mostClaimable(now))
	out = sized(out, "claimed batches", claims.held)
	out = sized(out, "batches whose claim expired", claims.past)
	if claims.exact {
		out = append(out, "a claim at its exact expiry")
	}
	var fence uint64
	for _, l := range s.leases {
		leases.add(l.Held, l.ExpiresAt, now)
		fence = max(fence, l.Fence)
	}
	out = sized(out, "leases held", leases.held)
	out = sized(out, "leases held past their expiry", leases.past)
	out = sized(out, "a lease's fencing token", int(min(fence, 1<<20)))
	if leases.exact {
		out = append(out, "a lease at its exact expiry")
	}
	out = sized(out, "graph nodes", len(s.nodes))
	out = sized(out, "turns", len(s.turns))
	committed := 0
	for _, a := range s.attachments {
		if a.Committed {
			committed++
		}
	}
	out = sized(out, "attachments", len(s.attachments))
	return sized(out, "attachments committed", committed)
}

// Features of a continuity store: its records and snapshots, and how far
// generations, checkpoint versions and fences went.
func (Continuity) Features(st State, _ int64) []string {
	s := st.(ContinuityState)
	var gen, version, fence uint64
	for _, r := range s.records {
		gen, version, fence = max(gen, uint64(r.Generation)), max(version, uint64(r.CheckpointVersion)), max(fence, uint64(r.Fence))
	}
	for _, sn := range s.snaps {
		fence = max(fence, uint64(sn.Fence))
	}
	var out []string
	out = sized(out, "records", len(s.records))
	out = sized(out, "snapshots", len(s.snaps))
	out = sized(out, "a generation", int(min(gen, 1<<20)))
	out = sized(out, "a checkpoint version", int(min(version, 1<<20)))
	return sized(out, "a fencing token", int(min(fence, 1<<20)))
}

// Features of a client store: its intents and how many attempts one took,
// its events, sessions and tasks, and the faults recorded.
func (Client) Features(st State, _ int64) []string {
	s := st.(ClientState)
	var attempts int64
	for _, in := range s.intents.all() {
		attempts = max(attempts, in.Attempt)
	}
	var out []string
	out = sized(out, "intents", s.intents.len())
	out = sized(out, "an intent's attempts", int(min(attempts, 1<<20)))
	out = sized(out, "events", len(s.events))
	out = sized(out, "sessions", len(s.sessions))
	out = sized(out, "tasks", s.tasks.len())
	return sized(out, "faults", len(s.faults))
}

// mostClaimable is how many claimable batches the session with the most
// has (counted in a slice of the few sessions: no map at every answer).
func (s RuntimeState) mostClaimable(now int64) int {
	type count struct {
		session string
		n       int
	}
	var counts []count
	most := 0
	for _, b := range s.batches {
		if b.B.AvailableAtMs > now || !b.free(now) {
			continue
		}
		i := slices.IndexFunc(counts, func(c count) bool { return c.session == b.B.SessionID })
		if i < 0 {
			counts = append(counts, count{session: b.B.SessionID})
			i = len(counts) - 1
		}
		counts[i].n++
		most = max(most, counts[i].n)
	}
	return most
}
