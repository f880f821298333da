package conformance

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/storecheck/storecheck/internal/stores"
	"github.com/storecheck/storecheck/linearizability"
	"github.com/storecheck/storecheck/sim"
)

// benchBackend is one backend the comparison runs: the reference in this
// process, or a program over the wire protocol.
type benchBackend struct {
	name string
	// command is the program (nil: the reference in this process); env is
	// added to its environment.
	command, env []string
	// missing says why the backend cannot run here ("" when it can).
	missing func() string
}

// backend is bb as a run opens it.
func (bb benchBackend) backend() Backend {
	if bb.command == nil {
		return Reference()
	}
	return Program(bb.command...).WithEnv(bb.env...)
}

func benchBackends() []benchBackend {
	return []benchBackend{
		{name: "in-process", missing: func() string { return "" }},
		{name: "serve", command: []string{os.Args[0]}, env: []string{serveEnv + "=none"}, missing: func() string { return "" }},
		{name: "python", command: []string{"python3", "../examples/python-backend/backend.py"}, missing: func() string {
			if _, err := exec.LookPath("python3"); err != nil {
				return "python3 is not on PATH: the Python backend is not measured"
			}
			return ""
		}},
		{name: "rust", command: []string{"../target/release/rust-backend"}, missing: func() string {
			if _, err := os.Stat("../target/release/rust-backend"); err != nil {
				return "the Rust backend is not built (cargo build --release --manifest-path examples/rust-backend/Cargo.toml): it is not measured"
			}
			return ""
		}},
	}
}

// BenchmarkBackends measures, per store, the same load on every backend in
// one run: "sim" is one simulator seed per iteration (the default run: 200
// operations, yields, faults, one process per simulated process, as many
// processes as the store's shared_files allows), reported as seeds/s and
// operations/s; "wire" is a linearizability-like load (8 clients, 400
// operations, the store's handles), unchecked, reported as operations/s.
// A backend whose toolchain is missing is skipped, saying so. Compare the
// ratios within one run:
//
//	go test ./conformance -run '^$' -bench BenchmarkBackends -benchtime 10x
func BenchmarkBackends(b *testing.B) {
	ctx := context.Background()
	for _, bb := range benchBackends() {
		for _, name := range stores.Names() {
			st, _ := stores.Lookup(name)
			b.Run(bb.name+"/"+name+"/sim", func(b *testing.B) {
				if why := bb.missing(); why != "" {
					b.Skip(why)
				}
				r := newRunner(b, bb.backend(), Config{ReplyTimeout: 20 * time.Second})
				caps := r.s.caps(name)
				params, _ := processesFor(sim.Params{}, caps, name)
				subj, backend := storeOf(st).Subject(caps), r.s.simBackend(name)
				ops := 0
				seed := int64(0)
				start := time.Now()
				for b.Loop() {
					seed++
					res, err := sim.Explore(ctx, subj, backend, seed, params, sim.ScratchDir())
					if err != nil {
						b.Fatal(err)
					}
					if res.Failure != nil {
						b.Fatalf("seed %d: %v", seed, res.Failure)
					}
					ops += res.Ops
				}
				took := time.Since(start).Seconds()
				b.ReportMetric(float64(seed)/took, "seeds/s")
				b.ReportMetric(float64(ops)/took, "ops/s")
			})
			b.Run(bb.name+"/"+name+"/wire", func(b *testing.B) {
				if why := bb.missing(); why != "" {
					b.Skip(why)
				}
				r := newRunner(b, bb.backend(), Config{ReplyTimeout: 20 * time.Second})
				ops := 0
				seed := int64(0)
				start := time.Now()
				for b.Loop() {
					seed++
					open, handles := r.s.opener(name, b.TempDir())
					h, err := linearizability.Run(ctx, st.Contract, open, st.Workload(), linearizability.Config{Clients: 8, Ops: 400, Handles: handles, Seed: seed})
					if err != nil {
						b.Fatal(err)
					}
					ops += len(h.Entries)
				}
				b.ReportMetric(float64(ops)/time.Since(start).Seconds(), "ops/s")
			})
		}
	}
}
