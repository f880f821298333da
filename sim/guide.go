package sim

import (
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/storecheck/storecheck/linearizability/model"
	"github.com/storecheck/storecheck/reports"
)

// A guided sweep spends its runs where something is new. Every run counts
// the coverage events it reaches (Result.Coverage: operation x answer
// cells, yield points, faults, the model's rare events) and notes the step
// at which each event's count reached 1, 2, 4, ... 128 (Result.Reached, the
// way AFL buckets hit counts, so that a count crossing a bound is news too).
// A run that reaches a milestone no earlier run of the sweep reached becomes
// a parent: its children replay it up to the step of its first new
// milestone, so they start from the state it found, and from there draw
// their choices afresh from a seed of their own, with one of the swarm's
// choices (a fault's rate, the clock's jumps, the PCT depth, the rivals)
// drawn afresh too (Antithesis branches from the states its runs reached;
// AFL gives more runs to the inputs that found new coverage). The parents
// that were first to reach the states the fewest runs reached have their
// children first, one of each kind of state before a second (pickParent):
// a rare state is the one a blind sweep would not revisit. Half of every
// generation stays blind: the next seeds of the range.
//
// The sweep is the same sweep twice: its runs go in generations of a fixed
// size, whatever the workers, and what a generation decides reads its
// results in plan order. Every child is named by its base seed and its
// branches (Schedule.Branches, each a step and a seed derived from its
// parent's), and its saved schedule replays it.

// Exploration modes: how a sweep picks its runs.
const (
	// ExploreBlind runs the range's seeds, each once (the default).
	ExploreBlind = "blind"
	// ExploreGuided spends the same count of runs, some on the range's
	// seeds and the rest on children of runs that reached something new.
	ExploreGuided = "guided"
)

// ExploreModes are the modes, the default first.
var ExploreModes = []string{ExploreBlind, ExploreGuided}

// ParseExplore checks a mode's name ("" is the default).
func ParseExplore(s string) (string, error) {
	switch s {
	case "":
		return ExploreBlind, nil
	case ExploreBlind, ExploreGuided:
		return s, nil
	}
	return "", fmt.Errorf("explore %q: want one of %s", s, strings.Join(ExploreModes, ", "))
}

// Branch is where a guided sweep's child leaves its parent's run
// (reports.Branch: a corpus in a report names its parents by theirs).
type Branch = reports.Branch

// FeaturePrefix marks a coverage event that is a state feature the model
// names (model.Featured), counted at each answer while the state has it.
const FeaturePrefix = "state: "

// Milestone is an event's count reaching Count (a power of two) at Step.
type Milestone struct {
	Event string
	Count int
	Step  int
}

// maxMilestone is the largest count noted: past it, more of the same event
// is no news.
const maxMilestone = 128

func (m Milestone) key() string { return fmt.Sprintf("%s x%d", m.Event, m.Count) }

// Name names a run in reports: its seed, and where it branched.
func (s Schedule) Name() string { return reports.RunName(s.Seed, s.Branches) }

// Slug is Name as a folder's name.
func (s Schedule) Slug() string {
	slug := fmt.Sprintf("seed-%d", s.Seed)
	for _, b := range s.Branches {
		switch {
		case b.Flip:
			slug += fmt.Sprintf("-f%d", b.At)
		case b.Sched:
			slug += fmt.Sprintf("-s%d-%d", b.Seed, b.At)
		default:
			slug += fmt.Sprintf("-b%d-%d", b.Seed, b.At)
		}
		if b.Tail > 0 {
			slug += fmt.Sprintf("-t%d", b.Tail)
		}
	}
	return slug
}

const (
	// generation is how many runs a guided sweep plans at once. The first
	// is blind (no run has reached anything yet) and finds what a blind
	// sweep finds in its first 8 runs; first generations of 2 and 4 runs,
	// tried, found the bugs a blind sweep finds at its 6th or 7th run at
	// its 9th to 17th instead (docs/guided.md): a fresh seed finds a
	// shallow bug sooner than a child does.
	generation = 8
	// blindEvery: one run of every blindEvery of a generation is blind.
	// Half: with a quarter, the bugs a fresh seed finds came at 1.5 to 2
	// times the blind sweep's runs (docs/guided.md); with half, at about
	// 1.2 times, and it still found the deep bug blind misses.
	blindEvery = 2
	// childrenEach is how many children a parent gets.
	childrenEach = 4
)

// parent is a run a guided sweep branches from: where it reached its
// first new milestone and its last (no later than where its clients
// stopped issuing), and how many children it has had.
type parent struct {
	reports.CorpusParent
	// children is how many children it has had, in this sweep and in
	// the sweeps whose corpus this one started from (their seeds differ
	// by it); room is how many more it may have in this one.
	children, room int
	// favored is its rank among the corpus's favored parents (1 first; 0:
	// not one), and replayed whether this sweep has replayed it whole.
	favored  int
	replayed bool
}

