package sim

import (
	"slices"
	"strconv"
	"strings"

	"github.com/storecheck/storecheck/linearizability/model"
	"github.com/storecheck/storecheck/spec"
)

// oracle is the model stepped as the run goes. Operations overlap (each
// process has at most one in flight, paused at its yield points while others
// move), so an operation may take effect at any point between its call and
// its return: the oracle judges each answer by every order the overlap
// allows, never by the order the operations happened to finish in.
//
// It holds configurations: a state the run may be in, and which steps of
// the operations still in flight that state already counts, with the answer
// it assumed for each (placed early, just in time for another operation's
// answer). When an operation returns, each configuration either checks the
// answer it assumed, or places the operation now, after any order of the
// other steps in flight, each with any of its answers. An operation is one
// step, or, where the seed runs it as several statements outside a
// transaction (model.Splitter), its parts in order, each placed at its own
// point. A backend's choices (branches, holes) and indefinite operations (a
// crash, a lost reply) multiply configurations in the same way. An answer
// is right when some configuration allows it.
type oracle struct {
	m        model.Model
	splitter model.Splitter
	// whole are the operations judged whole though they split (Step.Alone).
	whole   map[int]bool
	configs []config
	flying  map[unit]flying
	// later are the steps a configuration may still apply when the store
	// recovers (config.later), as they were called.
	later map[unit]flying
	// limit bounds the configurations; past it the oracle keeps a part of
	// them (cut). A part allows fewer answers than the whole, never more:
	// an answer a part allows is right, and one it refuses is no verdict.
	limit int
	cut   bool
}

// unit is one step of an operation in flight: part part of call call (part
// 0 of an operation of one step).
type unit struct{ call, part int }

type flying struct {
	op  spec.Op // the step's operation (the whole one, or a part)
	now int64
}

type config struct {
	state model.State
	early []early // by unit
	// later are the steps, in call order, of operations whose commit met
	// a failed sync that have not taken effect in this configuration: each
	// may still take effect when the store recovers at a start (see
	// deferred).
	later []unit
	// past, when not nil, are the states this configuration went through
	// since a deferred step took effect in it, the one just before that
	// step among them: what a power cut may take it back to (see
	// recovered). A set, by hash (the order does not matter to a cut).
	past []model.State
}

// then is the configuration that follows c: in state s, with early
// placed, its deferred steps c's, and its past c's with c's state added.
func (c config) then(s model.State, early []early) config {
	d := config{state: s, early: early, later: c.later, past: c.past}
	if c.past != nil {
		d.past = withState(c.past, c.state)
	}
	return d
}

// fragile is c where a deferred step just took effect on state before:
// from now on a power cut may take it back to before, or to any state
// since (recovered).
func (c config) fragile(before model.State) config {
	c.past = withState(c.past, before)
	return c
}

// unionPast is the states of a and of b, in the order of their hashes (a
// when b adds none).
func unionPast(a, b []model.State) []model.State {
	for _, s := range b {
		a = withState(a, s)
	}
	return a
}

// withState is past with s, kept in the order of their hashes.
func withState(past []model.State, s model.State) []model.State {
	h := s.Hash()
	i, found := slices.BinarySearchFunc(past, h, func(p model.State, h uint64) int {
		switch ph := p.Hash(); {
		case ph < h:
			return -1
		case ph > h:
			return 1
		}
		return 0
	})
	if found {
		return past
	}
	return slices.Insert(slices.Clone(past), i, s)
}

// early is a step in flight a configuration already placed, with the
// branch (answer) it assumed.
type early struct {
	u      unit
	branch model.Branch
}

// configLimit is the oracle's limit. A run rarely comes near it: over
// client seeds 1..10000 two runs (seeds 4549 and 6145, their crashes and
// kills leaving a dozen operations indefinite) kept 24,576 and 27,648
// configurations at most, in 4 s and 250 MB.
var configLimit = 50_000

func newOracle(m model.Model) *oracle {
	o := &oracle{m: m, configs: []config{{state: m.Init()}}, flying: map[unit]flying{}, later: map[unit]flying{}, limit: configLimit}
	o.splitter, _ = m.(model.Splitter)
	return o
}

