package sim

import (
	"context"
	"fmt"
	"strings"

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
// AFL gives more runs to the inputs that found new coverage). A share of
// every generation stays blind: the next seeds of the range.
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

// Branch is where a guided sweep's child leaves its parent's run: from
// step At on, its choices are drawn from Seed.
type Branch struct {
	At   int   `json:"at"`
	Seed int64 `json:"seed"`
}

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
func (s Schedule) Name() string {
	name := fmt.Sprintf("seed %d", s.Seed)
	for _, b := range s.Branches {
		name += fmt.Sprintf(" > %d@%d", b.Seed, b.At)
	}
	return name
}

// Slug is Name as a folder's name.
func (s Schedule) Slug() string {
	slug := fmt.Sprintf("seed-%d", s.Seed)
	for _, b := range s.Branches {
		slug += fmt.Sprintf("-b%d-%d", b.Seed, b.At)
	}
	return slug
}

const (
	// generation is how many runs a guided sweep plans at once.
	generation = 8
	// blindEvery: one run of every blindEvery of a generation is blind.
	blindEvery = 4
	// childrenEach is how many children a parent gets.
	childrenEach = 4
)

// parent is a run a guided sweep branches from.
type parent struct {
	seed     int64
	branches []Branch
	at       int
	children int
}

// child is parent's next child: its branches, the last one at the
// parent's first new milestone, from a seed derived from the parent's.
func (pa *parent) child() plan {
	last := uint64(pa.seed)
	if n := len(pa.branches); n > 0 {
		last = uint64(pa.branches[n-1].Seed)
	}
	pa.children++
	seed := int64(mix64(last^mix64(uint64(pa.at)<<8|uint64(pa.children))) >> 1)
	b := append(append([]Branch(nil), pa.branches...), Branch{At: pa.at, Seed: seed})
	return plan{seed: pa.seed, branches: b}
}

// GuidedSweep is Sweep spending len(seeds) runs as a guided sweep: blind
// runs of seeds, in order, and children of the runs that reached something
// new. done sees every result in plan order.
func GuidedSweep(ctx context.Context, subj Subject, b Launcher, seeds []int64, p Params, workers int, dir string,
	done func(Result), stop func() bool) (reports.Guided, error) {
	disk := newLazyDisk(p, subj, dir)
	defer disk.close()
	var g reports.Guided
	seen := map[string]bool{}
	var parents []*parent
	nextParent := 0
	blind := 0
	for runs := 0; runs < len(seeds); {
		if ctx.Err() != nil || (stop != nil && stop()) {
			break
		}
		var plans []plan
		for i := 0; i < generation && runs+len(plans) < len(seeds); i++ {
			var pa *parent
			if i%blindEvery != 0 || blind == len(seeds) {
				pa = pick(parents, &nextParent)
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
			plans = append(plans, pa.child())
			g.Children++
		}
		if len(plans) == 0 {
			break
		}
		ran, err := sweepPlans(ctx, subj, b, plans, p, workers, dir, disk, func(res Result) {
			first := -1
			for _, m := range res.Reached {
				if k := m.key(); !seen[k] {
					seen[k] = true
					if first < 0 {
						first = m.Step
					}
				}
			}
			if first >= 0 && res.Failure == nil && !res.Inconclusive {
				parents = append(parents, &parent{seed: res.Schedule.Seed, branches: res.Schedule.Branches, at: first})
				g.Parents++
			}
			done(res)
		}, stop)
		runs += ran
		g.Growth = append(g.Growth, reports.GrowthPoint{Runs: runs, Milestones: len(seen)})
		if err != nil || ran < len(plans) {
			return g, err
		}
	}
	return g, nil
}

// pick is the next parent with children to give, round robin from *next,
// or nil.
func pick(parents []*parent, next *int) *parent {
	for range parents {
		pa := parents[*next%len(parents)]
		*next++
		if pa.children < childrenEach {
			return pa
		}
	}
	return nil
}
