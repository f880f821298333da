package main

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/storecheck/storecheck/adapters"
	"github.com/storecheck/storecheck/fault"
	"github.com/storecheck/storecheck/fault/lossyfs"
	"github.com/storecheck/storecheck/internal/bugs"
	"github.com/storecheck/storecheck/internal/stores"
	"github.com/storecheck/storecheck/reports"
	"github.com/storecheck/storecheck/sim"
)

// A bug the simulator finds fails "storecheck sim" with the command that
// reproduces the seed; the shrunk schedule it saves fails "storecheck
// replay" against the bug and passes against the reference.
func TestSimFindsABugAndItsScheduleReplays(t *testing.T) {
	dir := t.TempDir()
	out, errs, code := storecheck(t, "bug:continuity_write_behind", "sim", "--store", "continuity", "--seeds", "1..4", "--report-dir", dir, "--quiet")
	if code != exitFailed {
		t.Fatalf("exit %d, want %d\n%s\n%s", code, exitFailed, out, errs)
	}
	if !strings.Contains(out, "reproduce: storecheck sim --store continuity --seed 1\n") {
		t.Fatalf("no reproduce command:\n%s", out)
	}
	schedule := filepath.Join(dir, "sim-continuity-seed-1", "schedule.json")
	if _, err := os.Stat(schedule); err != nil {
		t.Fatal(err)
	}
	if out, _, code := storecheck(t, "bug:continuity_write_behind", "replay", schedule); code != exitFailed || !strings.Contains(out, "FAIL step ") {
		t.Fatalf("replay against the bug: exit %d\n%s", code, out)
	}
	if out, _, code := storecheck(t, "file", "replay", schedule); code != exitPassed || !strings.Contains(out, "ok: ") {
		t.Fatalf("replay against the reference: exit %d\n%s", code, out)
	}
}

var traceHash = regexp.MustCompile(`(?m)^ok: \d+ steps, trace ([0-9a-f]{64})$`)

// One schedule gives one trace, byte for byte, run twice through the exec
// adapter against "storecheck serve" (a real process per simulated process,
// killed and crashed for real, its power cut for real), and the same trace
// in process.
func TestReplayIsTheSameThroughTheExecAdapter(t *testing.T) {
	k, _ := stores.Lookup("continuity")
	for _, tc := range []struct {
		seed      int64
		powerCuts bool
	}{{3, false}, {11, false}, {5, true}} {
		if tc.powerCuts && lossyfs.Available() != nil {
			t.Logf("seed %d: power loss not explored: %v", tc.seed, lossyfs.Available())
			continue
		}
		seed := tc.seed
		path := filepath.Join(t.TempDir(), "schedule.json")
		backend := sim.InProcess(stores.Reference(), k.Name())
		explored, err := sim.Explore(context.Background(), subject(k), backend, seed, sim.Params{Steps: 80, PowerCuts: tc.powerCuts}, sim.ScratchDir())
		if err != nil || explored.Failure != nil {
			t.Fatal(err, explored.Failure)
		}
		if cut := explored.Coverage[sim.EventPowerCut] > 0; cut != tc.powerCuts {
			t.Fatalf("seed %d: power cut %v, want %v", seed, cut, tc.powerCuts)
		}
		if err := explored.Schedule.WriteFile(path); err != nil {
			t.Fatal(err)
		}
		var hashes []string
		for _, args := range [][]string{{"replay", path}, {"replay", path, "--", os.Args[0], "serve"}, {"replay", path, "--", os.Args[0], "serve"}} {
			out, errs, code := storecheck(t, "file", args...)
			m := traceHash.FindStringSubmatch(out)
			if code != exitPassed || m == nil {
				t.Fatalf("%v: exit %d\n%s\n%s", args, code, out, errs)
			}
			hashes = append(hashes, m[1])
		}
		if hashes[0] != hashes[1] || hashes[1] != hashes[2] {
			t.Fatalf("seed %d: traces %v", seed, hashes)
		}
	}
}

