package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/jonboulle/clockwork"

	"github.com/storecheck/storecheck/adapters"
	"github.com/storecheck/storecheck/internal/stores"
	refcontinuity "github.com/storecheck/storecheck/reference/continuity"
	"github.com/storecheck/storecheck/spec"
	c "github.com/storecheck/storecheck/spec/continuity"
)

// BenchmarkRoundTrip runs the same continuity operations through three
// Targets: the reference in this process; the exec adapter against a
// backend that answers at once without a store (the protocol's own cost);
// and the exec adapter against "storecheck serve" (the reference over the
// protocol). Compare in one run.
func BenchmarkRoundTrip(b *testing.B) {
	ctx := context.Background()
	targets := []struct {
		name string
		open func(b *testing.B) adapters.Target
	}{
		{"in-process", func(b *testing.B) adapters.Target {
			t, err := refcontinuity.OpenTarget(ctx, spec.OpenOptions{Path: filepath.Join(b.TempDir(), "c.db")})
			if err != nil {
				b.Fatal(err)
			}
			return t
		}},
		{"exec-instant", func(b *testing.B) adapters.Target {
			return execTarget(b, "file", "fake-backend", "instant")
		}},
		{"exec-serve", func(b *testing.B) adapters.Target {
			return execTarget(b, "file", "serve")
		}},
	}
	for _, tg := range targets {
		b.Run(tg.name+"/upsert_continuity_record", func(b *testing.B) {
			t := tg.open(b)
			defer t.Close()
			s := c.Proxy{Target: t}
			fence := c.FencingToken(0)
			for b.Loop() {
				fence++
				if err := s.UpsertContinuityRecord(ctx, c.Record{Identity: "i", AgentRuntimeID: "rt", SessionID: "s"}, fence); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(tg.name+"/max_fencing_token", func(b *testing.B) {
			t := tg.open(b)
			defer t.Close()
			s := c.Proxy{Target: t}
			for b.Loop() {
				if _, err := s.MaxFencingToken(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// execTarget opens a continuity store on a file of a backend that is this
// test binary started with args.
func execTarget(b *testing.B, harness string, args ...string) adapters.Target {
	e, err := adapters.StartExec(context.Background(), adapters.ExecOptions{
		Command: append([]string{os.Args[0]}, args...), Env: []string{harnessEnv + "=" + harness}, Contracts: stores.Contracts()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { e.Close() })
	t, err := e.Open(context.Background(), c.StoreName, spec.OpenOptions{Path: filepath.Join(b.TempDir(), "c.db"), Clock: clockwork.NewFakeClock()})
	if err != nil {
		b.Fatal(err)
	}
	return t
}