// newParent is the run of res as a parent: its first and last new
// milestone at steps first and last.
func newParent(res Result, first, last int, news []string) *parent {
	issued := res.Issued
	if issued <= 0 {
		issued = last
	}
	pa := &parent{CorpusParent: reports.CorpusParent{Seed: res.Schedule.Seed, Branches: res.Schedule.Branches,
		First: min(first, issued), Last: min(last, issued), Issued: issued, New: news}, room: childrenEach}
	pa.Pairs = pairSteps(res.Reached, news)
	return pa
}

// maxPairs is how many of a parent's new interleavings its children swap:
// the first ones it reached.
const maxPairs = 4

// pairSteps are the steps at which reached reached the interleavings of
// news (InterleavePrefix), the first maxPairs of them, in order.
func pairSteps(reached []Milestone, news []string) []int {
	var out []int
	for _, m := range reached {
		if len(out) == maxPairs {
			break
		}
		if strings.HasPrefix(m.Event, InterleavePrefix) && slices.Contains(news, m.key()) && !slices.Contains(out, m.Step) {
			out = append(out, m.Step)
		}
	}
	return out
}

// focus is what pa is a parent for: the family of the rarest of its new
// milestones of the store's state (a state feature or a size, its name
// without its bucket and count: "state: queued batches"), how many runs
// reached that one, and how many reached the rarest of any of its new
// milestones (a parent that names none: more than any run). A state rarely
// reached is the depth a blind sweep seldom gets to; a fault at a yield
// point rarely reached is mostly one of the many pairs there are.
func (pa *parent) focus(hits map[string]int) (family string, state, any int) {
	state, any = math.MaxInt, math.MaxInt
	for _, m := range pa.New {
		n := hits[m]
		any = min(any, n)
		if n < state && (strings.HasPrefix(m, FeaturePrefix) || strings.HasPrefix(m, model.SizePrefix) || strings.HasPrefix(m, InterleavePrefix)) {
			state, family = n, familyOf(m)
		}
	}
	return family, state, any
}

// familyOf is a state milestone's event without its count and, for a
// feature, its bucket ("state: queued batches: 64-127 x128" is "state:
// queued batches").
func familyOf(m string) string {
	if strings.HasPrefix(m, InterleavePrefix) {
		// One family: the pairs are many, and each is one race to try.
		return InterleavePrefix
	}
	if i := strings.LastIndex(m, " x"); i >= 0 {
		m = m[:i]
	}
	if strings.HasPrefix(m, FeaturePrefix) {
		if i := strings.LastIndex(m, ": "); i > len(FeaturePrefix) {
			m = m[:i]
		}
	}
	return m
}

// child is parent's next child: its branches, the last one from a seed
// derived from the parent's and from salt (the sweep's first seed, so
// that sweeps of other ranges from one corpus differ), at the parent's
// first new milestone or, every
// other child, at its last (the deepest state it found); every other pair
// of children, and any child branching where its parent's clients stopped,
// issues tail more operations than its parent (a longer run, for the
// states a count past a bound needs).
//
// A favored parent of the corpus's is first replayed whole, its tail
// after it: the run reaches every state the parent reached and goes on.
// A parent that reached new interleavings (Pairs) has every other child
// change only who moves at one of them: first the two swap (Flip), then
// the scheduler is drawn afresh there (Sched), so that a write that landed
// between another's check and its write lands before the check or after
// the write.
func (pa *parent) child(tail int, salt int64) plan {
	last := uint64(pa.Seed)
	if n := len(pa.Branches); n > 0 {
		last = uint64(pa.Branches[n-1].Seed)
	}
	derive := func(at, n int) int64 {
		return int64(mix64(last^mix64(uint64(at)<<8|uint64(n))^mix64(uint64(salt))) >> 1)
	}
	branch := func(b Branch) plan {
		return plan{seed: pa.Seed, branches: append(append([]Branch(nil), pa.Branches...), b)}
	}
	pa.room--
	if pa.favored > 0 && !pa.replayed {
		pa.replayed = true
		pa.children++
		return branch(Branch{At: pa.Issued, Seed: derive(pa.Issued, pa.children), Tail: tail})
	}
	if len(pa.Pairs) > 0 && pa.children%2 == 0 {
		k := pa.Swaps
		pa.Swaps++
		pa.children++
		at := pa.Pairs[k%len(pa.Pairs)]
		if k < len(pa.Pairs) {
			return branch(Branch{At: at, Flip: true})
		}
		return branch(Branch{At: at, Seed: derive(at, k), Sched: true})
	}
	n := pa.children - pa.Swaps
	pa.children++
	at := pa.First
	if n%2 == 1 {
		at = pa.Last
	}
	b := Branch{At: at, Seed: derive(at, pa.children)}
	if n%4 >= 2 || at >= pa.Issued {
		b.Tail = tail
	}
	return branch(b)
}