// parts are the steps operation id, op, runs as: one, for an operation
// judged whole.
func (o *oracle) parts(id int, op spec.Op) []spec.Op {
	if o.splitter != nil && !o.whole[id] {
		if p := o.splitter.Parts(op); len(p) > 1 {
			return p
		}
	}
	return []spec.Op{op}
}

// call records that operation id was sent at nowMS; alone, it is judged
// whole (Step.Alone).
func (o *oracle) call(id int, op spec.Op, nowMS int64, alone bool) {
	if alone {
		if o.whole == nil {
			o.whole = map[int]bool{}
		}
		o.whole[id] = true
	}
	for j, p := range o.parts(id, op) {
		o.flying[unit{id, j}] = flying{op: p, now: nowMS}
	}
}

// ret checks operation id's definite answer got: part by part when it
// splits, else whole. When no configuration allows it, it returns the
// branches the model allowed, for the report, and what they were judged
// against: got, or, for an answer judged in parts, the part no
// configuration allows (one identity of a resolve_many: the report
// compares that part to its allowed answers, not the whole to one part's).
func (o *oracle) ret(id int, op spec.Op, got model.Outcome) ([]model.Branch, model.Outcome, bool) {
	n := len(o.parts(id, op))
	var outs []model.Outcome
	if n > 1 {
		if _, o2, ok := o.splitter.Split(op, got); ok && len(o2) == n {
			outs = o2
		}
	}
	var allowed []model.Branch
	judged := got
	configs := o.configs
	var found []config
	if outs == nil {
		// One step: a configuration that placed a part of it already
		// cannot see it whole, unless a part it placed answered what the
		// whole did: the operation took effect there (a true task_is_known
		// is true at the moment of the read that found it).
		if n > 1 {
			var rest []config
			for _, c := range configs {
				if !c.placedAny(id, n) {
					rest = append(rest, c)
					continue
				}
				for j := range n {
					if i := c.find(unit{id, j}); i >= 0 {
						if values, ok := c.early[i].branch.Allows(got); ok {
							found = append(found, c.then(model.Bind(c.state, values),
								slices.DeleteFunc(slices.Clone(c.early), func(e early) bool { return e.u.call == id })))
							break
						}
					}
				}
			}
			configs = rest
		}
		for j := 1; j < n; j++ {
			delete(o.flying, unit{id, j})
		}
		o.flying[unit{id, 0}] = flying{op: op, now: o.flying[unit{id, 0}].now}
		configs, allowed = o.retUnit(configs, unit{id, 0}, got)
		configs = dedupe(append(configs, found...))
	} else {
		for j := range n {
			var bs []model.Branch
			configs, bs = o.retUnit(configs, unit{id, j}, outs[j])
			if len(configs) == 0 {
				// The branches of this part alone: an earlier part's
				// were allowed somewhere, and its answer was one of them.
				allowed, judged = bs, outs[j]
				break
			}
		}
	}
	for j := range n {
		delete(o.flying, unit{id, j})
	}
	if len(configs) == 0 {
		return allowed, judged, false
	}
	o.configs = o.bounded(configs)
	return nil, got, true
}

// retUnit checks one step's answer in every configuration.
func (o *oracle) retUnit(configs []config, u unit, got model.Outcome) ([]config, []model.Branch) {
	f := o.flying[u]
	delete(o.flying, u)
	var next configSet
	var allowed []model.Branch
	for _, c := range configs {
		if i := c.find(u); i >= 0 {
			b := c.early[i].branch
			if values, ok := b.Allows(got); ok {
				next.add(c.then(model.Bind(c.state, values), slices.Delete(slices.Clone(c.early), i, i+1)))
			} else {
				allowed = append(allowed, b)
			}
			continue
		}
		o.placeBefore(c, u, func(s model.State, placed []early) {
			ns, bs := model.Judge(o.m, s, f.op, f.now, got)
			for _, n := range ns {
				next.add(c.then(n, placed))
			}
			allowed = append(allowed, bs...)
		})
	}
	return next.list, allowed
}

// indefinite takes operation id whose answer will never come (its process
// was killed or crashed, its reply lost): each of its steps happened at some
// point of its span, in order, or never (a later one only after an earlier
// one). A configuration that placed steps early keeps them; the others may
// happen now.
func (o *oracle) indefinite(id int, op spec.Op) { o.end(id, op, false) }