func TestSimUsageErrors(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"sim", "--seed", "1", "--seeds", "1..2"}, "storecheck sim: --seed and --seeds name the same thing; give one\n"},
		{[]string{"sim", "--seeds", "5..1"}, "storecheck sim: seeds \"5..1\": the range ends before it starts\n"},
		{[]string{"sim", "--shard", "3/2"}, "storecheck sim: shard \"3/2\": want i/n with 1 <= i <= n\n"},
		{[]string{"sim", "--steps", "0"}, "storecheck sim: --steps must be at least 1, got 0\n"},
		{[]string{"sim", "--"}, "storecheck sim: no command after --; " + mustCommand("sim").accepted() + "\n"},
		{[]string{"replay"}, "storecheck replay: want exactly 1 SCHEDULE.json, got 0 arguments; usage: storecheck replay [flags] SCHEDULE.json [-- BACKEND [ARG...]]\n"},
	} {
		_, errs, code := storecheck(t, "file", tc.args...)
		if code != exitUsage || errs != tc.want {
			t.Errorf("%v: exit %d, stderr %q; want %d, %q", tc.args, code, errs, exitUsage, tc.want)
		}
	}
}

// The simulator's proof: an expiry off-by-one, a fence not bumped on
// re-claim and a write-behind cache (one process: only a crash shows it)
// are each found within the default sweep, and each failure shrinks to a
// schedule of at most 20 steps that still fails the same way and that the
// correct reference passes.
func TestSimFindsAndShrinksTheSeedsBugs(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		bug    bugs.Bug
		params sim.Params
	}{
		{bugs.RuntimeLeaseLiveAtExpiry, sim.Params{}},
		{bugs.RuntimeFenceNotBumped, sim.Params{}},
		{bugs.ContinuityWriteBehind, sim.Params{Processes: 1}},
	} {
		t.Run(tc.bug.Name(), func(t *testing.T) {
			t.Parallel()
			k, _ := stores.Lookup(tc.bug.Store())
			subj := subject(k)
			broken := sim.InProcess(stores.Backend(stores.Options{Bug: tc.bug}), k.Name())
			correct := sim.InProcess(stores.Reference(), k.Name())
			for _, seed := range sim.DefaultSeeds.Seeds(sim.Shard{}) {
				res, err := sim.Explore(ctx, subj, broken, seed, tc.params, sim.ScratchDir())
				if err != nil {
					t.Fatal(err)
				}
				if res.Failure == nil {
					continue
				}
				small, err := sim.Shrink(ctx, subj, broken, res, sim.ScratchDir(), 2000)
				if err != nil {
					t.Fatal(err)
				}
				if n := len(small.Schedule.Steps); n > 20 || small.Failure.Signature() != res.Failure.Signature() {
					t.Fatalf("seed %d shrunk to %d steps, failing as %q (was %q):\n%s", seed, n,
						small.Failure.Signature(), res.Failure.Signature(), strings.Join(small.Trace, "\n"))
				}
				if ok, err := sim.Run(ctx, subj, correct, small.Schedule, sim.ScratchDir()); err != nil || ok.Failure != nil {
					t.Fatalf("the reference fails the shrunk schedule: %v %v", err, ok.Failure)
				}
				t.Logf("seed %d: %d steps shrunk to %d", seed, len(res.Schedule.Steps), len(small.Schedule.Steps))
				return
			}
			t.Fatalf("the default sweep (%s) never found %s", sim.DefaultSeeds, tc.bug.Name())
		})
	}
}

