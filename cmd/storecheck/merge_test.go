package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/storecheck/storecheck/conformance"
	"github.com/storecheck/storecheck/internal/bugs"
	"github.com/storecheck/storecheck/internal/stores"
	"github.com/storecheck/storecheck/reports"
)

// simShards runs "storecheck sim" over seeds as n shards, each into a
// folder of its own, and returns the folders.
func simShards(t *testing.T, ref conformance.Backend, seeds string, n int, extra ...string) []string {
	t.Helper()
	var dirs []string
	for i := 1; i <= n; i++ {
		dir := filepath.Join(t.TempDir(), fmt.Sprintf("shard-%d", i))
		args := append([]string{"sim", "--store", "continuity", "--seeds", seeds, "--shard", fmt.Sprintf("%d/%d", i, n),
			"--report-dir", dir, "--quiet", "--power-cuts=false"}, extra...)
		var out, errs bytes.Buffer
		if code := cli(args, &out, &errs, ref); code != exitPassed && code != exitFailed {
			t.Fatalf("shard %d/%d: exit %d\n%s\n%s", i, n, code, out.String(), errs.String())
		}
		dirs = append(dirs, dir)
	}
	return dirs
}

func readReport(t *testing.T, dir string) reports.Run {
	t.Helper()
	r, err := reports.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func gapNames(r reports.Run) []string {
	var out []string
	for _, g := range r.Gaps {
		out = append(out, g.Store+"/"+g.Kind+"/"+g.Name)
	}
	slices.Sort(out)
	return out
}

func checkNames(r reports.Run) []string {
	var out []string
	for _, c := range r.Checks {
		out = append(out, c.Store+"/"+c.Layer+"/"+c.Name+"/"+string(c.Outcome))
	}
	slices.Sort(out)
	return out
}

// A sweep run as three shards and merged is the sweep run on one machine:
// the same checks, coverage, rare events reached and gaps; an event one
// shard reached is not "not explored" because another shard missed it.
func TestMergedShardsAreTheWholeSweep(t *testing.T) {
	t.Parallel()
	const seeds = "1..9"
	dirs := simShards(t, conformance.Reference(), seeds, 3)
	whole := filepath.Join(t.TempDir(), "whole")
	var out, errs bytes.Buffer
	if code := cli([]string{"sim", "--store", "continuity", "--seeds", seeds, "--report-dir", whole, "--quiet", "--power-cuts=false"}, &out, &errs, conformance.Reference()); code != exitPassed {
		t.Fatalf("the whole sweep: exit %d\n%s\n%s", code, out.String(), errs.String())
	}
	merged := filepath.Join(t.TempDir(), "merged")
	out.Reset()
	errs.Reset()
	if code := cli(append([]string{"merge", "--report-dir", merged}, dirs...), &out, &errs, conformance.Reference()); code != exitPassed {
		t.Fatalf("merge: exit %d\n%s\n%s", code, out.String(), errs.String())
	}
	got, want := readReport(t, merged), readReport(t, whole)
	if !slices.Equal(checkNames(got), checkNames(want)) {
		t.Errorf("merged checks %v, the whole sweep's %v", checkNames(got), checkNames(want))
	}
	if !slices.Equal(gapNames(got), gapNames(want)) {
		t.Errorf("merged gaps %v, the whole sweep's %v", gapNames(got), gapNames(want))
	}
	for i, g := range got.Gaps {
		if w := want.Gaps[min(i, len(want.Gaps)-1)]; g.Name == w.Name && (g.Seeds != w.Seeds || g.Armed != w.Armed) {
			t.Errorf("merged gap %q over %d seeds armed %d, the whole sweep's over %d armed %d", g.Name, g.Seeds, g.Armed, w.Seeds, w.Armed)
		}
	}
	if fmt.Sprint(got.Reach[0].Events) != fmt.Sprint(want.Reach[0].Events) {
		t.Errorf("merged rare events %v, the whole sweep's %v", got.Reach[0].Events, want.Reach[0].Events)
	}
	if fmt.Sprint(got.Coverage[0].Cells) != fmt.Sprint(want.Coverage[0].Cells) {
		t.Errorf("merged coverage %v, the whole sweep's %v", got.Coverage[0].Cells, want.Coverage[0].Cells)
	}
	if got.Coverage[0].Over != "seeds "+seeds+" (3 shards)" {
		t.Errorf("merged coverage is over %q", got.Coverage[0].Over)
	}
	// The point of merging: some gap of one shard is reached by another,
	// and the merged report does not list it.
	rescued := 0
	for _, dir := range dirs {
		for _, g := range readReport(t, dir).Gaps {
			if !slices.Contains(gapNames(got), g.Store+"/"+g.Kind+"/"+g.Name) {
				rescued++
				if slices.ContainsFunc(got.Notes, func(n string) bool { return strings.Contains(n, fmt.Sprintf("%q", g.Name)) }) {
					t.Errorf("the merged notes still say %q was not reached, though a shard reached it", g.Name)
				}
			}
		}
	}
	if rescued == 0 {
		t.Fatalf("no shard missed what another reached over seeds %s: the test proves nothing; widen it", seeds)
	}
	if !strings.Contains(out.String(), "storecheck: backend reference, seeds "+seeds) {
		t.Errorf("the merged console header does not name the sweep:\n%s", out.String())
	}
}

// A failure in one shard fails the merged sweep, keeps its reproduce line,
// and its saved schedule is copied into the merged folder.
func TestAMergedSweepFailsWithTheShardsFailure(t *testing.T) {
	t.Parallel()
	b, ok := bugs.ByName("continuity_write_behind")
	if !ok {
		t.Fatal("no bug continuity_write_behind")
	}
	bug := conformance.Adapter(stores.Backend(stores.Options{Bug: b}))
	dirs := simShards(t, bug, "1..4", 2)
	merged := filepath.Join(t.TempDir(), "merged")
	var out, errs bytes.Buffer
	if code := cli(append([]string{"merge", "--report-dir", merged}, dirs...), &out, &errs, conformance.Reference()); code != exitFailed {
		t.Fatalf("merge: exit %d, want %d\n%s\n%s", code, exitFailed, out.String(), errs.String())
	}
	r := readReport(t, merged)
	failed := 0
	for _, dir := range dirs {
		for _, c := range readReport(t, dir).Checks {
			if c.Outcome != reports.Failed {
				continue
			}
			failed++
			if !strings.Contains(out.String(), "reproduce: "+c.Reproduce+"\n") {
				t.Errorf("the merged report lost %s's reproduce line %q:\n%s", c.Name, c.Reproduce, out.String())
			}
		}
	}
	if failed == 0 || len(r.Checks) != 4 {
		t.Fatalf("%d failures in the shards, %d checks merged: want some of 4", failed, len(r.Checks))
	}
	artifacts := 0
	for _, c := range r.Checks {
		for _, a := range c.Artifacts {
			artifacts++
			if _, err := os.Stat(filepath.Join(merged, a.Path)); err != nil {
				t.Errorf("artifact %s of %s not in the merged folder: %v", a.Path, c.Name, err)
			}
		}
	}
	if artifacts == 0 {
		t.Errorf("no failure's artifacts in the merged report")
	}
}

// What cannot be merged is refused, naming the folder or the shard.
func TestMergeRefusesWhatIsNotOneSweep(t *testing.T) {
	t.Parallel()
	dirs := simShards(t, conformance.Reference(), "1..4", 2, "--steps", "10")
	other := simShards(t, conformance.Reference(), "1..6", 2, "--steps", "10")
	empty := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"merge", dirs[0]}, "--report-dir is required"},
		{[]string{"merge", "--report-dir", t.TempDir()}, "want one or more SHARD_DIR..."},
		{[]string{"merge", "--report-dir", t.TempDir(), dirs[0]}, "shard 2/2 missing"},
		{[]string{"merge", "--report-dir", t.TempDir(), dirs[0], dirs[0]}, "are both shard 1/2"},
		{[]string{"merge", "--report-dir", t.TempDir(), dirs[0], other[1]}, "shards of one sweep share its seeds"},
		{[]string{"merge", "--report-dir", t.TempDir(), dirs[0], empty}, empty + " holds no report"},
	} {
		var out, errs bytes.Buffer
		if code := cli(c.args, &out, &errs, conformance.Reference()); code != exitUsage || !strings.Contains(errs.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d naming %q", c.args, code, errs.String(), exitUsage, c.want)
		}
	}
}

