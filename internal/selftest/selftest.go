// Package selftest is "storecheck selftest": every deliberate bug of the
// reference (internal/bugs) through every layer of the kit, through the
// adapters a user would use, and the unmodified reference through the same.
// The command prints its table; this package fills it in.
package selftest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/storecheck/storecheck/conformance"
	"github.com/storecheck/storecheck/fault/lossyfs"
	"github.com/storecheck/storecheck/internal/bugs"
	"github.com/storecheck/storecheck/internal/stores"
	"github.com/storecheck/storecheck/reports"
)

// Layers are the layers a subject runs through, in table order.
var Layers = []string{"spec", "linearizability", "sim", "exec spec", "exec lin", "exec sim"}

// Verdict is one layer's answer on one subject.
type Verdict struct {
	Ran    bool
	Caught bool
	Took   time.Duration
	Note   string
	// Failure is what the layer said of the bug it caught: the first
	// failed check's message (a layer in a process of its own: what the
	// process printed), so a test can hold that it names the rule.
	Failure string
}

// Row is one subject of the table: a deliberate bug (Bug "" for the
// reference), the store it breaks ("all" for the reference), and each
// layer's verdict.
type Row struct {
	Bug, Store string
	Verdicts   map[string]Verdict
}

// Options say what a selftest runs.
type Options struct {
	// Stores are the stores whose bugs run; Bugs, when set, only those.
	Stores, Bugs []string
	// Shard is the share of the bugs this run takes.
	Shard conformance.Shard
	// Seeds are the in-process simulator layer's sweep; ExecSeeds the exec
	// simulator layer's (a process of its own costs).
	Seeds, ExecSeeds conformance.SeedRange
	// Cheapest: a bug not in the exec sample goes through its cheapest
	// catching layer only, the in-process layers tried in cost order.
	Cheapest bool
	// ExecSample is how many bugs of each store also run over the exec
	// adapter (the reference always does).
	ExecSample int
	// Ops is the operations of a linearizability layer's history (0: the
	// default run's).
	Ops int
	// Workers are the subjects checked at once (0: one per CPU).
	Workers int
	// Self starts this program as a subject: Self, then a bug's name
	// (SubjectName), then a storecheck command runs that command against
	// the reference with the bug (Subject).
	Self []string
	// Started is told how many subjects the run checks, before the first;
	// Done is called as each one is done.
	Started func(subjects int)
	Done    func()
}

// cheapestOrder is the in-process layers in the order of what they cost to
// catch a bug they can: a simulated seed takes milliseconds in this
// process, the specs a process of their own (a second), a history and its
// check a few seconds.
var cheapestOrder = []string{"sim", "spec", "linearizability"}

// exitFailed is storecheck's exit code of a check that failed.
const exitFailed = 1

// Bug finds a deliberate bug by name; the error names every one.
func Bug(name string) (bugs.Bug, error) {
	b, ok := bugs.ByName(name)
	if !ok {
		return bugs.Bug{}, fmt.Errorf("%q names no deliberate bug; accepted: %s", name, strings.Join(BugNames(), ", "))
	}
	return b, nil
}

// BugNames are every deliberate bug's name, store by store.
func BugNames() []string {
	var names []string
	for _, b := range stores.Bugs() {
		names = append(names, b.Name())
	}
	return names
}

// SubjectName is b as Subject takes it ("none": the reference).
func SubjectName(b bugs.Bug) string {
	if b.Name() == "" {
		return "none"
	}
	return b.Name()
}

// Subject is the reference with the bug named ("none": the reference
// itself), in this process: what "storecheck selftest-subject" checks or
// serves.
func Subject(name string) (conformance.Backend, error) {
	if name == "none" {
		return conformance.Adapter(stores.Backend(stores.Options{})), nil
	}
	b, err := Bug(name)
	if err != nil {
		return conformance.Backend{}, err
	}
	return conformance.Adapter(stores.Backend(stores.Options{Bug: b})), nil
}

// Table is what a selftest found: a row a subject, and what it could not
// check here, with why (a note a line).
type Table struct {
	Rows  []Row
	Notes []string
}

// Run checks the reference and every bug o asks for, the reference first.
// Where no power can be cut (no FUSE here), the bugs only a power cut
// shows are left out, and a note says so.
func Run(o Options) (Table, error) {
	var only []bugs.Bug
	for _, name := range o.Bugs {
		b, err := Bug(strings.TrimSpace(name))
		if err != nil {
			return Table{}, err
		}
		only = append(only, b)
	}
	workers := o.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	sh := o.Shard
	if sh.N == 0 {
		sh = conformance.Shard{I: 1, N: 1}
	}
	// The subjects: the reference first, then every bug of the stores
	// asked for (of Bugs, when given), the shard's share of them.
	subjects := []bugs.Bug{{}}
	sampled := map[bugs.Bug]bool{}
	perStore := map[string]int{}
	var candidates []bugs.Bug
	var unpowered []string
	noFUSE := lossyfs.Available()
	for _, b := range stores.Bugs() {
		if slices.Contains(o.Stores, b.Store()) && (only == nil || slices.Contains(only, b)) {
			if b.NeedsPowerCut() && noFUSE != nil {
				unpowered = append(unpowered, b.Name())
				continue
			}
			candidates = append(candidates, b)
		}
	}
	var t Table
	if len(unpowered) > 0 {
		t.Notes = append(t.Notes, fmt.Sprintf("power loss not explored: %v; the bugs only a power cut shows are not checked: %s", noFUSE, strings.Join(unpowered, ", ")))
	}
	for i, b := range candidates {
		if i%sh.N != sh.I-1 {
			continue
		}
		subjects = append(subjects, b)
		if perStore[b.Store()] < o.ExecSample {
			perStore[b.Store()]++
			sampled[b] = true
		}
	}
	if o.Started != nil {
		o.Started(len(subjects))
	}
	rows := make([]Row, len(subjects))
	var wg sync.WaitGroup
	sem := make(chan struct{}, workers)
	for i, b := range subjects {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			names, store := o.Stores, b.Store()
			if b.Name() != "" {
				names = []string{b.Store()}
			} else {
				store = "all"
			}
			rows[i] = Row{Bug: b.Name(), Store: store, Verdicts: o.check(b, names, b.Name() == "" || sampled[b])}
			if o.Done != nil {
				o.Done()
			}
		}()
	}
	wg.Wait()
	t.Rows = rows
	return t, nil
}