// Over the default sweep the simulator reaches every rare event each store
// names, and never flags the reference.
func TestDefaultSweepReachesEveryRareEvent(t *testing.T) {
	for _, k := range stores.All {
		t.Run(k.Name(), func(t *testing.T) {
			t.Parallel()
			cov := defaultSweep(t, k)
			if len(rareEvents(k)) == 0 {
				t.Fatal("the store names no rare events")
			}
			want := rareEvents(k)
			if why := noPowerCuts(k); why != "" {
				// With power cuts off, or where no FUSE mount can be made,
				// the sweep cuts no power, and says why: the one event it
				// may miss.
				t.Logf("power loss not explored: %s", why)
				want = slices.DeleteFunc(want, func(e string) bool { return e == sim.EventPowerCut })
			}
			if missing := cov.Missing(want); len(missing) > 0 {
				t.Fatalf("the default sweep never reached: %s", strings.Join(missing, "; "))
			}
		})
	}
}

// sweeps are the default sweep of each store against the reference, run
// once for the tests that read what it reached.
var sweeps sync.Map // store name -> func() swept

// defaultSweep is what the simulator's default sweep ("storecheck sim":
// seeds 1..100, sim.Params' defaults) of store k reached against the
// reference; the test fails if the reference was flagged. Power cuts are
// on with STORECHECK_FULL_TESTS=1 only, as storecheck sim has them: they
// reach no cell the sweep without them does not, and half the seeds then
// run on FUSE, at several times the cost (sim's own default-sweep test and
// TestPowerCutsCatchTheDurabilityBugs cut the power by default).
func defaultSweep(t *testing.T, k stores.Store) sim.Coverage {
	t.Helper()
	cov, flagged, _ := sweepOf(k)
	if len(flagged) > 0 {
		t.Fatal(strings.Join(flagged, "\n"))
	}
	return cov
}

// noPowerCuts is why the default sweep of store k cut no power ("" when it
// did).
func noPowerCuts(k stores.Store) string {
	_, _, why := sweepOf(k)
	return why
}

func sweepOf(k stores.Store) (sim.Coverage, []string, string) {
	type swept struct {
		cov     sim.Coverage
		flagged []string
		noPower string
	}
	once, _ := sweeps.LoadOrStore(k.Name(), sync.OnceValue(func() swept {
		w := swept{cov: sim.Coverage{}}
		backend := sim.InProcess(stores.Reference(), k.Name())
		err := sim.Sweep(context.Background(), subject(k), backend, sim.DefaultSeeds.Seeds(sim.Shard{}), sim.Params{PowerCuts: fullTests()}, 1, sim.ScratchDir(),
			func(r sim.Result) {
				if r.Failure != nil {
					w.flagged = append(w.flagged, fmt.Sprintf("seed %d: the reference was flagged: %v", r.Schedule.Seed, r.Failure))
				}
				if r.NoPowerCuts != "" {
					w.noPower = r.NoPowerCuts
				}
				w.cov.Add(r)
			}, nil)
		if err != nil {
			w.flagged = append(w.flagged, err.Error())
		}
		return w
	}))
	w := once.(func() swept)()
	return w.cov, w.flagged, w.noPower
}

