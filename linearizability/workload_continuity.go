package linearizability

// The continuity store's workload.

import (
	"fmt"
	"math/rand/v2"
	"sync"

	"github.com/storecheck/storecheck/spec"
	c "github.com/storecheck/storecheck/spec/continuity"
)

// ContinuityWorkload configures the continuity store's workload.
type ContinuityWorkload struct {
	// Identities and Sessions are how many of each the clients share.
	Identities, Sessions int
	// Partitioned keeps each session to one identity and leaves out
	// max_fencing_token, so the history splits per identity; otherwise
	// sessions are shared and the checker must consider everything at once.
	Partitioned bool
}

// DefaultContinuityWorkload is the default run's: two identities fighting over
// three sessions.
var DefaultContinuityWorkload = ContinuityWorkload{Identities: 2, Sessions: 3}

// New is a fresh workload of this configuration.
func (w ContinuityWorkload) New() Workload {
	return &continuityWorkload{ContinuityWorkload: w, clients: map[int]*continuityClient{}}
}

// continuityWorkload remembers what each client last wrote, so that it can
// play the seed's reset: capture the current record, upsert an attempt in a
// new generation, snapshot it, then roll it back to the captured one.
type continuityWorkload struct {
	ContinuityWorkload
	mu      sync.Mutex
	clients map[int]*continuityClient
}

type continuityClient struct {
	last  *c.Record
	fence c.FencingToken
	// saved is the snapshot the client last wrote: it presents it back,
	// as the seed's callers do, to ask whether it is still the current
	// one.
	saved *c.SnapshotWrite
	plan  []spec.Op
}

func (w *continuityWorkload) client(n int) *continuityClient {
	w.mu.Lock()
	defer w.mu.Unlock()
	cl := w.clients[n]
	if cl == nil {
		cl = &continuityClient{}
		w.clients[n] = cl
	}
	return cl
}

func (w ContinuityWorkload) identity(r *rand.Rand) c.Identity {
	return c.Identity(fmt.Sprint("agent-", r.IntN(max(w.Identities, 1))))
}

func (w ContinuityWorkload) session(r *rand.Rand, id c.Identity) c.SessionID {
	n := r.IntN(max(w.Sessions, 1))
	if w.Partitioned {
		return c.SessionID(fmt.Sprintf("%s/session-%d", id, n))
	}
	return c.SessionID(fmt.Sprint("session-", n))
}

func (w ContinuityWorkload) record(r *rand.Rand, id c.Identity) c.Record {
	return c.Record{
		Identity:          id,
		AgentRuntimeID:    c.RuntimeID(fmt.Sprint("rt-", r.IntN(2))),
		SessionID:         w.session(r, id),
		Generation:        c.Generation(r.IntN(3)),
		CheckpointVersion: c.CheckpointVersion(r.IntN(4)),
	}
}

// fence is near the client's progress: fences grow as the run goes on, and a
// client is often a little behind (stale) or ahead.
func fence(r *rand.Rand, step int) c.FencingToken {
	return c.FencingToken(step/4 + r.IntN(4))
}

var snapshotData = []string{"", "alpha", "beta"}

// Observe reads back everything the clients can write: every identity's
// record, every session's snapshot, the fencing high-water mark.
func (w *continuityWorkload) Observe() []spec.Op {
	var ids []c.Identity
	for i := range max(w.Identities, 1) {
		ids = append(ids, c.Identity(fmt.Sprint("agent-", i)))
	}
	ops := []spec.Op{c.ResolveMany{Identities: ids}, c.MaxFencingToken{}}
	for _, id := range ids {
		seen := map[c.SessionID]bool{}
		for n := range max(w.Sessions, 1) {
			sess := c.SessionID(fmt.Sprint("session-", n))
			if w.Partitioned {
				sess = c.SessionID(fmt.Sprintf("%s/session-%d", id, n))
			}
			if !seen[sess] {
				seen[sess] = true
				ops = append(ops, c.LoadSessionSnapshot{SessionID: sess})
			}
		}
		if !w.Partitioned {
			break
		}
	}
	return ops
}

// presentSaved is the snapshot the client last wrote, presented back as a
// match candidate: most often as it wrote it, else one part of it off (the
// bytes, the version, the fence), which never matches.
func (w *continuityWorkload) presentSaved(r *rand.Rand, cl *continuityClient) spec.Op {
	cand := *cl.saved
	switch r.IntN(6) {
	case 0:
		// Other bytes, everything else as written.
		for string(cand.Data) == string(cl.saved.Data) {
			cand.Data = []byte(snapshotData[r.IntN(len(snapshotData))])
		}
	case 1:
		cand.CheckpointVersion++
	case 2:
		cand.FencingToken++
	}
	return c.SessionSnapshotMatchesCurrent{Candidate: cand}
}

