package sim

import (
	"math/rand/v2"
	"slices"
)

// scheduler decides which process moves next. With depth d > 0 it is PCT
// (Burckhardt, Kothari, Musuvathi, Nagarakatte, ASPLOS 2010): every thread
// gets a random priority, the highest-priority thread always runs, and at
// d-1 change points, drawn uniformly over the run's k decisions, the thread
// that runs drops below every other; a bug that needs d ordering
// constraints is then found by a run with probability at least
// 1/(n·k^(d-1)) for n threads. Here a thread is one operation: when a
// process's operation ends, the next one it issues is a new thread with a
// fresh priority. With depth 0 every decision is uniform.
type scheduler struct {
	r      *rand.Rand
	depth  int
	prio   []float64
	busy   []bool
	change []int // the decisions at which the running thread is demoted
	demote int   // how many change points have passed
	n      int   // decisions so far
	// flipping: the thread the next decision picks is held instead
	// (flip); held threads move only when no other can, until their
	// operation or another thread's ends.
	flipping bool
	held     []bool
}

// flip holds the thread the next decision would move: another moves
// first (a guided sweep's child swapping the two of an interleaving).
func (s *scheduler) flip() { s.flipping = true }

func newScheduler(r *rand.Rand, procs, depth, k int) *scheduler {
	s := &scheduler{r: r, depth: depth, prio: make([]float64, procs), busy: make([]bool, procs)}
	for i := range s.prio {
		s.prio[i] = s.fresh()
	}
	for range max(depth-1, 0) {
		s.change = append(s.change, r.IntN(max(k, 1)))
	}
	slices.Sort(s.change)
	return s
}

// fresh is a new thread's priority: above every demoted one.
func (s *scheduler) fresh() float64 { return float64(s.depth) + s.r.Float64() }

// sync tells the scheduler which processes have an operation in flight: a
// process whose operation ended will run a new thread.
func (s *scheduler) sync(busy []bool) {
	ended := false
	for i, b := range busy {
		if s.busy[i] && !b {
			s.prio[i] = s.fresh()
			ended = true
		}
		s.busy[i] = b
	}
	if ended {
		s.held = nil
	}
}

// pick is the thread that moves at this decision, among the enabled ones
// (nil: every one), past the held ones while another can move.
func (s *scheduler) pick(enabled []bool) int {
	top := s.choose(enabled)
	if s.flipping {
		s.flipping = false
		s.held = make([]bool, len(s.prio))
		s.held[top] = true
	}
	if s.held == nil || !s.held[top] {
		return top
	}
	rest := make([]bool, len(s.prio))
	any := false
	for i := range rest {
		rest[i] = (enabled == nil || enabled[i]) && !s.held[i]
		any = any || rest[i]
	}
	if !any {
		return top
	}
	if s.depth == 0 {
		var on []int
		for i, ok := range rest {
			if ok {
				on = append(on, i)
			}
		}
		return on[s.r.IntN(len(on))]
	}
	return s.highest(rest)
}

// choose is the thread the strategy moves at this decision, among the
// enabled ones (nil: every one; PCT runs the enabled thread of highest
// priority).
func (s *scheduler) choose(enabled []bool) int {
	defer func() { s.n++ }()
	if s.depth == 0 {
		if enabled == nil {
			return s.r.IntN(len(s.prio))
		}
		var on []int
		for i, ok := range enabled {
			if ok {
				on = append(on, i)
			}
		}
		return on[s.r.IntN(len(on))]
	}
	top := s.highest(enabled)
	for s.demote < len(s.change) && s.change[s.demote] <= s.n {
		s.demote++
		s.prio[top] = float64(s.demote) - 1 + s.r.Float64()/2
		top = s.highest(enabled)
	}
	return top
}

func (s *scheduler) highest(enabled []bool) int {
	top := -1
	for i, p := range s.prio {
		if (enabled == nil || enabled[i]) && (top < 0 || p > s.prio[top]) {
			top = i
		}
	}
	return top
}