// The racy bugs of the corpus (a check read outside the write transaction,
// an in-process lock instead of a transaction) are reproduced from one seed
// by the simulator, which pauses one operation between its read and its
// write while another process's commits. In process, each failure shrinks
// to at most 12 steps that replay the same failure every time and that the
// correct reference passes; over the wire (one "storecheck serve" process
// per simulated process) the same seed fails the same way, and the shrunk
// schedule replayed over the wire fails the same way too.
func TestSimReproducesEveryRacyBugFromOneSeed(t *testing.T) {
	ctx := context.Background()
	for _, bug := range []bugs.Bug{bugs.ContinuityUpsertCheckOutsideTx, bugs.ContinuityProcessLock,
		bugs.RuntimeLeaseClaimOutsideTx, bugs.ClientSettleCheckOutsideTx} {
		t.Run(bug.Name(), func(t *testing.T) {
			t.Parallel()
			k, _ := stores.Lookup(bug.Store())
			subj := subject(k)
			broken := sim.InProcess(stores.Backend(stores.Options{Bug: bug}), k.Name())
			wire := sim.Exec(adapters.ExecOptions{Command: []string{os.Args[0], selftestSubject, bug.Name(), "serve"},
				Env: []string{harnessEnv + "=file"}, Contracts: stores.Contracts()}, k.Name())
			for _, seed := range sim.DefaultSeeds.Seeds(sim.Shard{}) {
				res, err := sim.Explore(ctx, subj, broken, seed, sim.Params{}, sim.ScratchDir())
				if err != nil {
					t.Fatal(err)
				}
				if res.Failure == nil {
					continue
				}
				over, err := sim.Explore(ctx, subj, wire, seed, sim.Params{}, sim.ScratchDir())
				if err != nil || over.Failure == nil || over.Hash() != res.Hash() {
					t.Fatalf("seed %d over the wire: %v, failure %v; the same trace: %v", seed, err, over.Failure, over.Hash() == res.Hash())
				}
				small, err := sim.Shrink(ctx, subj, broken, res, sim.ScratchDir(), 2000)
				if err != nil {
					t.Fatal(err)
				}
				if n := len(small.Schedule.Steps); n > 12 || small.Failure.Signature() != res.Failure.Signature() {
					t.Fatalf("seed %d shrunk to %d steps, failing as %q (was %q):\n%s", seed, n,
						small.Failure.Signature(), res.Failure.Signature(), small.InterleavingText(50))
				}
				for range 100 {
					again, err := sim.Run(ctx, subj, broken, small.Schedule, sim.ScratchDir())
					if err != nil || again.Failure == nil || again.Hash() != small.Hash() {
						t.Fatalf("a replay of the shrunk schedule did not fail the same way: %v %v", err, again.Failure)
					}
				}
				if again, err := sim.Run(ctx, subj, wire, small.Schedule, sim.ScratchDir()); err != nil || again.Failure == nil ||
					again.Failure.Signature() != small.Failure.Signature() {
					t.Fatalf("the shrunk schedule over the wire: %v %v", err, again.Failure)
				}
				if ok, err := sim.Run(ctx, subj, sim.InProcess(stores.Reference(), k.Name()), small.Schedule, sim.ScratchDir()); err != nil || ok.Failure != nil {
					t.Fatalf("the reference fails the shrunk schedule: %v %v", err, ok.Failure)
				}
				t.Logf("seed %d: %d steps shrunk to %d:\n%s", seed, len(res.Schedule.Steps), len(small.Schedule.Steps), small.InterleavingText(50))
				return
			}
			t.Fatalf("the default sweep (%s) never found %s", sim.DefaultSeeds, bug.Name())
		})
	}
}

// noCrashPoints is a backend that declares no crash points: the reference,
// its hello's crash_points left empty.
type noCrashPoints struct{ adapters.Backend }

func (b noCrashPoints) Info() adapters.Hello {
	info := b.Backend.Info()
	info.Capabilities.CrashPoints = nil
	return info
}

// A capability missing means less is explored, never a refusal: sim runs a
// backend without crash points, kills its processes (and crashes none inside an
// operation), and every form of the report says what could not be reached
// and why.
func TestSimWithoutCrashPointsExploresKillsAndSaysWhatItMissed(t *testing.T) {
	dir := t.TempDir()
	var out, errs strings.Builder
	code := cli([]string{"sim", "--store", "continuity", "--seeds", "1..8", "--report-dir", dir, "--quiet"}, &out, &errs, noCrashPoints{stores.Reference()})
	if code != exitPassed {
		t.Fatalf("exit %d, want %d\n%s\n%s", code, exitPassed, out.String(), errs.String())
	}
	coverage := regexp.MustCompile(`(?m)^continuity coverage: .*\(not: (.*)\)$`).FindStringSubmatch(out.String())
	if coverage == nil || !strings.Contains(coverage[1], sim.EventCrashInside) || strings.Contains(coverage[1], sim.EventKill) {
		t.Fatalf("want kills reached and no crash inside an operation:\n%s", out.String())
	}
	const why = `continuity: "` + sim.EventCrashInside + `" was not reached: it needs crash points, and the backend declares none for continuity`
	const capability = "continuity: crashes inside operations were not explored: the backend declares no crash points"
	lost := strings.Replace(why, sim.EventCrashInside, sim.EventAnswerLost, 1)
	for form, text := range reportForms(t, dir, out.String()) {
		if !strings.Contains(text, why) || !strings.Contains(text, lost) || !strings.Contains(text, capability) {
			t.Errorf("%s does not say what was not explored and why:\n%s", form, text)
		}
	}
}