func (w *continuityWorkload) Next(r *rand.Rand, client, step int) spec.Op {
	cl := w.client(client)
	if len(cl.plan) > 0 {
		op := cl.plan[0]
		cl.plan = cl.plan[1:]
		return op
	}
	id := w.identity(r)
	switch p := r.IntN(100); {
	case p < 24:
		op := c.UpsertContinuityRecord{Record: w.record(r, id), Fence: fence(r, step)}
		cl.last, cl.fence = &op.Record, op.Fence
		if r.IntN(3) == 0 {
			// A checkpoint of what it just wrote: a snapshot one version
			// on, under its fence, then the question whether it is still
			// the current one (true, unless another client came between).
			save := c.SnapshotWrite{Identity: id, SessionID: op.Record.SessionID, Generation: op.Record.Generation,
				CheckpointVersion: op.Record.CheckpointVersion + 1, FencingToken: op.Fence, Data: []byte(snapshotData[r.IntN(len(snapshotData))])}
			cl.saved = &save
			cl.plan = append(cl.plan, c.SaveSessionSnapshot{Write: save}, w.presentSaved(r, cl))
		}
		return op
	case p < 48:
		rec := w.record(r, id)
		save := c.SnapshotWrite{Identity: id, SessionID: rec.SessionID, Generation: rec.Generation,
			CheckpointVersion: c.CheckpointVersion(r.IntN(6)), FencingToken: fence(r, step), Data: []byte(snapshotData[r.IntN(len(snapshotData))])}
		cl.saved = &save
		return c.SaveSessionSnapshot{Write: save}
	case p < 58:
		return c.LoadSessionSnapshot{SessionID: w.session(r, id)}
	case p < 66:
		ids := []c.Identity{id}
		switch {
		case r.IntN(10) == 0:
			ids = nil // asked nothing: answered nothing
		case !w.Partitioned:
			ids = append(ids, w.identity(r))
		}
		return c.ResolveMany{Identities: ids}
	case p < 74 && cl.saved != nil && r.IntN(2) == 0:
		return w.presentSaved(r, cl)
	case p < 74:
		rec := w.record(r, id)
		return c.SessionSnapshotMatchesCurrent{Candidate: c.SnapshotWrite{Identity: id, SessionID: rec.SessionID, Generation: rec.Generation,
			CheckpointVersion: c.CheckpointVersion(r.IntN(6)), FencingToken: fence(r, step), Data: []byte(snapshotData[r.IntN(len(snapshotData))])}}
	case p < 80:
		return c.DeleteSessionSnapshotIfCurrentRevision{SessionID: w.session(r, id),
			ExpectedRevision: c.SnapshotRevision([]byte(snapshotData[r.IntN(len(snapshotData))]))}
	case p < 84 && cl.last != nil:
		// A reset: an attempt in the next generation under a newer fence,
		// a snapshot of it, then its rollback to what the client last wrote.
		prev := *cl.last
		f := max(cl.fence, fence(r, step)) + 1
		attempt := c.Record{Identity: prev.Identity, AgentRuntimeID: "rt-attempt", SessionID: w.session(r, prev.Identity),
			Generation: prev.Generation + 1}
		var previous *c.Record
		if r.IntN(4) > 0 {
			previous = &prev
		}
		save := c.SnapshotWrite{Identity: prev.Identity, SessionID: attempt.SessionID, Generation: attempt.Generation,
			CheckpointVersion: 1, FencingToken: f, Data: []byte("attempt")}
		cl.saved = &save
		cl.plan = []spec.Op{
			c.SaveSessionSnapshot{Write: save},
			w.presentSaved(r, cl),
			c.RollbackContinuityRecord{Attempt: attempt, Previous: previous, Fence: f},
		}
		cl.last, cl.fence = nil, f
		return c.UpsertContinuityRecord{Record: attempt, Fence: f}
	case p < 90:
		var prev *c.Record
		if r.IntN(3) > 0 {
			p := w.record(r, id)
			if r.IntN(8) == 0 {
				// A previous record of another identity: corrupt.
				p.Identity += "-other"
			}
			prev = &p
		}
		return c.RollbackContinuityRecord{Attempt: w.record(r, id), Previous: prev, Fence: fence(r, step)}
	case p < 95 || w.Partitioned:
		return c.DeleteContinuityRecord{Identity: id, Fence: fence(r, step)}
	default:
		return c.MaxFencingToken{}
	}
}

// ContinuityUnreachable are the cells of the continuity store's coverage
// matrix the default workload is not meant to reach, and why (every io but
// this one has the default reason: no workload makes a store fail so).
var ContinuityUnreachable = map[string]string{
	"delete_session_snapshot_if_current_revision:io": "besides a store that cannot work, only a backend of opaque revisions (capability snapshot_revision \"opaque\") answers io here, for a snapshot it could not read; the reference's revisions are sha256",
}

// Prologue reads the empty store before the clients start: every
// identity's record, every session's snapshot, the fencing high-water mark
// (what Observe reads, before anyone wrote). A partitioned workload has
// none: the reads of every identity would join its parts.
func (w *continuityWorkload) Prologue() []spec.Op {
	if w.Partitioned {
		return nil
	}
	return w.Observe()
}
