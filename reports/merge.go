package reports

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Gap is something a sweep is meant to reach and did not: a rare event, a
// declared crash point. It is kept apart from the run's other notes (its
// text is among them too) so that the shards of one sweep merge: a gap
// stays only where no shard reached it, and its counts add up.
type Gap struct {
	Store string `json:"store"`
	// Kind is GapEvent or GapCrashPoint.
	Kind string `json:"kind"`
	Name string `json:"name"`
	// Why says why it was not reached; "{seeds}" and "{armed}" in it stand
	// for Seeds and Armed, which a merge adds up.
	Why string `json:"why"`
	// Seeds is how many runs the gap is over; Armed how many operations
	// were armed at a crash point that none reached.
	Seeds int `json:"seeds"`
	Armed int `json:"armed,omitempty"`
}

// Gap kinds.
const (
	GapEvent      = "event"
	GapCrashPoint = "crash point"
)

// Text is the gap as a note: what was not reached, and why.
func (g Gap) Text() string {
	why := strings.NewReplacer("{seeds}", strconv.Itoa(g.Seeds), "{armed}", strconv.Itoa(g.Armed)).Replace(g.Why)
	if g.Kind == GapCrashPoint {
		return fmt.Sprintf("%s: crash point %q was not explored: %s", g.Store, g.Name, why)
	}
	return fmt.Sprintf("%s: %q was not reached: %s", g.Store, g.Name, why)
}

// ReadDir reads the run a report folder holds (its JSONFile), as WriteDir
// wrote it.
func ReadDir(dir string) (Run, error) {
	data, err := os.ReadFile(filepath.Join(dir, JSONFile))
	if err != nil {
		return Run{}, fmt.Errorf("%s holds no report: %w", dir, err)
	}
	var r Run
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return Run{}, fmt.Errorf("%s: %s is not a storecheck report: %w", dir, JSONFile, err)
	}
	if r.Tool != "storecheck" {
		return Run{}, fmt.Errorf("%s: %s is not a storecheck report (tool %q)", dir, JSONFile, r.Tool)
	}
	return r, nil
}