// GuidedSweep is Sweep spending len(seeds) runs as a guided sweep: blind
// runs of seeds, in order, and children of the runs that reached something
// new. from, when not nil, is the corpus of earlier sweeps (or of a sweep's
// shards, merged): its milestones count as reached and its parents have
// children from the first generation on. done sees every result in plan
// order. The account says what the runs were spent on, with the corpus the
// sweep ends with (from's, and what it added).
func GuidedSweep(ctx context.Context, subj Subject, b Launcher, seeds []int64, p Params, workers int, dir string,
	from *reports.Corpus, done func(Result), stop func() bool) (reports.Guided, error) {
	disk := newLazyDisk(p, subj, dir)
	defer disk.close()
	tail := max(p.withDefaults().Steps/4, 1)
	var g reports.Guided
	seen := map[string]bool{}
	hits, given := map[string]int{}, map[string]int{}
	var parents []*parent
	if from != nil {
		for _, m := range from.Milestones {
			seen[m] = true
		}
		maps.Copy(hits, from.Hits)
		for i, cp := range from.Parents {
			pa := &parent{CorpusParent: cp, children: cp.Children, room: childrenEach}
			if i < from.Favored {
				// Its whole replay is one child more.
				pa.favored, pa.room = i+1, childrenEach+1
			}
			parents = append(parents, pa)
		}
	}
	var salt int64
	if len(seeds) > 0 {
		salt = seeds[0]
	}
	blind := 0
	var err error
	for runs := 0; runs < len(seeds); {
		if ctx.Err() != nil || (stop != nil && stop()) {
			break
		}
		var plans []plan
		// While favored parents are to be replayed, a quarter of a
		// generation is blind; then half.
		every, at := blindEvery, 0
		if unreplayed(parents) {
			every, at = 4, 3
		}
		for i := 0; i < generation && runs+len(plans) < len(seeds); i++ {
			var pa *parent
			if i%every != at || blind == len(seeds) {
				pa = pickParent(parents, hits, given)
			}
			if pa == nil {
				if blind == len(seeds) {
					break
				}
				plans = append(plans, plan{seed: seeds[blind]})
				blind++
				g.Blind++
				continue
			}
			plans = append(plans, pa.child(tail, salt))
			g.Children++
		}
		if len(plans) == 0 {
			break
		}
		ran, serr := sweepPlans(ctx, subj, b, plans, p, workers, dir, disk, func(res Result) {
			first, last := -1, -1
			var news []string
			for _, m := range res.Reached {
				k := m.key()
				hits[k]++
				if !seen[k] {
					seen[k] = true
					news = append(news, k)
					if first < 0 {
						first = m.Step
					}
					last = m.Step
				}
			}
			if first >= 0 && res.Failure == nil && !res.Inconclusive {
				parents = append(parents, newParent(res, first, last, news))
				g.Parents++
			}
			done(res)
		}, stop)
		runs += ran
		g.Growth = append(g.Growth, reports.GrowthPoint{Runs: runs, Milestones: len(seen)})
		if err = serr; err != nil || ran < len(plans) {
			break
		}
	}
	g.Corpus = corpusOf(seen, hits, parents)
	g.Corpus.Made = p.Shape()
	if from != nil {
		g.Corpus.Favored = from.Favored
	}
	return g, err
}

// unreplayed reports whether a favored parent is still to be replayed.
func unreplayed(parents []*parent) bool {
	return slices.ContainsFunc(parents, func(pa *parent) bool { return pa.favored > 0 && !pa.replayed && pa.room > 0 })
}

// corpusOf is what a sweep reached: its milestones, sorted, how many runs
// reached each, and its parents in the order they became parents.
func corpusOf(seen map[string]bool, hits map[string]int, parents []*parent) *reports.Corpus {
	c := &reports.Corpus{Milestones: slices.Sorted(maps.Keys(seen)), Parents: []reports.CorpusParent{}, Hits: hits}
	for _, pa := range parents {
		cp := pa.CorpusParent
		cp.Children = pa.children
		c.Parents = append(c.Parents, cp)
	}
	return c
}

// pickParent is the parent with children to give, or nil: of the state
// families (focus) that have had the fewest children, the parent whose
// rarest state milestone is the rarest, then whose rarest milestone of any
// is, then the earliest; parents of no state family last. given counts the
// children each family has had, so that the deepest parent of every family
// has children before a second of any (FairFuzz, ASE 2018, steers to rare
// branches; the families keep one kind of depth from taking the budget).
func pickParent(parents []*parent, hits map[string]int, given map[string]int) *parent {
	// The favored parents' replays first, in their order.
	for _, pa := range parents {
		if pa.favored > 0 && !pa.replayed && pa.room > 0 {
			return pa
		}
	}
	var best *parent
	var bestKey [4]int
	bestFamily := ""
	for _, pa := range parents {
		if pa.room <= 0 {
			continue
		}
		family, state, any := pa.focus(hits)
		stateless := 0
		if family == "" {
			stateless = 1
		}
		key := [4]int{stateless, given[family], state, any}
		if best == nil || slices.Compare(key[:], bestKey[:]) < 0 {
			best, bestKey, bestFamily = pa, key, family
		}
	}
	if best != nil {
		given[bestFamily]++
	}
	return best
}