// reportForms are a run's notes as each form of its report has them: the
// console's, and the files' in dir (the JSON's notes, the HTML and JUnit
// unescaped).
func reportForms(t *testing.T, dir, console string) map[string]string {
	t.Helper()
	forms := map[string]string{"console": console}
	for _, f := range []string{reports.TextFile, reports.JSONFile, reports.HTMLFile, reports.JUnitFile} {
		b, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		forms[f] = string(b)
	}
	var run reports.Run
	if err := json.Unmarshal([]byte(forms[reports.JSONFile]), &run); err != nil {
		t.Fatal(err)
	}
	forms[reports.JSONFile] = strings.Join(run.Notes, "\n")
	forms[reports.HTMLFile] = html.UnescapeString(forms[reports.HTMLFile])
	forms[reports.JUnitFile] = html.UnescapeString(forms[reports.JUnitFile])
	return forms
}

// Where no FUSE mount can be made (here: the device named is missing), or
// with --power-cuts=false, the sweep runs without power cuts, passes, and
// every form of its report says power loss was not explored and why; a
// replay of a schedule that cuts the power says it cannot run here and is
// inconclusive, never a failure.
func TestSimWithoutPowerCutsSaysPowerLossWasNotExplored(t *testing.T) {
	t.Setenv(lossyfs.DeviceEnv, "/nonexistent/fuse")
	for _, tc := range []struct {
		flags []string
		why   string
	}{
		{nil, "continuity: power loss not explored: no FUSE device: /nonexistent/fuse is missing"},
		{[]string{"--power-cuts=false"}, "continuity: power loss not explored: power cuts are off"},
	} {
		dir := t.TempDir()
		var out, errs strings.Builder
		args := append([]string{"sim", "--store", "continuity", "--seeds", "1..4", "--report-dir", dir, "--quiet"}, tc.flags...)
		if code := cli(args, &out, &errs, stores.Reference()); code != exitPassed {
			t.Fatalf("%v: exit %d, want %d\n%s\n%s", tc.flags, code, exitPassed, out.String(), errs.String())
		}
		for form, text := range reportForms(t, dir, out.String()) {
			if !strings.Contains(text, tc.why) {
				t.Errorf("%v: %s does not say %q:\n%s", tc.flags, form, tc.why, text)
			}
		}
	}
	s := sim.Schedule{Store: "continuity", Seed: 1, Clients: 1, Processes: 1, Steps: []sim.Step{{Kind: sim.StepFault, Fault: fault.PowerCut{}}}}
	file := filepath.Join(t.TempDir(), "schedule.json")
	if err := s.WriteFile(file); err != nil {
		t.Fatal(err)
	}
	var out, errs strings.Builder
	code := cli([]string{"replay", file}, &out, &errs, stores.Reference())
	if want := "storecheck replay: step 0 cuts the power, and power loss cannot be simulated here: no FUSE device: /nonexistent/fuse is missing"; code != exitInconclusive || !strings.HasPrefix(errs.String(), want) {
		t.Errorf("replay of a power cut without FUSE: exit %d, stderr %q; want %d, %q", code, errs.String(), exitInconclusive, want)
	}
}