// deferred takes operation id whose answer says its commit failed on an
// I/O error after a sync of the run was made to fail (fault.SyncError): it
// is indefinite, and where it did not take effect in its span it may still
// take effect later, when the store recovers at a start (recovered). A
// reader in the same process may well have found it absent in between.
//
// Why: SQLite's WAL commit writes its frames, then syncs the WAL, and only
// then publishes the commit in the wal-index (sqlite3WalFrames in wal.c);
// when the sync fails it answers SQLITE_IOERR_FSYNC and the commit stays
// unpublished, so the process's own reads do not see it. But its frames
// are in the WAL file, and Linux keeps the pages whose writeback failed in
// its cache (marked clean; Documentation/filesystems/vfs.rst on writeback
// errors, the PostgreSQL "fsyncgate" of 2018), so the next open that
// recovers the WAL (walIndexRecover, at the first connection after every
// one closed: a killed process started again) finds a valid commit frame
// and the "failed" commit is there after all. Rebello et al., "Can
// Applications Recover from fsync Failures?" (USENIX ATC 2020), report
// this of SQLite's WAL mode. A later commit overwrites those frames (it
// writes from the last published frame), and a power cut loses them (they
// were never durable), so it may also never come back: both are allowed
// until a read settles it.
func (o *oracle) deferred(id int, op spec.Op) { o.end(id, op, true) }

func (o *oracle) end(id int, op spec.Op, deferred bool) {
	n := len(o.parts(id, op))
	if deferred {
		// Only the last commit that failed can come back: a commit writes
		// its frames from the WAL's last published frame, where the failed
		// one's frames are, so a later failed commit overwrites an earlier
		// one (and the checksums that chain the frames end at its own).
		// Keeping each earlier one too let a recovery apply any subset of
		// them, 2^n configurations for n failed commits.
		clear(o.later)
		for i := range o.configs {
			o.configs[i].later = nil
		}
	}
	var next []config
	for _, c := range o.configs {
		next = append(next, o.finish(c, id, 0, n, deferred)...)
	}
	for j := range n {
		if deferred {
			o.later[unit{id, j}] = o.flying[unit{id, j}]
		}
		delete(o.flying, unit{id, j})
	}
	o.configs = o.bounded(dedupe(next))
}

// finish is every configuration c may become when the steps j.. of
// operation id stop being in flight: each in order happened (placed early
// already, or now) or none of the rest did. Where none did and the
// operation is deferred, its first step that did not may still take effect
// at a recovery (the operation stopped there: its later steps never ran).
func (o *oracle) finish(c config, id, j, n int, deferred bool) []config {
	if j == n {
		return []config{c}
	}
	u := unit{id, j}
	if i := c.find(u); i >= 0 {
		c.early = slices.Delete(slices.Clone(c.early), i, i+1)
		return o.finish(c, id, j+1, n, deferred)
	}
	none := c
	if deferred {
		none.later = append(slices.Clone(c.later), u)
	}
	out := []config{none}
	f := o.flying[u]
	o.placeBefore(c, u, func(s model.State, placed []early) {
		for _, b := range o.m.Step(s, f.op, f.now) {
			d := c.then(b.Next, placed)
			if deferred {
				d = d.fragile(s)
			}
			out = append(out, o.finish(d, id, j+1, n, deferred)...)
		}
	})
	return out
}

// recovered is a start of a backend process on the run's database: where
// the store recovers its WAL, each deferred step a configuration has not
// applied may take effect now, in the order they were called, each with any
// of its answers (the state they were written on is the current one: any
// commit since would have overwritten them). settled says the start
// recovers for good (every process of the run starts afresh: a run of one
// process, or a power cut), so what does not take effect now never will;
// else (another process keeps the WAL's index, so nothing was recovered)
// they stay deferred. The steps in flight are not placed around them: a
// start comes between operations of its process, and a step in flight
// elsewhere may take effect before or after it anyway.
//
// cut says the power went before the start: a configuration in which a
// deferred step took effect may come back in any state it went through
// since (config.past), the one before that step included. A deferred
// step's WAL frames were never durable (the failed sync dropped them), so
// after a cut the durable WAL has a hole where they were, and SQLite's
// recovery, which stops at the first frame that is not valid, drops every
// commit after them too, though each of those was synced and answered ok:
// what stays is what a checkpoint copied into the database file before the
// cut, a prefix of the commits. So a failed sync voids the durability of
// the commits after it until a cut (rule <store>.survives_power_loss).
func (o *oracle) recovered(settled, cut bool) {
	if cut {
		var back configSet
		for _, c := range o.configs {
			if c.past == nil {
				back.add(c)
				continue
			}
			for _, s := range append(slices.Clone(c.past), c.state) {
				back.add(config{state: s, early: c.early, later: c.later})
			}
		}
		o.configs = o.bounded(back.list)
	}
	if len(o.later) == 0 {
		return
	}
	var next configSet
	for _, c := range o.configs {
		for _, r := range o.recover(c, 0, settled) {
			next.add(r)
		}
	}
	o.configs = o.bounded(next.list)
	if settled {
		clear(o.later)
	}
}