// The CI files of docs/ci run storecheck with flags its commands take: a
// workflow copied from the docs does not fail on a usage error.
func TestTheCIDocsUseFlagsTheCommandsTake(t *testing.T) {
	files, err := filepath.Glob("../../docs/ci/*.y*ml")
	if err != nil || len(files) < 3 {
		t.Fatalf("docs/ci holds %v (%v): want the workflow, the Indexed Job and the merge Job", files, err)
	}
	merges := 0
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		text := strings.ReplaceAll(string(data), ">-\n", "")
		for _, line := range strings.Split(text, "\n") {
			_, after, ok := strings.Cut(line, "storecheck ")
			if !ok || strings.HasPrefix(strings.TrimSpace(line), "#") || strings.Contains(after, "@latest") {
				continue
			}
			fields := strings.Fields(after)
			cmd, ok := commandNamed(fields[0])
			if !ok {
				continue // prose, not a command line
			}
			if cmd.name == "merge" {
				merges++
			}
			for _, field := range fields[1:] {
				if field == "--" {
					break
				}
				name, _, _ := strings.Cut(strings.TrimPrefix(field, "--"), "=")
				if strings.HasPrefix(field, "--") && !slices.Contains(cmd.optionNames(), name) {
					t.Errorf("%s: storecheck %s takes no --%s", file, cmd.name, name)
				}
			}
		}
	}
	if merges < 2 {
		t.Errorf("docs/ci merges shards %d times: want the workflow's and the Indexed Job's", merges)
	}
}