// ReadCorpus is, by store, the corpus of the guided sweep whose report
// folder dir is (or the merge of its shards'): an error names a folder
// that holds no report, or a report of no guided sweep.
func ReadCorpus(dir string) (map[string]*Corpus, error) {
	r, err := ReadDir(dir)
	if err != nil {
		return nil, err
	}
	out := map[string]*Corpus{}
	for _, reach := range r.Reach {
		if reach.Guided != nil && reach.Guided.Corpus != nil {
			out[reach.Store] = reach.Guided.Corpus
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: the report holds no guided sweep's corpus (its sweep was blind, or it has no simulator layer)", dir)
	}
	return out, nil
}

// Shard is one shard's report and the folder it came from.
type Shard struct {
	Dir string
	Run Run
}

// shardSuffix is what a shard adds to the name of what it counted over
// ("seeds 1..100 (shard 2/4)").
var shardSuffix = regexp.MustCompile(` \(shard \d+/\d+\)$`)

// Merge is the one run the shards of a sweep make together, as if one
// machine had run them all: their checks (a check every shard ran, as the
// specs are, once, with its worst outcome), coverage and rare events
// summed, a gap kept only where no shard reached it, the other notes once
// each. The shards must be the shares 1..n of one sweep of one backend
// (each "i/n" once), or runs of one backend over disjoint seeds with no
// shard named; anything else is an error naming the folder.
func Merge(shards []Shard) (Run, error) {
	if len(shards) == 0 {
		return Run{}, errors.New("no shard reports to merge")
	}
	if err := sameSweep(shards); err != nil {
		return Run{}, err
	}
	first := shards[0].Run
	out := Run{Tool: first.Tool, Backend: first.Backend, Seed: first.Seed, Seeds: first.Seeds}
	if first.Shard == "" {
		out.Seeds = unionSeeds(shards)
	}
	index := map[[3]string]int{}
	var gapOrder [][3]string
	gaps := map[[3]string]*Gap{}
	gapShards := map[[3]string]int{}
	// storeShards counts, per store, the shards that swept it: a gap is
	// kept when every one of them has it.
	storeShards := map[string]int{}
	seenNote := map[string]bool{}
	for _, sh := range shards {
		r := sh.Run
		out.Duration = max(out.Duration, r.Duration)
		for _, c := range r.Checks {
			c.Name = shardSuffix.ReplaceAllString(c.Name, "")
			key := [3]string{c.Store, c.Layer, c.Name}
			if i, ok := index[key]; ok {
				if worse(c.Outcome, out.Checks[i].Outcome) {
					out.Checks[i] = c
				}
				continue
			}
			index[key] = len(out.Checks)
			out.Checks = append(out.Checks, c)
		}
		gapText := map[string]bool{}
		for _, g := range r.Gaps {
			gapText[g.Text()] = true
			key := [3]string{g.Store, g.Kind, g.Name}
			gapShards[key]++
			if have, ok := gaps[key]; ok {
				have.Seeds += g.Seeds
				have.Armed += g.Armed
				continue
			}
			g := g
			gaps[key] = &g
			gapOrder = append(gapOrder, key)
		}
		swept := map[string]bool{}
		for _, reach := range r.Reach {
			swept[reach.Store] = true
		}
		for store := range swept {
			storeShards[store]++
		}
		for _, n := range r.Notes {
			if !gapText[n] && !seenNote[n] {
				seenNote[n] = true
				out.Notes = append(out.Notes, n)
			}
		}
		out.Coverage = mergeCoverage(out.Coverage, r.Coverage)
		out.Reach = mergeReach(out.Reach, r.Reach)
	}
	for _, key := range gapOrder {
		if gapShards[key] == storeShards[key[0]] {
			out.Gaps = append(out.Gaps, *gaps[key])
			out.Notes = append(out.Notes, gaps[key].Text())
		}
	}
	n := len(shards)
	for i := range out.Coverage {
		out.Coverage[i].Over = mergedOver(out.Coverage[i].Over, n)
	}
	for i := range out.Reach {
		out.Reach[i].Over = mergedOver(out.Reach[i].Over, n)
	}
	return out, nil
}

// sameSweep checks that the shards are one sweep's: one backend, and either
// the shares 1..n of the same seeds, each once, or unsharded runs.
func sameSweep(shards []Shard) error {
	first := shards[0]
	seen := map[int]string{}
	n := 0
	for _, sh := range shards {
		r := sh.Run
		if r.Backend != first.Run.Backend {
			return fmt.Errorf("%s checked backend %q, %s backend %q: shards of one sweep check one backend", sh.Dir, r.Backend, first.Dir, first.Run.Backend)
		}
		if (r.Shard == "") != (first.Run.Shard == "") {
			return fmt.Errorf("%s is a shard and %s is not: merge the shards of one sweep, or whole runs over disjoint seeds", shardDir(shards, true), shardDir(shards, false))
		}
		if r.Shard == "" {
			continue
		}
		var i, of int
		if _, err := fmt.Sscanf(r.Shard, "%d/%d", &i, &of); err != nil || i < 1 || i > of {
			return fmt.Errorf("%s: shard %q is not i/n", sh.Dir, r.Shard)
		}
		if n == 0 {
			n = of
		}
		if of != n {
			return fmt.Errorf("%s is shard %s, %s shard %s: shards of one sweep split it the same way", sh.Dir, r.Shard, first.Dir, first.Run.Shard)
		}
		if !slices.Equal(r.Seeds, first.Run.Seeds) {
			return fmt.Errorf("%s swept %s, %s %s: shards of one sweep share its seeds", sh.Dir, r.SeedText(), first.Dir, first.Run.SeedText())
		}
		if dup, ok := seen[i]; ok {
			return fmt.Errorf("%s and %s are both shard %s", dup, sh.Dir, r.Shard)
		}
		seen[i] = sh.Dir
	}
	var missing []string
	for i := 1; i <= n; i++ {
		if _, ok := seen[i]; !ok {
			missing = append(missing, fmt.Sprintf("%d/%d", i, n))
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("shard %s missing: a sweep merged without all its shards would pass what it never ran", strings.Join(missing, ", "))
	}
	return nil
}

// shardDir is the first folder that is (sharded) or is not a shard.
func shardDir(shards []Shard, sharded bool) string {
	for _, sh := range shards {
		if (sh.Run.Shard != "") == sharded {
			return sh.Dir
		}
	}
	return ""
}

// unionSeeds are the seeds of unsharded runs, layer by layer: "1..50,
// 51..100".
func unionSeeds(shards []Shard) []LayerSeeds {
	var out []LayerSeeds
	for _, sh := range shards {
		for _, l := range sh.Run.Seeds {
			i := slices.IndexFunc(out, func(o LayerSeeds) bool { return o.Layer == l.Layer })
			switch {
			case i < 0:
				out = append(out, l)
			case !slices.Contains(strings.Split(out[i].Seeds, ", "), l.Seeds):
				out[i].Seeds += ", " + l.Seeds
			}
		}
	}
	return out
}

// severity orders outcomes, the worst last.
var severity = map[Outcome]int{Skipped: 0, Passed: 1, Inconclusive: 2, NotRun: 3, Failed: 4}

func worse(a, b Outcome) bool { return severity[a] > severity[b] }

// mergeCoverage adds cs to into, store by store and layer by layer.
func mergeCoverage(into, cs []Coverage) []Coverage {
	for _, c := range cs {
		i := slices.IndexFunc(into, func(o Coverage) bool { return o.Store == c.Store && o.Layer == c.Layer })
		if i < 0 {
			c.Cells = slices.Clone(c.Cells)
			c.Outside = maps.Clone(c.Outside)
			into = append(into, c)
			continue
		}
		for _, cell := range c.Cells {
			into[i].Count(cell.Key(), cell.Count)
		}
		for k, v := range c.Outside {
			into[i].Count(k, v)
		}
	}
	return into
}

// mergeReach adds rs to into, store by store.
func mergeReach(into, rs []Reach) []Reach {
	for _, r := range rs {
		i := slices.IndexFunc(into, func(o Reach) bool { return o.Store == r.Store && o.Layer == r.Layer })
		if i < 0 {
			r.Events = slices.Clone(r.Events)
			if r.Guided != nil {
				g := *r.Guided
				g.Growth = slices.Clone(g.Growth)
				g.Corpus = g.Corpus.clone()
				r.Guided = &g
			}
			into = append(into, r)
			continue
		}
		into[i].Rechecked += r.Rechecked
		into[i].Diverged += r.Diverged
		into[i].Guided = mergeGuided(into[i].Guided, r.Guided)
		for _, e := range r.Events {
			j := slices.IndexFunc(into[i].Events, func(o EventCount) bool { return o.Event == e.Event })
			if j < 0 {
				into[i].Events = append(into[i].Events, e)
				continue
			}
			into[i].Events[j].Count += e.Count
		}
	}
	return into
}

// mergeGuided sums two shards' guided sweeps. Their growth is each shard's
// own (a milestone one shard reached may be another's too, and the reports
// do not list them), so the merged sweep's growth is the shards' runs and
// milestones added generation by generation: an upper bound on what the
// whole sweep reached, as the shards ran side by side. Their corpora are
// united: the milestones every shard reached, once (the exact count), and
// every shard's parents, for the next sweep to start from.
func mergeGuided(a, b *Guided) *Guided {
	if a == nil || b == nil {
		if a == nil {
			return b
		}
		return a
	}
	out := Guided{Blind: a.Blind + b.Blind, Children: a.Children + b.Children, Parents: a.Parents + b.Parents,
		Corpus: a.Corpus.union(b.Corpus)}
	for i := range max(len(a.Growth), len(b.Growth)) {
		var p GrowthPoint
		for _, g := range [][]GrowthPoint{a.Growth, b.Growth} {
			if len(g) > 0 {
				q := g[min(i, len(g)-1)]
				p.Runs += q.Runs
				p.Milestones += q.Milestones
			}
		}
		out.Growth = append(out.Growth, p)
	}
	return &out
}

// mergedOver is what merged counts are over: the sweep's seeds, from n
// shards.
func mergedOver(over string, n int) string {
	if over == "" || !shardSuffix.MatchString(over) {
		return over
	}
	return shardSuffix.ReplaceAllString(over, "") + fmt.Sprintf(" (%d shards)", n)
}

// CopyArtifacts copies every artifact of the shards' checks into the folder
// dir the merged report is written to, so that it stands alone (a CI job
// uploads one folder), and points the checks of r at the copies. Two shards'
// artifacts of one name (they name their seeds, so they should not) keep
// both, the later under its shard's folder name.
func CopyArtifacts(dir string, shards []Shard, r *Run) error {
	from := map[string]string{} // a check's key, its shard's folder
	for _, sh := range shards {
		for _, c := range sh.Run.Checks {
			from[c.Store+"\x00"+c.Layer+"\x00"+shardSuffix.ReplaceAllString(c.Name, "")] = sh.Dir
		}
	}
	written := map[string]string{}
	for ci := range r.Checks {
		c := &r.Checks[ci]
		src := from[c.Store+"\x00"+c.Layer+"\x00"+c.Name]
		for ai := range c.Artifacts {
			a := &c.Artifacts[ai]
			dst := a.Path
			if prev, ok := written[dst]; ok && prev != src {
				dst = filepath.Join(filepath.Base(src), a.Path)
			}
			if err := copyFile(filepath.Join(src, a.Path), filepath.Join(dir, dst)); err != nil {
				return fmt.Errorf("artifact %q of %s/%s %s: %w", a.Name, c.Store, c.Layer, c.Name, err)
			}
			written[dst] = src
			a.Path = dst
			if a.Name == "history" && c.Recheck != "" {
				// The re-check names the history where the shard saved it:
				// name the merged report's copy instead.
				c.Recheck = withLastWord(c.Recheck, QuoteWord(filepath.Join(dir, dst)))
			}
		}
	}
	return nil
}

// withLastWord is line, a command a POSIX shell reads (its words as
// QuoteWord writes them), with its last word replaced by word.
func withLastWord(line, word string) string {
	start, quoted := 0, false
	for i := 0; i < len(line); i++ {
		switch {
		case line[i] == '\\' && !quoted:
			i++ // an escaped character: '\'' closes, writes ' and reopens
		case line[i] == '\'':
			quoted = !quoted
		case line[i] == ' ' && !quoted:
			start = i + 1
		}
	}
	return line[:start] + word
}

// QuoteWord is w as one word of a POSIX shell: as it is when it holds
// nothing a shell reads specially, else in single quotes.
func QuoteWord(w string) string {
	if w != "" && strings.Trim(w, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+@%") == "" {
		return w
	}
	return "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
}

func copyFile(src, dst string) error {
	if filepath.Clean(src) == filepath.Clean(dst) {
		return nil
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