// recover is every configuration c may become as its deferred steps from
// the i-th on each take effect or not.
func (o *oracle) recover(c config, i int, settled bool) []config {
	if i == len(c.later) {
		if settled {
			c.later = nil
		}
		return []config{c}
	}
	out := o.recover(c, i+1, settled)
	f := o.later[c.later[i]]
	rest := slices.Delete(slices.Clone(c.later), i, i+1)
	for _, b := range o.m.Step(c.state, f.op, f.now) {
		d := c.then(b.Next, c.early).fragile(c.state)
		d.later = rest
		out = append(out, o.recover(d, i, settled)...)
	}
	return out
}

// placeBefore calls place with each state c may be in just before u takes
// effect: after every order of any of the other steps in flight that may
// come first (an operation's parts in their order), each with any of its
// answers. (Keys cannot prune them: two operations with no key in common
// may still be told apart by a later scan, so their order matters too.)
func (o *oracle) placeBefore(c config, u unit, place func(model.State, []early)) {
	var cands []unit
	for v := range o.flying {
		if v.call != u.call && c.find(v) < 0 {
			cands = append(cands, v)
		}
	}
	slices.SortFunc(cands, func(a, b unit) int {
		if a.call != b.call {
			return a.call - b.call
		}
		return a.part - b.part
	})
	var walk func(s model.State, placed []early, left []unit)
	walk = func(s model.State, placed []early, left []unit) {
		place(s, placed)
		for i, v := range left {
			if v.part > 0 && !placedIn(placed, unit{v.call, v.part - 1}) && o.isFlying(unit{v.call, v.part - 1}) {
				continue // its earlier part has not taken effect yet
			}
			rest := slices.Delete(slices.Clone(left), i, i+1)
			g := o.flying[v]
			for _, b := range o.m.Step(s, g.op, g.now) {
				walk(b.Next, insertEarly(placed, early{u: v, branch: b}), rest)
			}
		}
	}
	walk(c.state, c.early, cands)
}

func (o *oracle) isFlying(u unit) bool { _, ok := o.flying[u]; return ok }

func placedIn(es []early, u unit) bool {
	return slices.ContainsFunc(es, func(e early) bool { return e.u == u })
}

// events are the coverage events op, answered got, reaches from the first
// configuration; an indefinite operation is counted as the model expects it
// to answer.
func (o *oracle) events(op spec.Op, nowMS int64, got model.Outcome, definite bool) []string {
	ev, ok := o.m.(model.Eventful)
	if !ok || len(o.configs) == 0 {
		return nil
	}
	s := o.configs[0].state
	if !definite {
		_, got = model.Expect(o.m, s, op, nowMS)
	}
	return ev.Events(s, op, nowMS, got)
}

// features are the facts of the first configuration's state a guided
// sweep steers by (model.Featured), or none.
func (o *oracle) features(nowMS int64) []string {
	fm, ok := o.m.(model.Featured)
	if !ok || len(o.configs) == 0 {
		return nil
	}
	return fm.Features(o.configs[0].state, nowMS)
}

// first is the state of the oracle's first configuration (nil: none):
// whether an answer changed it (its hash, which every state keeps, so the
// check costs nothing per operation) tells a write from a read.
func (o *oracle) first() model.State {
	if len(o.configs) == 0 {
		return nil
	}
	return o.configs[0].state
}