// The shards of a guided sweep merge into one corpus, their union, and
// the next sweep given the merged folder (--corpus) starts from what every
// shard reached: the children of the shards' parents come first. A corpus
// without --explore guided, or a folder that holds no guided report, is an
// error naming it.
func TestAGuidedSweepStartsFromItsShardsCorpus(t *testing.T) {
	t.Parallel()
	guided := []string{"--explore", "guided", "--steps", "60", "--shrink", "0"}
	dirs := simShards(t, conformance.Reference(), "1..16", 2, guided...)
	merged := filepath.Join(t.TempDir(), "merged")
	var out, errs bytes.Buffer
	if code := cli(append([]string{"merge", "--report-dir", merged}, dirs...), &out, &errs, conformance.Reference()); code != exitPassed {
		t.Fatalf("merge: exit %d\n%s\n%s", code, out.String(), errs.String())
	}
	union := map[string]bool{}
	parents := 0
	for _, dir := range dirs {
		c := readReport(t, dir).Reach[0].Guided.Corpus
		for _, m := range c.Milestones {
			union[m] = true
		}
		parents += len(c.Parents)
	}
	c := readReport(t, merged).Reach[0].Guided.Corpus
	if len(c.Milestones) != len(union) || len(c.Parents) != parents || parents == 0 {
		t.Fatalf("the merged corpus holds %d milestones and %d parents, the shards %d and %d", len(c.Milestones), len(c.Parents), len(union), parents)
	}

	next := filepath.Join(t.TempDir(), "next")
	args := append([]string{"sim", "--store", "continuity", "--seeds", "17..24", "--report-dir", next, "--quiet", "--power-cuts=false", "--corpus", merged}, guided...)
	out.Reset()
	errs.Reset()
	if code := cli(args, &out, &errs, conformance.Reference()); code != exitPassed {
		t.Fatalf("the sweep from the corpus: exit %d\n%s\n%s", code, out.String(), errs.String())
	}
	r := readReport(t, next)
	childOfCorpus := func(name string) bool {
		for _, p := range c.Parents {
			if strings.HasPrefix(name, p.Name()+" > ") {
				return true
			}
		}
		return false
	}
	if len(r.Checks) < 2 || !childOfCorpus(r.Checks[1].Name) {
		t.Fatalf("the sweep from the corpus began %v, want a child of one of the merged corpus's parents second", checkNames(r)[:2])
	}
	if got := r.Reach[0].Guided.Corpus; len(got.Milestones) < len(c.Milestones) {
		t.Errorf("the next corpus holds %d milestones, fewer than the one it started from (%d)", len(got.Milestones), len(c.Milestones))
	}

	for _, bad := range []struct {
		args []string
		want string
	}{
		{[]string{"--corpus", merged}, "a guided sweep's corpus, and the sweep is not guided"},
		{[]string{"--explore", "guided", "--corpus", t.TempDir()}, "holds no report"},
		{[]string{"--explore", "guided", "--corpus", readBlind(t)}, "holds no guided sweep's corpus"},
	} {
		out.Reset()
		errs.Reset()
		args := append([]string{"sim", "--store", "continuity", "--seeds", "1..2", "--quiet", "--power-cuts=false", "--report-dir", t.TempDir()}, bad.args...)
		if code := cli(args, &out, &errs, conformance.Reference()); code != exitUsage || !strings.Contains(errs.String(), "corpus") || !strings.Contains(errs.String(), bad.want) {
			t.Errorf("%v: exit %d, stderr %q, want %q", bad.args, code, errs.String(), bad.want)
		}
	}
}

// readBlind is the report folder of a blind sweep.
func readBlind(t *testing.T) string {
	t.Helper()
	return simShards(t, conformance.Reference(), "1..2", 1)[0]
}
