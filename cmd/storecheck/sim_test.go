package main

import (
	"context"
	"encoding/json"
	"html"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/storecheck/storecheck/adapters"
	"github.com/storecheck/storecheck/conformance"
	"github.com/storecheck/storecheck/fault"
	"github.com/storecheck/storecheck/fault/lossyfs"
	"github.com/storecheck/storecheck/internal/stores"
	"github.com/storecheck/storecheck/reports"
	"github.com/storecheck/storecheck/sim"
	"github.com/storecheck/storecheck/spec"
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
	// The header names the sweep's seeds, not only its first.
	if !strings.Contains(out, "storecheck: backend reference with bug continuity_write_behind, seeds 1..4, took ") {
		t.Errorf("the header does not name seeds 1..4:\n%s", out)
	}
	// The console shows what the shrinking found: the interleaving one
	// column per process, the folder it is saved in, the replay line.
	schedule := filepath.Join(dir, "sim-continuity-seed-1", "schedule.json")
	for _, want := range []string{"    the interleaving, one column per process:\n    step │ process 0",
		"saved in " + filepath.Join(dir, "sim-continuity-seed-1") + "\n", "    replay: storecheck replay " + schedule + "\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("the console does not show %q:\n%s", want, out)
		}
	}
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
	t.Parallel()
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
		st, _ := conformance.StoreNamed(k.Name())
		explored, err := sim.Explore(context.Background(), st.Subject(spec.Capabilities{}), backend, seed, sim.Params{Steps: 80, PowerCuts: tc.powerCuts}, sim.ScratchDir())
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

// noCrashPoints is a backend that declares no crash points: the reference,
// its hello's crash_points left empty.
type noCrashPoints struct{ adapters.Driver }

func (b noCrashPoints) Info() adapters.Hello {
	info := b.Driver.Info()
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
	code := cli([]string{"sim", "--store", "continuity", "--seeds", "1..8", "--report-dir", dir, "--quiet"}, &out, &errs, conformance.Adapter(noCrashPoints{stores.Reference()}))
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
		if code := cli(args, &out, &errs, conformance.Reference()); code != exitPassed {
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
	code := cli([]string{"replay", file}, &out, &errs, conformance.Reference())
	if want := "storecheck replay: step 0 cuts the power, and power loss cannot be simulated here: no FUSE device: /nonexistent/fuse is missing"; code != exitInconclusive || !strings.HasPrefix(errs.String(), want) {
		t.Errorf("replay of a power cut without FUSE: exit %d, stderr %q; want %d, %q", code, errs.String(), exitInconclusive, want)
	}
}