// rowBudget bounds the configurations by the rows their states hold
// (model.Rowed), as configLimit bounds their count: each state holds its
// own copy of what its writes changed, so 50,000 configurations of a queue
// a hundred batches long (the runtime's big draw) would take gigabytes, and
// the next step builds several of each before they are bounded. With
// 200,000 rows the worst run seen (a race bug's configurations over that
// queue, runtime_lease_claim_outside_tx at seed 1502) peaked at 571 MB, and
// at 22 GB, killed, with the count alone bounding it.
var rowBudget = 200_000

func (o *oracle) bounded(cs []config) []config {
	limit := o.limit
	if len(cs) > 0 {
		if r, ok := cs[0].state.(model.Rowed); ok {
			limit = min(limit, max(rowBudget/max(r.Rows(), 1), 1))
		}
	}
	if len(cs) > limit {
		o.cut = true
		return cs[:limit]
	}
	return cs
}

func (c config) find(u unit) int {
	for i, e := range c.early {
		if e.u == u {
			return i
		}
	}
	return -1
}

func (c config) placedAny(id, n int) bool {
	for j := range n {
		if c.find(unit{id, j}) >= 0 {
			return true
		}
	}
	return false
}

func insertEarly(es []early, e early) []early {
	out := slices.Clone(es)
	i, _ := slices.BinarySearchFunc(out, e.u, func(x early, u unit) int {
		if x.u.call != u.call {
			return x.u.call - u.call
		}
		return x.u.part - u.part
	})
	return slices.Insert(out, i, e)
}

// key is what tells two configurations apart beside their states. An
// early branch that judges its answer by where it was placed (Match, or
// Distinct's ids already taken) is told apart by that place too, its Next:
// two placements of one read, before and after a write, may assume one
// answer and still learn different things from it (get_session's sess-0
// before a bind closed its binding keeps every binding choice, after it
// only the readings that ignore whether a binding is open), and keeping
// either alone would judge later answers by half of what was allowed.
func (c config) key() string {
	if len(c.early) == 0 && len(c.later) == 0 {
		return ""
	}
	var b strings.Builder
	for _, u := range c.later {
		b.WriteString("later " + strconv.Itoa(u.call) + "." + strconv.Itoa(u.part) + ";")
	}
	for _, e := range c.early {
		b.WriteString(strconv.Itoa(e.u.call) + "." + strconv.Itoa(e.u.part))
		b.WriteString("=")
		b.WriteString(e.branch.Describe())
		if placed(e.branch) {
			b.WriteString("@" + strconv.FormatUint(e.branch.Next.Hash(), 16))
		}
		b.WriteString(";")
	}
	return b.String()
}

// placed reports whether b judges an answer by more than its Outcome: by
// the state it was placed in, which its Next carries.
func placed(b model.Branch) bool { return b.Match != nil || len(b.Distinct) > 0 }

// sameEarly reports whether two configurations of one key assumed the same
// early branches: the same Next for those judged by their place (the key
// compares their hashes only).
func sameEarly(a, b []early) bool {
	for i := range a {
		if placed(a[i].branch) && !a[i].branch.Next.Equal(b[i].branch.Next) {
			return false
		}
	}
	return true
}

// configSet gathers configurations without repeats. The index makes each
// addition cost one lookup, not a pass over all kept so far: a crash with
// many operations in flight can leave tens of thousands of configurations.
type configSet struct {
	list  []config
	index map[configID][]int
}

// configID tells configurations apart up to a hash collision; Equal
// settles the rest.
type configID struct {
	hash uint64
	key  string
}

// Two configurations that differ only in their past are one, whose past is
// both pasts: from here on they step alike, and a cut takes the pair back
// to any state either went through, as it takes the one (and keeping them
// apart multiplied the configurations by the pasts after a failed sync).
func (cs *configSet) add(c config) {
	id := configID{c.state.Hash(), c.key()}
	for _, i := range cs.index[id] {
		if cs.list[i].state.Equal(c.state) && sameEarly(cs.list[i].early, c.early) {
			cs.list[i].past = unionPast(cs.list[i].past, c.past)
			return
		}
	}
	if cs.index == nil {
		cs.index = map[configID][]int{}
	}
	cs.index[id] = append(cs.index[id], len(cs.list))
	cs.list = append(cs.list, c)
}

func dedupe(cs []config) []config {
	var out configSet
	for _, c := range cs {
		out.add(c)
	}
	return out.list
}
