package linearizability

import (
	"cmp"
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/storecheck/storecheck/adapters"
	"github.com/storecheck/storecheck/spec"
)

// Config bounds a concurrent run.
type Config struct {
	// Clients is how many clients run at once (default 8).
	Clients int
	// Ops is how many operations they issue in all (default 2,000);
	// besides them, a workload's Prologue reads are issued one at a time
	// before (Reader).
	Ops int
	// Handles is how many store handles (as separate processes would hold)
	// the clients are spread over (default 2).
	Handles int
	// Seed fixes every client's sequence of operations and the clock's jumps.
	Seed int64
	// Duration stops the run early when it has gone on this long (0: no
	// limit).
	Duration time.Duration
	// EpochOps is how many operations run between two jumps of the clock
	// (default 50). Within an epoch the clock stands still, so every
	// operation's time is known exactly; between epochs it jumps by up to
	// MaxJump.
	EpochOps int
	// MaxJump bounds a jump of the clock (default 3s).
	MaxJump time.Duration
	// OpTimeout bounds one operation; one that times out is indefinite
	// (default 10s).
	OpTimeout time.Duration
}

// WithDefaults is c with every unset field at its default.
func (c Config) WithDefaults() Config {
	if c.Clients <= 0 {
		c.Clients = 8
	}
	if c.Ops <= 0 {
		c.Ops = 2000
	}
	if c.Handles <= 0 {
		c.Handles = 2
	}
	if c.EpochOps <= 0 {
		c.EpochOps = 50
	}
	if c.MaxJump <= 0 {
		c.MaxJump = 3 * time.Second
	}
	if c.OpTimeout <= 0 {
		c.OpTimeout = 10 * time.Second
	}
	return c
}

// Opener opens one handle on the store under test; every handle it opens in
// a run is on the same database. The clock is the only time the store may
// read.
type Opener func(ctx context.Context, clock clockwork.Clock) (adapters.Target, error)

// Prologue is a workload with reads to issue before its clients start:
// what a store answers before anyone wrote to it (the null and empty cells
// of the coverage matrix), which concurrent clients reach only by chance,
// since their first writes race their first reads.
type Prologue interface {
	Prologue() []spec.Op
}

// Reader is the porcupine client of a run's Prologue reads:
// the one after the run's clients (the clients re-issued after an
// indefinite operation come after it).
func Reader(cfg Config) int { return cfg.WithDefaults().Clients }

// BigRate is the share of runs that end with their workload's big draw
// (Sizer): list arguments, values and tables past the sizes an
// implementation breaks at.
const BigRate = 0.25

// Epoch is where a run's fake clock starts.
var Epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// Run drives cfg.Clients concurrent clients against handles from open and
// records the history. Operations a client issues after one of its own came
// back indefinite are issued as a new client, as porcupine requires.
func Run(ctx context.Context, contract spec.Contract, open Opener, w Workload, cfg Config) (History, error) {
	cfg = cfg.WithDefaults()
	clock := clockwork.NewFakeClockAt(Epoch)
	var targets []adapters.Target
	defer func() {
		for _, t := range targets {
			t.Close()
		}
	}()
	for range cfg.Handles {
		t, err := open(ctx, clock)
		if err != nil {
			return History{}, fmt.Errorf("open a handle: %w", err)
		}
		targets = append(targets, t)
	}

	var (
		tick    atomic.Int64
		mu      sync.Mutex
		entries []Entry
		answers = spec.Answers{}
	)
	rngs := make([]*rand.Rand, cfg.Clients)
	ids := make([]int, cfg.Clients) // porcupine client id of each client
	for i := range rngs {
		rngs[i] = rand.New(rand.NewPCG(uint64(cfg.Seed), uint64(i)))
		ids[i] = i
	}
	reader := cfg.Clients
	nextID := cfg.Clients + 1
	jumps := rand.New(rand.NewPCG(uint64(cfg.Seed), ^uint64(0)))
	start := time.Now()
	// issue applies op on target at now as porcupine's client *client, and
	// records it: a client's operation (id not "") has its references
	// resolved and its answer kept for later ones, and an indefinite
	// answer makes *client a new client. Clients call it at once.
	issue := func(target adapters.Target, client *int, id string, op spec.Op, now int64) {
		if id != "" {
			mu.Lock()
			op = answers.Resolve(op)
			mu.Unlock()
		}
		opCtx, cancel := context.WithTimeout(ctx, cfg.OpTimeout)
		call := tick.Add(1)
		res, err := target.Apply(opCtx, op)
		ret := tick.Add(1)
		cancel()
		out, definite := Outcome(contract, res, err)
		mu.Lock()
		defer mu.Unlock()
		if err == nil && id != "" {
			answers[id] = res
		}
		entries = append(entries, Entry{Client: *client, Op: op, NowMS: now, Call: call, Return: ret, Outcome: out, Indefinite: !definite, Message: OutcomeMessage(err)})
		if !definite {
			*client = nextID
			nextID++
		}
	}
	// read issues the reader's reads, one at a time, at the clock's now.
	read := func(ops []spec.Op) {
		target, now := targets[0], clock.Now().UnixMilli()
		for _, op := range ops {
			if ctx.Err() != nil {
				return
			}
			issue(target, &reader, "", op, now)
		}
	}
	if p, ok := w.(Prologue); ok {
		read(p.Prologue())
	}
	perClient := (cfg.Ops + cfg.Clients - 1) / cfg.Clients
	perEpoch := max(1, cfg.EpochOps/cfg.Clients)

	// A share of the runs end with the workload's big draw, one operation
	// at a time (no other client comes between: the sizes, not a race,
	// are what it is for), from a stream of its own.
	bigDraw := func(issued int, now int64) {
		sz, ok := w.(Sizer)
		r := rand.New(rand.NewPCG(uint64(cfg.Seed), 0xb16))
		if !ok || r.Float64() >= BigRate {
			return
		}
		cl, n := sz.Big(r, now, false)
		if cl < 0 || cl >= cfg.Clients {
			return
		}
		target := targets[cl%len(targets)]
		for step := issued; step < issued+n && ctx.Err() == nil; step++ {
			issue(target, &ids[cl], spec.OpID(cl, step), NextOp(w, r, cl, step, now), now)
		}
	}
	for done := 0; done < perClient; done += perEpoch {
		if cfg.Duration > 0 && time.Since(start) > cfg.Duration {
			break
		}
		if err := ctx.Err(); err != nil {
			return History{}, err
		}
		n := min(perEpoch, perClient-done)
		now := clock.Now().UnixMilli()
		var wg sync.WaitGroup
		for cl := range cfg.Clients {
			wg.Add(1)
			go func() {
				defer wg.Done()
				target := targets[cl%len(targets)]
				for step := done; step < done+n; step++ {
					issue(target, &ids[cl], spec.OpID(cl, step), NextOp(w, rngs[cl], cl, step, now), now)
				}
			}()
		}
		wg.Wait()
		if done+n == perClient {
			// At the last epoch's now, which every client has seen.
			bigDraw(done+n, now)
		}
		clock.Advance(time.Duration(jumps.Int64N(int64(cfg.MaxJump))))
	}
	sortByCall(entries)
	return History{Store: contract.Name, Seed: cfg.Seed, Entries: entries}, nil
}

func sortByCall(es []Entry) {
	slices.SortFunc(es, func(a, b Entry) int { return cmp.Compare(a.Call, b.Call) })
}
