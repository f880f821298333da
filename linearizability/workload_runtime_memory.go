package linearizability

// What a runtime client remembers of what it asked: its private model's
// answers, and where in the store's answers the ids it cannot predict are.

import (
	"encoding/json"
	"maps"
	"regexp"
	"slices"
	"strconv"

	"github.com/storecheck/storecheck/linearizability/model"
	"github.com/storecheck/storecheck/spec"
	r "github.com/storecheck/storecheck/spec/runtime"
)

// mineOf is what the client's private model answers op, without asking it.
func (cl *runtimeClient) mineOf(op spec.Op) any {
	_, out := model.Expect(privateModel, cl.mine, op, cl.now)
	return out.Result
}

var bareHole = regexp.MustCompile(`^⟨\?[a-z_]+ [0-9]+⟩$`)

// learn keeps mine's answer to the client's current operation, and for each
// hole it shows first, where in the store's answer its value will be.
func (cl *runtimeClient) learn(result any) {
	id := spec.OpID(cl.n, cl.step)
	cl.answers[id] = result
	b, err := json.Marshal(result)
	if err != nil {
		return
	}
	var v any
	if json.Unmarshal(b, &v) != nil {
		return
	}
	var walk func(v any, path string)
	walk = func(v any, path string) {
		join := func(p string) string {
			if path == "" {
				return p
			}
			return path + "." + p
		}
		switch x := v.(type) {
		case string:
			if _, known := cl.refs[x]; !known && bareHole.MatchString(x) {
				cl.refs[x] = spec.Ref(id, path)
			}
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(x)) {
				walk(x[k], join(k))
			}
		case []any:
			for i, e := range x {
				walk(e, join(strconv.Itoa(i)))
			}
		}
	}
	walk(v, "")
}

// ref is what the client presents for a value of mine: the reference to the
// answer that shows it, for a hole; a value no store minted for a hole it
// never learned; else the value itself.
func (cl *runtimeClient) ref(v string) string {
	if !bareHole.MatchString(v) {
		return v
	}
	if ref, ok := cl.refs[v]; ok {
		return ref
	}
	return spec.Unresolved("mine", v)
}

// present is a claim of mine as the client presents it: its ids and its
// batches' ids as references to the answers that minted them.
func (cl *runtimeClient) present(c r.QueuedWorkClaim) r.QueuedWorkClaim {
	out := c
	out.ClaimID, out.LeaseToken = cl.ref(c.ClaimID), cl.ref(c.LeaseToken)
	out.Batches = make([]r.QueuedWorkBatch, len(c.Batches))
	for i, b := range c.Batches {
		out.Batches[i] = r.QueuedWorkBatch{BatchID: cl.ref(b.BatchID), SessionID: b.SessionID}
	}
	return out
}

// asked remembers what the client asked: it steps its private model with
// what it asked of its own session, and with the producer's enqueues (the
// operation with each reference to the client's own answers as mine has
// it); it keeps the lease and the claim it expects, and the turns it
// committed.
func (cl *runtimeClient) asked(op spec.Op) spec.Op {
	own := ownSession(cl.n)
	step := func(op spec.Op) model.Outcome {
		var out model.Outcome
		cl.mine, out = model.Expect(privateModel, cl.mine, op, cl.now)
		return out
	}
	switch o := cl.answers.Resolve(op).(type) {
	case r.TryClaimSessionExecutionLease:
		if o.SessionID == own {
			cl.ownLease, _ = step(o).Result.(*r.SessionExecutionLease)
		}
	case r.RenewSessionExecutionLease:
		if o.Fence.SessionID == own {
			step(o)
		}
	case r.ReleaseSessionExecutionLease:
		if o.Completion.SessionID == own {
			step(o)
		}
	case r.EnqueueQueuedWork:
		cl.learn(step(o).Result)
	case r.ClaimReadyQueuedWork:
		if o.SessionID == own {
			out := step(o)
			cl.learn(out.Result)
			if c, _ := out.Result.(*r.QueuedWorkClaim); c != nil {
				cl.claim = c
			}
		} else if cl.n == producer {
			// Its guess of the bound session's claim: its private model,
			// under a lease of its own there.
			l, _ := step(r.TryClaimSessionExecutionLease{SessionID: o.SessionID, OwnerID: "private", TTLMs: 1 << 40}).Result.(*r.SessionExecutionLease)
			if l != nil {
				o.Lease = l.Fence()
				out := step(o)
				cl.learn(out.Result)
				if c, _ := out.Result.(*r.QueuedWorkClaim); c != nil {
					cl.claim = c
				}
			}
		}
	case r.RenewQueuedWorkClaim:
		if o.Claim.SessionID == own {
			step(o)
		}
	case r.AbandonQueuedWorkClaim:
		if o.Claim.SessionID == own {
			step(o)
		}
	case r.CancelQueuedWorkBatch:
		if o.SessionID == own {
			step(o)
		}
	case r.CommitRuntimeState:
		if tc := o.Commit.TurnCommit; tc != nil {
			cl.turns = append(cl.turns, askedTurn{tc.TurnID, tc.TurnCommitHash})
		}
		if cs := o.Commit.CompletedQueueClaims; len(cs) > 0 && cl.n == producer {
			// Its private view of the bound session's queue loses the
			// completed batches.
			if l, _ := step(r.TryClaimSessionExecutionLease{SessionID: boundSession, OwnerID: "private", TTLMs: 1 << 40}).Result.(*r.SessionExecutionLease); l != nil {
				f := l.Fence()
				step(r.CommitRuntimeState{Commit: r.RuntimeCommit{SessionID: boundSession, Lease: &f, CompletedQueueClaims: cs,
					Graph: r.GraphDelta{Kind: r.GraphUnchanged}}})
			}
			cl.claim = nil
		}
		if rl := o.Commit.ReleaseLease; rl != nil && rl.SessionID == own {
			// Whether the commit released it, the client does not know:
			// it releases it again, and then it knows.
			cl.plan = append([]spec.Op{r.ReleaseSessionExecutionLease{Completion: *rl}}, cl.plan...)
		}
	}
	return op
}