// check runs the reference with bug b (none: the reference itself) through
// the layers for the stores: every layer, over the exec adapter too, when
// every; else the in-process layers, or with Cheapest, the first of them
// (in cost order) that catches b.
func (o Options) check(b bugs.Bug, names []string, every bool) map[string]Verdict {
	out := map[string]Verdict{}
	ref := conformance.Adapter(stores.Backend(stores.Options{Bug: b}))
	storeArg := strings.Join(names, ",")

	// A layer in a process of its own: the specs always (runs of the suite
	// in one process take turns at Ginkgo's one global suite, spec/suite's
	// ginkgoTurn, so the subjects checked at once need processes of their
	// own for their specs to overlap; and what a power-cut spec's cut does
	// ends the process it runs in, not selftest), and every layer over the
	// exec adapter, against "storecheck serve" started with the same bug.
	scratch, _ := os.MkdirTemp("", "storecheck-selftest-")
	defer os.RemoveAll(scratch)
	sub := func(args ...string) Verdict {
		cmd := exec.Command(o.Self[0], append(append(slices.Clone(o.Self[1:]), SubjectName(b)), args...)...)
		// Away from the folder's storecheck.json: it configures the
		// checks of a backend, never the broken references'.
		cmd.Dir = scratch
		start := time.Now()
		outb, err := cmd.CombinedOutput()
		v := Verdict{Ran: true, Took: time.Since(start)}
		switch code := cmd.ProcessState.ExitCode(); {
		case err == nil:
		case code == exitFailed:
			v.Caught, v.Failure = true, string(outb)
		default:
			v.Note = fmt.Sprintf("exit %d: %s", code, lastLine(string(outb)))
		}
		return v
	}
	serve := append(append([]string{"--"}, o.Self...), SubjectName(b), "serve")
	// in runs an in-process layer of the kit against the broken
	// reference.
	in := func(cfg conformance.Config) Verdict {
		cfg.Stores, cfg.ReportDir = names, scratch
		start := time.Now()
		rep, err := conformance.Run(context.Background(), ref, cfg)
		v := Verdict{Ran: true, Caught: rep.Failed(), Took: time.Since(start)}
		for _, c := range rep.Checks {
			if c.Outcome == reports.Failed {
				v.Failure = c.Message
				break
			}
		}
		switch {
		case err != nil:
			v.Note = err.Error()
		case rep.Inconclusive():
			v.Note = "inconclusive"
		}
		return v
	}
	layers := map[string]func() Verdict{
		"spec": func() Verdict {
			return sub("run", "--store", storeArg, "--layers", "spec", "--fail-fast", "--seed", "1")
		},
		"linearizability": func() Verdict {
			return in(conformance.Config{Layers: []conformance.Layer{conformance.LayerLinearizability}, Seeds: conformance.Seed(1), Ops: o.Ops})
		},
		"sim": func() Verdict {
			seeds := o.Seeds
			return in(conformance.Config{Layers: []conformance.Layer{conformance.LayerSim}, Seeds: &seeds, Workers: 1, Shrink: -1, FailFast: true})
		},
	}
	// The exec layers run beside the in-process ones: a subject that goes
	// through every layer is the longest row of the table.
	execOut := map[string]Verdict{}
	done := make(chan struct{})
	go func() {
		defer close(done)
		if !every {
			return
		}
		execOut["exec spec"] = sub(append([]string{"run", "--store", storeArg, "--layers", "spec", "--fail-fast", "--seed", "1"}, serve...)...)
		lin := []string{"linearize", "--store", storeArg, "--seed", "1", "--fail-fast", "--quiet", "--report-dir", scratch}
		if o.Ops > 0 {
			lin = append(lin, "--ops", strconv.Itoa(o.Ops))
		}
		execOut["exec lin"] = sub(append(lin, serve...)...)
		execOut["exec sim"] = sub(append([]string{"sim", "--store", storeArg, "--seeds", o.ExecSeeds.String(), "--fail-fast", "--quiet", "--shrink", "0", "--report-dir", scratch}, serve...)...)
	}()
	for _, l := range cheapestOrder {
		out[l] = layers[l]()
		if o.Cheapest && !every && out[l].Caught {
			break
		}
	}
	<-done
	for l, v := range execOut {
		out[l] = v
	}
	return out
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}
