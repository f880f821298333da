// Package renamed is a test helper: a backend whose runtime store mints ids
// of its own, the reference's renamed. The linearizability and simulator
// tests run it; no library code imports it.
package renamed

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/storecheck/storecheck/adapters"
	"github.com/storecheck/storecheck/spec"
	r "github.com/storecheck/storecheck/spec/runtime"
)

// Runtime is inner with the runtime store's minted ids renamed: every
// batch id (and the item ids made of it), claim id, claim token and
// checkpoint ref inner answers reads as another, consistently (one name per
// id, across every handle it opens), and is renamed back when a caller
// presents it. Lease tokens, whose format the seed states, are left alone.
// It is a backend that mints ids of its own, as one written from the seed
// alone may: the kit's own tests run it to show that nothing the kit checks
// depends on the reference's ids (rule runtime.minted_ids).
func Runtime(inner adapters.Backend) adapters.Backend {
	return renamedBackend{Backend: inner, names: &runtimeNames{out: map[string]string{}, in: map[string]string{}}}
}

type renamedBackend struct {
	adapters.Backend
	names *runtimeNames
}

func (b renamedBackend) Open(ctx context.Context, store string, o spec.OpenOptions) (adapters.Target, error) {
	t, err := b.Backend.Open(ctx, store, o)
	if err != nil || store != r.StoreName {
		return t, err
	}
	return renamedTarget{inner: t, names: b.names}, nil
}

// runtimeNames is the renaming, both ways.
type runtimeNames struct {
	mu      sync.Mutex
	out, in map[string]string
	// foreign are the ids callers presented that no store minted: a store
	// that echoes one (a renewal answers the claim as presented) echoes it
	// as it came.
	foreign map[string]bool
	n       int
}

// name is the new name of an id inner minted.
func (rn *runtimeNames) name(kind, id string) string {
	if id == "" {
		return ""
	}
	rn.mu.Lock()
	defer rn.mu.Unlock()
	if v, ok := rn.out[id]; ok {
		return v
	}
	if rn.foreign[id] {
		return id
	}
	rn.n++
	v := fmt.Sprintf("%s~%04d", kind, rn.n)
	rn.out[id], rn.in[v] = v, id
	return v
}

// id is the id inner minted under a new name (a name never given is left as
// it is: an id no store minted).
func (rn *runtimeNames) id(name string) string {
	rn.mu.Lock()
	defer rn.mu.Unlock()
	if id, ok := rn.in[name]; ok {
		return id
	}
	if rn.foreign == nil {
		rn.foreign = map[string]bool{}
	}
	rn.foreign[name] = true
	return name
}

func (rn *runtimeNames) batch(b r.QueuedWorkBatch, rename func(kind, s string) string) r.QueuedWorkBatch {
	id := b.BatchID
	b.BatchID = rename("batch", id)
	if len(b.Items) > 0 {
		items := slices.Clone(b.Items)
		for i := range items {
			if rest, ok := strings.CutPrefix(items[i].ItemID, id); ok {
				items[i].ItemID = b.BatchID + rest
			}
		}
		b.Items = items
	}
	return b
}

func (rn *runtimeNames) claim(c r.QueuedWorkClaim, rename func(kind, s string) string) r.QueuedWorkClaim {
	c.ClaimID, c.LeaseToken = rename("claim", c.ClaimID), rename("token", c.LeaseToken)
	c.Batches = slices.Clone(c.Batches)
	for i := range c.Batches {
		c.Batches[i] = rn.batch(c.Batches[i], rename)
	}
	return c
}

type renamedTarget struct {
	inner adapters.Target
	names *runtimeNames
}

func (t renamedTarget) Close() error { return t.inner.Close() }

// Crash ends the inner target as a killed process would.
func (t renamedTarget) Crash() error { return adapters.Crash(t.inner) }

func (t renamedTarget) Arm(point string) error { return adapters.Arm(t.inner, point) }

func (t renamedTarget) Apply(ctx context.Context, op spec.Op) (any, error) {
	back := func(_, s string) string { return t.names.id(s) }
	switch o := op.(type) {
	case r.CancelQueuedWorkBatch:
		o.BatchID = t.names.id(o.BatchID)
		op = o
	case r.RenewQueuedWorkClaim:
		o.Claim = t.names.claim(o.Claim, back)
		op = o
	case r.AbandonQueuedWorkClaim:
		o.Claim = t.names.claim(o.Claim, back)
		op = o
	case r.CommitRuntimeState:
		cs := slices.Clone(o.Commit.CompletedQueueClaims)
		for i := range cs {
			cs[i].ClaimID, cs[i].LeaseToken = t.names.id(cs[i].ClaimID), t.names.id(cs[i].LeaseToken)
			cs[i].BatchIDs = slices.Clone(cs[i].BatchIDs)
			for j := range cs[i].BatchIDs {
				cs[i].BatchIDs[j] = t.names.id(cs[i].BatchIDs[j])
			}
		}
		o.Commit.CompletedQueueClaims = cs
		op = o
	}
	res, err := t.inner.Apply(ctx, op)
	if err != nil {
		return res, err
	}
	out := t.names.name
	switch x := res.(type) {
	case r.QueuedWorkBatch:
		return t.names.batch(x, out), nil
	case *r.QueuedWorkBatch:
		if x != nil {
			b := t.names.batch(*x, out)
			return &b, nil
		}
	case []r.QueuedWorkBatch:
		bs := make([]r.QueuedWorkBatch, len(x))
		for i := range x {
			bs[i] = t.names.batch(x[i], out)
		}
		return bs, nil
	case r.QueuedWorkClaim:
		return t.names.claim(x, out), nil
	case *r.QueuedWorkClaim:
		if x != nil {
			c := t.names.claim(*x, out)
			return &c, nil
		}
	case r.CommitResult:
		x.CheckpointRef = out("checkpoint", x.CheckpointRef)
		return x, nil
	case *r.SessionRead:
		if x != nil {
			read := *x
			read.CheckpointRef = out("checkpoint", read.CheckpointRef)
			return &read, nil
		}
	}
	return res, err
}
