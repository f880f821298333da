package linearizability

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/storecheck/storecheck/adapters"
	"github.com/storecheck/storecheck/internal/bugs"
	"github.com/storecheck/storecheck/linearizability/model"
	"github.com/storecheck/storecheck/spec"
	cli "github.com/storecheck/storecheck/spec/client"
	c "github.com/storecheck/storecheck/spec/continuity"
	r "github.com/storecheck/storecheck/spec/runtime"
)

// modelTarget is a store made of the model itself, stepped under a lock: it
// records large linearizable histories quickly, to measure the checker.
type modelTarget struct {
	mu    *sync.Mutex
	m     model.Model
	state *model.State
	clock clockwork.Clock
}

func (t modelTarget) Apply(_ context.Context, op spec.Op) (any, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	next, out := model.Expect(t.m, *t.state, op, t.clock.Now().UnixMilli())
	*t.state = next
	if out.Kind != "" {
		return nil, &spec.Error{Kind: out.Kind}
	}
	return out.Result, nil
}

func (modelTarget) Close() error { return nil }

func modelOpener(m model.Model) Opener {
	mu, state := &sync.Mutex{}, m.Init()
	return func(_ context.Context, clock clockwork.Clock) (adapters.Target, error) {
		return modelTarget{mu: mu, m: m, state: &state, clock: clock}, nil
	}
}

// BenchmarkCheck measures the checker against history size, on histories of
// the default (shared keys, one partition) and partitioned workloads.
func BenchmarkCheck(b *testing.B) {
	for _, tc := range []struct {
		name string
		m    model.Model
		w    func() Workload
		ops  int
	}{
		{"continuity/shared/1k", model.Continuity{}, DefaultContinuityWorkload.New, 1_000},
		{"continuity/shared/10k", model.Continuity{}, DefaultContinuityWorkload.New, 10_000},
		{"continuity/partitioned/1k", model.Continuity{}, ContinuityWorkload{Identities: 10, Sessions: 3, Partitioned: true}.New, 1_000},
		{"continuity/partitioned/10k", model.Continuity{}, ContinuityWorkload{Identities: 100, Sessions: 3, Partitioned: true}.New, 10_000},
		{"continuity/partitioned/100k", model.Continuity{}, ContinuityWorkload{Identities: 1000, Sessions: 3, Partitioned: true}.New, 100_000},
		{"runtime/shared/1k", model.Runtime{}, DefaultRuntimeWorkload.New, 1_000},
		{"runtime/shared/10k", model.Runtime{}, DefaultRuntimeWorkload.New, 10_000},
		{"runtime/partitioned/1k", model.Runtime{}, RuntimeWorkload{Sessions: 10, Partitioned: true}.New, 1_000},
		{"runtime/partitioned/10k", model.Runtime{}, RuntimeWorkload{Sessions: 100, Partitioned: true}.New, 10_000},
		{"runtime/partitioned/100k", model.Runtime{}, RuntimeWorkload{Sessions: 1000, Partitioned: true}.New, 100_000},
		{"client/default/1k", model.Client{}, DefaultClientWorkload.New, 1_000},
		{"client/default/10k", model.Client{}, DefaultClientWorkload.New, 10_000},
		{"client/grouped/1k", model.Client{}, ClientWorkload{Intents: 4, Tasks: 3, Sessions: 2, Groups: 10}.New, 1_000},
		{"client/grouped/10k", model.Client{}, ClientWorkload{Intents: 4, Tasks: 3, Sessions: 2, Groups: 100}.New, 10_000},
		{"client/grouped/100k", model.Client{}, ClientWorkload{Intents: 4, Tasks: 3, Sessions: 2, Groups: 1000}.New, 100_000},
	} {
		b.Run(tc.name, func(b *testing.B) {
			h, err := Run(context.Background(), tc.m.Contract(), modelOpener(tc.m), tc.w(), Config{Seed: 1, Ops: tc.ops})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				res, err := Check(tc.m, h, time.Minute)
				if err != nil || res.Verdict != Linearizable {
					b.Fatalf("%v %v", res.Verdict, err)
				}
			}
		})
	}
}

// BenchmarkDefaultRun is the default run of storecheck: 8 clients, 2,000
// operations on two handles of one reference file, recorded and checked.
func BenchmarkDefaultRun(b *testing.B) {
	for b.Loop() {
		h, err := Run(context.Background(), c.Contract, continuityOpener(b, bugs.Bug{}), DefaultContinuityWorkload.New(), Config{Seed: 1})
		if err != nil {
			b.Fatal(err)
		}
		if res, err := Check(model.Continuity{}, h, time.Minute); err != nil || res.Verdict != Linearizable {
			b.Fatal(fmt.Sprint(res.Verdict, err))
		}
	}
}

// BenchmarkRuntimeDefaultRun is storecheck's default run of the runtime
// store: 8 clients, 2,000 operations on two handles of one reference file,
// recorded and checked.
func BenchmarkRuntimeDefaultRun(b *testing.B) {
	for b.Loop() {
		h, err := Run(context.Background(), r.Contract, runtimeOpener(b, bugs.Bug{}), DefaultRuntimeWorkload.New(), Config{Seed: 1})
		if err != nil {
			b.Fatal(err)
		}
		if res, err := Check(model.Runtime{}, h, time.Minute); err != nil || res.Verdict != Linearizable {
			b.Fatal(fmt.Sprint(res.Verdict, err))
		}
	}
}

// BenchmarkClientDefaultRun is storecheck's default run of the client store:
// 8 clients, 2,000 operations on two handles of one reference file,
// recorded and checked.
func BenchmarkClientDefaultRun(b *testing.B) {
	for b.Loop() {
		h, err := Run(context.Background(), cli.Contract, clientOpener(b, bugs.Bug{}), DefaultClientWorkload.New(), Config{Seed: 1})
		if err != nil {
			b.Fatal(err)
		}
		if res, err := Check(model.Client{}, h, time.Minute); err != nil || res.Verdict != Linearizable {
			b.Fatal(fmt.Sprint(res.Verdict, err))
		}
	}
}

// BenchmarkCheckHardHistory checks a history that once took porcupine over
// a minute in CI (testdata/hard: the Python example backend, 8 clients,
// 2000 operations, opaque snapshot revisions, so deletes branch three
// ways): a check's cost on the histories backends over the wire produce.
func BenchmarkCheckHardHistory(b *testing.B) {
	h := hardHistory(b)
	b.ResetTimer()
	for b.Loop() {
		if res, err := Check(model.For(model.Continuity{}, h.Capabilities), h, 10*time.Minute); err != nil || res.Verdict != Linearizable {
			b.Fatalf("%v %v", res.Verdict, err)
		}
	}
}
