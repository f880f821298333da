package sim

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"math/big"
	"math/bits"
	"slices"
	"strings"

	"github.com/storecheck/storecheck/fault/lossyfs"
	"github.com/storecheck/storecheck/fault/sqlitewal"
)

// Crash-state classes: the exhaustive mode's reduction, in the spirit of
// ALICE's (Pillai et al., OSDI 2014) and CrashMonkey's (Mohan et al., OSDI
// 2018): two crash states that leave files no reader can tell apart are
// one class, and one representative of each class is run. Every class is
// computed from the files' bytes (lossyfs.FileLog: each file's durable
// image and its unsynced changes), in memory, with no run:
//
//   - a file's unsynced writes fall into regions (writes whose bytes
//     overlap, transitively; a file with a truncation is one region), and
//     each region's crash states (each write's sectors kept in any subset:
//     lost, kept whole, or torn) are told apart by the bytes they leave
//     there and how far they grew the file: a sector whose new bytes are
//     the ones under it has a fate that changes nothing. A region's
//     states are enumerated at sector granularity, every subset, up to
//     regionCap of them; past that, a torn write keeps a prefix of its
//     sectors (as a disk that writes a write's sectors in order), which
//     the cut says (Prefix).
//   - SQLite's WAL (a file ending in "-wal") is read as SQLite's recovery
//     reads it (package sqlitewal: the header, then frames in order while
//     each frame's salts match the header and its cumulative checksum
//     holds, up to the last valid commit frame; sqlite.org/
//     fileformat2.html, section 4): two WAL images with the same header
//     and the same frames taken are one class, whatever follows. A
//     class's representative is chosen adversarially, keeping the most
//     sectors (the later frames kept after the first broken one), so the
//     run also tests that SQLite does not read past it.
//   - the main database's pages that the WAL's frames taken hold are not
//     read from the database file (a reader takes them from the WAL, and
//     a checkpoint writes them whole over it: sqlite.org/wal.html, "How
//     WAL Works"): a region inside them is one class, whatever it holds.
//   - the main database's pages that a synced hot rollback journal writes
//     back, and those past the size it truncates the database to, are not
//     read either (the rollback at the next open restores them:
//     sqlite.org/atomiccommit.html, section 4 "Rollback"; package
//     sqlitewal reads the journal as pager_playback does): one class. Only
//     a journal with nothing unsynced and whose name no entry op not yet
//     durable names.
//   - any other file (a backend's side files, a journal with writes
//     unsynced) gets no SQLite-based reduction: byte equality only.
//
// Not reduced: the entry ops not yet durable (each prefix kept is a class
// of its own).

// regionCap is the most crash states one region's enumeration runs
// through at sector granularity (every subset of every write's sectors).
const regionCap = 1 << 16

// classWrite is an unsynced write (or truncation) a cut gives a fate to.
type classWrite struct {
	file string
	n    int
	c    lossyfs.Change
}

// bits is how many sectors the write's fate chooses among (a truncation:
// one, kept or not).
func (w classWrite) bits() int {
	if w.c.Trunc {
		return 1
	}
	return max(w.c.Sectors(), 0)
}

// variant is one class of a dimension's crash states: how many states it
// has, and the representative (masks, one a write of the dimension: bit
// s set, sector s kept).
type variant struct {
	count  *big.Int
	masks  []uint64
	weight int // sectors the representative keeps
	// buf and extent, for a region: the bytes the representative leaves
	// there (from the region's first, or the file's whole image) and the
	// furthest byte it wrote (-1: none).
	buf    []byte
	extent int64
	// wal, for a WAL's classes: what recovery takes.
	wal *sqlitewal.Read
	// base: it holds the state that keeps nothing.
	base bool
}

// dim is a set of writes whose crash states are told apart together: a
// region, or a WAL file's regions.
type dim struct {
	file   string
	writes []classWrite
	vars   []variant
	// lo, hi: a region's bytes; whole: it is the whole file.
	lo, hi int64
	whole  bool
	prefix bool
}

// total is how many crash states the dimension has.
func (d dim) total() *big.Int {
	t := new(big.Int)
	for _, v := range d.vars {
		t.Add(t, v.count)
	}
	return t
}

// options are the masks write w may have: every subset of its sectors,
// or (prefix) every prefix.
func options(w classWrite, prefix bool) []uint64 {
	b := w.bits()
	if prefix {
		out := make([]uint64, b+1)
		for k := range out {
			out[k] = 1<<k - 1
		}
		return out
	}
	out := make([]uint64, 1<<b)
	for m := range out {
		out[m] = uint64(m)
	}
	return out
}

var errIntractable = errors.New("too many crash states to enumerate")

// regionDim enumerates the crash states of one region of file lg.
func regionDim(file string, lg lossyfs.FileLog, ws []classWrite, lo, hi int64, whole bool) (dim, error) {
	d := dim{file: file, writes: ws, lo: lo, hi: hi, whole: whole}
	combos := 1.0
	for _, w := range ws {
		combos *= float64(int64(1) << w.bits())
	}
	if combos > regionCap {
		d.prefix = true
		combos = 1
		for _, w := range ws {
			combos *= float64(w.bits() + 1)
		}
		if combos > regionCap {
			return d, fmt.Errorf("%s: a region of %d writes: %w", file, len(ws), errIntractable)
		}
	}
	opts := make([][]uint64, len(ws))
	for i, w := range ws {
		opts[i] = options(w, d.prefix)
	}
	index := map[[32]byte]int{}
	masks := make([]uint64, len(ws))
	var walk func(i int)
	walk = func(i int) {
		if i < len(ws) {
			for _, m := range opts[i] {
				masks[i] = m
				walk(i + 1)
			}
			return
		}
		buf, extent := applyRegion(lg.Durable, ws, masks, lo, hi, whole)
		key := regionKey(buf, extent)
		weight := 0
		base := true
		for _, m := range masks {
			weight += bits.OnesCount64(m)
			base = base && m == 0
		}
		j, ok := index[key]
		if !ok {
			index[key] = len(d.vars)
			d.vars = append(d.vars, variant{count: big.NewInt(1), masks: slices.Clone(masks), weight: weight, buf: buf, extent: extent, base: base})
			return
		}
		v := &d.vars[j]
		v.count.Add(v.count, big.NewInt(1))
		v.base = v.base || base
		if weight > v.weight {
			v.masks, v.weight = slices.Clone(masks), weight
		}
	}
	walk(0)
	sortVars(d.vars)
	return d, nil
}

// sortVars puts the class of the state that keeps nothing first, then the
// others by the sectors their representatives keep, fewest first (the
// order the old bounded enumeration checked states in).
func sortVars(vs []variant) {
	slices.SortStableFunc(vs, func(a, b variant) int {
		if a.base != b.base {
			if a.base {
				return -1
			}
			return 1
		}
		return a.weight - b.weight
	})
}

func regionKey(buf []byte, extent int64) [32]byte {
	h := sha256.New()
	h.Write(buf)
	binary.Write(h, binary.BigEndian, extent)
	var k [32]byte
	h.Sum(k[:0])
	return k
}

// applyRegion is what the writes of a region leave there when each keeps
// the sectors its mask names: the bytes from lo to hi (whole: the file's
// image) and the furthest byte written (-1: none).
func applyRegion(durable []byte, ws []classWrite, masks []uint64, lo, hi int64, whole bool) ([]byte, int64) {
	var buf []byte
	if whole {
		buf = slices.Clone(durable)
		lo = 0
	} else {
		buf = make([]byte, hi-lo)
		if lo < int64(len(durable)) {
			copy(buf, durable[lo:min(hi, int64(len(durable)))])
		}
	}
	extent := int64(-1)
	for i, w := range ws {
		m := masks[i]
		if m == 0 {
			continue
		}
		if w.c.Trunc {
			buf = resizeBytes(buf, w.c.Off)
			continue
		}
		first := w.c.Off / lossyfs.SectorSize
		end := w.c.Off + int64(len(w.c.Data))
		for s := 0; s < w.bits(); s++ {
			if m&(1<<s) == 0 {
				continue
			}
			a := max((first+int64(s))*lossyfs.SectorSize, w.c.Off)
			b := min((first+int64(s)+1)*lossyfs.SectorSize, end)
			if a >= b {
				continue
			}
			if whole && b > int64(len(buf)) {
				buf = resizeBytes(buf, b)
			}
			copy(buf[a-lo:], w.c.Data[a-w.c.Off:b-w.c.Off])
			extent = max(extent, b)
		}
	}
	return buf, extent
}

func resizeBytes(b []byte, n int64) []byte {
	if n <= int64(len(b)) {
		return b[:n]
	}
	return append(b, make([]byte, n-int64(len(b)))...)
}

// regionsOf splits the fated writes of one file into regions.
func regionsOf(file string, lg lossyfs.FileLog, ws []classWrite) ([]dim, error) {
	if slices.ContainsFunc(ws, func(w classWrite) bool { return w.c.Trunc }) {
		d, err := regionDim(file, lg, ws, 0, 0, true)
		return []dim{d}, err
	}
	order := slices.Clone(ws)
	slices.SortStableFunc(order, func(a, b classWrite) int { return int(a.c.Off - b.c.Off) })
	var groups [][]classWrite
	var his []int64
	for _, w := range order {
		end := w.c.Off + int64(len(w.c.Data))
		if n := len(groups); n > 0 && w.c.Off < his[n-1] {
			groups[n-1] = append(groups[n-1], w)
			his[n-1] = max(his[n-1], end)
			continue
		}
		groups = append(groups, []classWrite{w})
		his = append(his, end)
	}
	var out []dim
	for i, g := range groups {
		// The writes in the order they were made, as a cut applies them.
		slices.SortStableFunc(g, func(a, b classWrite) int { return a.n - b.n })
		d, err := regionDim(file, lg, g, g[0].c.Off, his[i], false)
		if err != nil {
			return nil, err
		}
		out = append(out, d)
	}
	return out, nil
}

// errNoReduction: the WAL's regions do not fall each in one frame (or its
// header), or a frame's validity hangs on another's: no SQLite-based
// reduction, byte equality only.
var errNoReduction = errors.New("no WAL reduction")

// walReduction is walDim (a test swaps a wrong one in, to show the check
// of the classes catches it).
var walReduction = walDim

// walDim combines a WAL's regions into one dimension whose classes are
// what recovery takes.
func walDim(file string, lg lossyfs.FileLog, regs []dim) (dim, error) {
	out := dim{file: file}
	for _, r := range regs {
		if r.whole || r.prefix {
			return out, errNoReduction
		}
		out.writes = append(out.writes, r.writes...)
	}
	var head, rest []int
	for i, r := range regs {
		if r.lo < sqlitewal.HeaderSize {
			if r.hi > sqlitewal.HeaderSize {
				return out, errNoReduction
			}
			head = append(head, i)
		} else {
			rest = append(rest, i)
		}
	}
	classes := map[[32]byte]*walState{}
	var keys [][32]byte
	add := func(s *walState) {
		k := s.read.Key
		if c, ok := classes[k]; ok {
			c.count.Add(c.count, s.count)
			if s.weight > c.weight {
				c.choice, c.weight = s.choice, s.weight
			}
			return
		}
		classes[k] = s
		keys = append(keys, k)
	}
	var err error
	product(regs, head, func(choice map[int]int, count *big.Int, weight int) bool {
		hb := make([]byte, sqlitewal.HeaderSize)
		copy(hb, lg.Durable)
		for _, i := range head {
			v := regs[i].vars[choice[i]]
			copy(hb[regs[i].lo:], v.buf)
		}
		h, ok := sqlitewal.ParseHeader(hb)
		s := &walState{count: count, choice: choice, weight: weight}
		if !ok {
			// SQLite ignores the WAL: nothing after the header matters.
			s.read = sqlitewal.Recover(hb)
			s.absorb(regs, rest)
			add(s)
			return true
		}
		var states []*walState
		states, err = walFrames(lg, regs, rest, h, hb, s)
		if err != nil {
			return false
		}
		for _, s := range states {
			add(s)
		}
		return true
	})
	if err != nil {
		return out, err
	}
	for _, k := range keys {
		s := classes[k]
		v := variant{count: s.count, weight: s.weight, wal: &s.read}
		// The masks follow out.writes: the regions in order.
		for i := range regs {
			rv := regs[i].vars[s.choice[i]]
			v.masks = append(v.masks, rv.masks...)
		}
		out.vars = append(out.vars, v)
	}
	// The class of the state that keeps nothing first, then by the frames
	// recovery takes, fewest first.
	lost := sqlitewal.Recover(applyAll(lg, regs, nil)).Key
	for i := range out.vars {
		out.vars[i].base = out.vars[i].wal.Key == lost
	}
	slices.SortStableFunc(out.vars, func(a, b variant) int {
		if a.base != b.base {
			if a.base {
				return -1
			}
			return 1
		}
		return a.wal.Frames - b.wal.Frames
	})
	return out, nil
}

// applyAll is the file's image with each region's variant choice[i] (nil:
// the durable image).
func applyAll(lg lossyfs.FileLog, regs []dim, choice map[int]int) []byte {
	img := slices.Clone(lg.Durable)
	for i, r := range regs {
		j, ok := choice[i]
		if !ok {
			continue
		}
		v := r.vars[j]
		if v.extent > int64(len(img)) {
			img = resizeBytes(img, v.extent)
		}
		n := min(int64(len(v.buf)), int64(len(img))-r.lo)
		copy(img[r.lo:], v.buf[:max(n, 0)])
	}
	return img
}

// walState is a path of the WAL's enumeration: the states it stands for
// and its representative (a variant of each region decided so far), and
// what recovery takes of it so far.
type walState struct {
	count  *big.Int
	choice map[int]int
	weight int
	read   sqlitewal.Read
	// live: every frame so far was valid; sum ends their chain, seen is
	// the image through the last of them.
	live bool
	sum  [2]uint32
	seen []byte
	n    int
}

// absorb gives the regions of idx, which nothing recovery takes depends
// on, every state: the count multiplied, the representative keeping the
// most (the adversarial choice: later frames kept).
func (s *walState) absorb(regs []dim, idx []int) {
	s.choice = maps2(s.choice)
	for _, i := range idx {
		s.count = new(big.Int).Mul(s.count, regs[i].total())
		best := 0
		for j, v := range regs[i].vars {
			if v.weight > regs[i].vars[best].weight {
				best = j
			}
		}
		s.choice[i] = best
		s.weight += regs[i].vars[best].weight
	}
}

func maps2(m map[int]int) map[int]int {
	out := make(map[int]int, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// walFrames walks the frames of a WAL whose header h (bytes hb) is valid.
func walFrames(lg lossyfs.FileLog, regs []dim, rest []int, h sqlitewal.Header, hb []byte, s0 *walState) ([]*walState, error) {
	fs := int64(h.FrameSize())
	byFrame := map[int][]int{}
	end := int64(len(lg.Durable))
	for _, i := range rest {
		r := regs[i]
		n := int((r.lo-sqlitewal.HeaderSize)/fs) + 1
		if int((r.hi-1-sqlitewal.HeaderSize)/fs)+1 != n {
			return nil, errNoReduction
		}
		byFrame[n] = append(byFrame[n], i)
		end = max(end, r.hi)
	}
	frames := 0
	if end > sqlitewal.HeaderSize {
		frames = int((end - sqlitewal.HeaderSize + fs - 1) / fs)
	}
	s0.live, s0.sum, s0.seen = true, h.Sum, hb
	s0.read = sqlitewal.Read{OK: true, Header: h}
	s0.read.Key = sha256.Sum256(hb)
	live := []*walState{s0}
	var done []*walState
	for n := 1; n <= frames && len(live) > 0; n++ {
		at := h.FrameAt(n)
		next := map[string]*walState{}
		var order []string
		broken := map[[32]byte]*walState{}
		var border [][32]byte
		for _, s := range live {
			var err error
			product(regs, byFrame[n], func(choice map[int]int, count *big.Int, weight int) bool {
				fr := make([]byte, fs)
				if at < int64(len(lg.Durable)) {
					copy(fr, lg.Durable[at:min(at+fs, int64(len(lg.Durable)))])
				}
				whole := at+fs <= int64(len(lg.Durable))
				for _, i := range byFrame[n] {
					v := regs[i].vars[choice[i]]
					copy(fr[regs[i].lo-at:], v.buf)
					whole = whole || v.extent >= at+fs
				}
				f := h.CheckFrame(s.sum, fr)
				if f.Valid && !whole {
					// Whether the file reaches the frame's end hangs on
					// later frames: not reduced.
					err = errNoReduction
					return false
				}
				c := maps2(s.choice)
				for k, v := range choice {
					c[k] = v
				}
				ns := &walState{count: new(big.Int).Mul(s.count, count), choice: c, weight: s.weight + weight, read: s.read}
				if !f.Valid {
					ns.read.Key = s.read.Key
					if b, ok := broken[ns.read.Key]; ok {
						b.count.Add(b.count, ns.count)
						if ns.weight > b.weight {
							b.choice, b.weight = ns.choice, ns.weight
						}
						return true
					}
					broken[ns.read.Key] = ns
					border = append(border, ns.read.Key)
					return true
				}
				ns.live, ns.sum, ns.n = true, f.Sum, n
				ns.seen = append(slices.Clone(s.seen), fr...)
				ns.read.Pages = append(slices.Clone(s.read.Pages), f.Page)
				if f.Commit != 0 {
					ns.read.Frames = n
					ns.read.Key = sha256.Sum256(ns.seen)
				}
				k := fmt.Sprintf("%x", sha256.Sum256(ns.seen))
				if o, ok := next[k]; ok {
					o.count.Add(o.count, ns.count)
					if ns.weight > o.weight {
						o.choice, o.weight = ns.choice, ns.weight
					}
					return true
				}
				next[k] = ns
				order = append(order, k)
				return true
			})
			if err != nil {
				return nil, err
			}
		}
		later := []int{}
		for m := n + 1; m <= frames; m++ {
			later = append(later, byFrame[m]...)
		}
		for _, k := range border {
			b := broken[k]
			b.absorb(regs, later)
			done = append(done, b)
		}
		live = live[:0]
		for _, k := range order {
			live = append(live, next[k])
		}
	}
	for _, s := range live {
		// The pages of frames past the last commit are not taken.
		s.read.Pages = s.read.Pages[:s.read.Frames]
		done = append(done, s)
	}
	for _, s := range done {
		s.read.Pages = s.read.Pages[:min(len(s.read.Pages), s.read.Frames)]
	}
	return done, nil
}

// product calls fn with each choice of a variant for each region of idx,
// with how many states it stands for and the sectors it keeps.
func product(regs []dim, idx []int, fn func(choice map[int]int, count *big.Int, weight int) bool) {
	choice := map[int]int{}
	var walk func(k int, count *big.Int, weight int) bool
	walk = func(k int, count *big.Int, weight int) bool {
		if k == len(idx) {
			return fn(maps2(choice), count, weight)
		}
		i := idx[k]
		for j, v := range regs[i].vars {
			choice[i] = j
			if !walk(k+1, new(big.Int).Mul(count, v.count), weight+v.weight) {
				return false
			}
		}
		delete(choice, i)
		return true
	}
	walk(0, big.NewInt(1), 0)
}

// cutClasses are the classes of a cut's crash states.
type cutClasses struct {
	// States is how many crash states the cut has (at the granularity
	// enumerated), Classes how many classes.
	States, Classes *big.Int
	// Prefix: some region was enumerated with torn writes keeping a
	// prefix of their sectors only.
	Prefix bool
	// groups: for each class of the WAL a database depends on (one group
	// when none), the other dimensions.
	groups  []classGroup
	entries int
}

type classGroup struct {
	wal  *dim // one variant: the WAL's class; nil when none
	dims []dim
}

// classesOf computes the classes of the crash states writes (the fated
// ones, as writesOf lists them) and the entry ops not yet durable make,
// from the folder's logs.
func classesOf(logs map[string]lossyfs.FileLog, writes []fateWrite, entryOps []string) (cutClasses, error) {
	entries := len(entryOps)
	byFile := map[string][]classWrite{}
	var files []string
	for _, w := range writes {
		lg, ok := logs[w.file]
		if !ok || w.n > len(lg.Changes) {
			return cutClasses{}, fmt.Errorf("the disk's logs have no write %s#%d", w.file, w.n)
		}
		if _, ok := byFile[w.file]; !ok {
			files = append(files, w.file)
		}
		byFile[w.file] = append(byFile[w.file], classWrite{file: w.file, n: w.n, c: lg.Changes[w.n-1]})
	}
	cc := cutClasses{entries: entries, States: big.NewInt(int64(entries + 1)), Classes: new(big.Int)}
	regions := map[string][]dim{}
	for _, f := range files {
		rs, err := regionsOf(f, logs[f], byFile[f])
		if err != nil {
			return cc, err
		}
		regions[f] = rs
		for _, r := range rs {
			cc.States.Mul(cc.States, r.total())
			cc.Prefix = cc.Prefix || r.prefix
		}
	}
	// The WALs: one dimension each, SQLite's reduction where it applies.
	wals := map[string]*dim{}
	for f, lg := range logs {
		if !strings.HasSuffix(f, "-wal") {
			continue
		}
		if _, isDB := logs[strings.TrimSuffix(f, "-wal")]; !isDB && len(regions[f]) == 0 {
			continue
		}
		if rs := regions[f]; len(rs) > 0 {
			d, err := walReduction(f, lg, rs)
			if errors.Is(err, errNoReduction) {
				continue // its regions stay dimensions of their own
			} else if err != nil {
				return cc, err
			}
			wals[f] = &d
			continue
		}
		read := sqlitewal.Recover(lg.Durable)
		wals[f] = &dim{file: f, vars: []variant{{count: big.NewInt(1), wal: &read, base: true}}}
	}
	var walNames []string
	for f := range wals {
		walNames = append(walNames, f)
	}
	slices.Sort(walNames)
	var walDims []dim
	for _, f := range walNames {
		walDims = append(walDims, *wals[f])
	}
	// One group per combination of the WALs' classes (one WAL at most in
	// any store here: the product is that WAL's classes).
	var combos [][]int
	var walk func(i int, c []int)
	walk = func(i int, c []int) {
		if i == len(walDims) {
			combos = append(combos, slices.Clone(c))
			return
		}
		for j := range walDims[i].vars {
			walk(i+1, append(c, j))
		}
	}
	walk(0, nil)
	for _, combo := range combos {
		g := classGroup{}
		count := big.NewInt(int64(entries + 1))
		covered := map[string]*sqlitewal.Read{}
		for i, j := range combo {
			d := walDims[i]
			one := d
			one.vars = []variant{d.vars[j]}
			if len(d.writes) > 0 {
				if g.wal != nil {
					return cc, fmt.Errorf("two WALs with unsynced writes in one cut")
				}
				g.wal = &one
			}
			covered[strings.TrimSuffix(d.file, "-wal")] = d.vars[j].wal
		}
		for _, f := range files {
			if wals[f] != nil {
				continue
			}
			rb, hot := hotJournal(logs, files, entryOps, f)
			for _, r := range regions[f] {
				if hot && !r.whole && restoredBy(r, rb) {
					r = collapse(r)
				}
				// A region that grows the file is not collapsed: the
				// file's size is not the WAL's to say.
				if rd := covered[f]; rd != nil && rd.OK && !r.whole && r.hi <= int64(len(logs[f].Durable)) && coveredBy(r, rd) {
					r = collapse(r)
				}
				g.dims = append(g.dims, r)
				count.Mul(count, big.NewInt(int64(len(r.vars))))
			}
		}
		cc.Classes.Add(cc.Classes, count)
		cc.groups = append(cc.groups, g)
	}
	return cc, nil
}

// hotJournal is the rollback a hot journal of database f does at the next
// open, when it is decided: the journal synced (no write of it unsynced)
// and its name durable (no entry op not yet durable names it).
func hotJournal(logs map[string]lossyfs.FileLog, fated []string, entryOps []string, f string) (sqlitewal.Rollback, bool) {
	j := f + "-journal"
	lg, ok := logs[j]
	if !ok || slices.Contains(fated, j) || slices.ContainsFunc(entryOps, func(op string) bool { return strings.Contains(op, j) }) {
		return sqlitewal.Rollback{}, false
	}
	return sqlitewal.HotRollback(lg.Durable)
}

// restoredBy reports whether every database page region r touches is one
// the rollback writes back, or past the size it truncates to: nothing of
// r is read after it.
func restoredBy(r dim, rb sqlitewal.Rollback) bool {
	ps := int64(rb.PageSize)
	for p := r.lo/ps + 1; p <= (r.hi-1)/ps+1; p++ {
		if _, ok := rb.Restored[uint32(p)]; !ok && p <= int64(rb.Pages) {
			return false
		}
	}
	return true
}

// coveredBy reports whether every database page region r touches is one
// recovery takes from the WAL.
func coveredBy(r dim, rd *sqlitewal.Read) bool {
	ps := int64(rd.Header.PageSize)
	for p := r.lo/ps + 1; p <= (r.hi-1)/ps+1; p++ {
		if !slices.Contains(rd.Pages, uint32(p)) {
			return false
		}
	}
	return true
}

// collapse makes a region one class: nothing reads it. Its representative
// is the most adversarial: torn, keeping the most, where it can be.
func collapse(r dim) dim {
	best := -1
	for j, v := range r.vars {
		full := true
		for i, m := range v.masks {
			full = full && m == 1<<r.writes[i].bits()-1
		}
		if best < 0 || (!full && v.weight > r.vars[best].weight) {
			best = j
		}
	}
	v := r.vars[best]
	v.count = r.total()
	r.vars = []variant{v}
	return r
}

// each calls fn with each class's representative, in order: each WAL
// class, the state keeping nothing first; within it, the fewest regions
// not in their first class first; each with every prefix of the entry
// ops. It stops when fn answers false or limit were given, and answers
// how many it gave.
func (cc cutClasses) each(limit int, fn func(lossyfs.Fates, int) bool) int {
	return cc.counted(limit, func(f lossyfs.Fates, keep int, _ *big.Int) bool { return fn(f, keep) })
}

// counted is each, telling fn too how many crash states the class has.
func (cc cutClasses) counted(limit int, fn func(lossyfs.Fates, int, *big.Int) bool) int {
	given := 0
	for _, g := range cc.groups {
		var base []classWrite
		var baseMasks []uint64
		baseCount := big.NewInt(1)
		if g.wal != nil {
			base, baseMasks, baseCount = g.wal.writes, g.wal.vars[0].masks, g.wal.vars[0].count
		}
		emit := func(choice []int) bool {
			ws := slices.Clone(base)
			ms := slices.Clone(baseMasks)
			count := new(big.Int).Set(baseCount)
			for i, d := range g.dims {
				ws = append(ws, d.writes...)
				ms = append(ms, d.vars[choice[i]].masks...)
				count.Mul(count, d.vars[choice[i]].count)
			}
			f := fatesOf(ws, ms)
			for keep := 0; keep <= cc.entries; keep++ {
				if given >= limit {
					return false
				}
				given++
				if !fn(f, keep, count) {
					return false
				}
			}
			return true
		}
		choice := make([]int, len(g.dims))
		var pick func(from, k int) bool
		pick = func(from, k int) bool {
			if k == 0 {
				return emit(choice)
			}
			for i := from; i <= len(g.dims)-k; i++ {
				for j := 1; j < len(g.dims[i].vars); j++ {
					choice[i] = j
					if !pick(i+1, k-1) {
						return false
					}
				}
				choice[i] = 0
			}
			return true
		}
		for k := 0; k <= len(g.dims); k++ {
			if !pick(0, k) {
				return given
			}
		}
	}
	return given
}

// fatesOf is the lossyfs fates of writes ws with masks ms.
func fatesOf(ws []classWrite, ms []uint64) lossyfs.Fates {
	var f lossyfs.Fates
	for i, w := range ws {
		m := ms[i]
		if m == 0 {
			continue
		}
		k := lossyfs.Kept{File: w.file, N: w.n}
		if !w.c.Trunc && m != 1<<w.bits()-1 {
			for s := range w.bits() {
				if m&(1<<s) != 0 {
					k.Sectors = append(k.Sectors, s)
				}
			}
		}
		f = append(f, k)
	}
	slices.SortFunc(f, func(a, b lossyfs.Kept) int {
		if c := strings.Compare(a.File, b.File); c != 0 {
			return c
		}
		return a.N - b.N
	})
	return f
}

// classKey is the class of one crash state computed directly, with no
// reduction but the definitions: each fated file's image (as a cut with
// fates f leaves it), a WAL read as recovery reads it, a database's pages
// a WAL holds masked. It is what the enumeration's classes are checked
// against.
func classKey(logs map[string]lossyfs.FileLog, writes []fateWrite, entryOps []string, f lossyfs.Fates, keep int) string {
	files := map[string]bool{}
	var fated []string
	for _, w := range writes {
		if !files[w.file] {
			fated = append(fated, w.file)
		}
		files[w.file] = true
	}
	images := imagesOf(logs, files, f)
	var names []string
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	var b strings.Builder
	fmt.Fprintf(&b, "keep %d", keep)
	for _, n := range names {
		img := images[n]
		if rb, hot := hotJournal(logs, fated, entryOps, n); hot {
			img = rb.Apply(img)
		}
		switch wal, hasWAL := images[n+"-wal"]; {
		case strings.HasSuffix(n, "-wal"):
			fmt.Fprintf(&b, "|%s %x", n, sqlitewal.Recover(img).Key)
		case hasWAL:
			rd := sqlitewal.Recover(wal)
			if rd.OK {
				ps := rd.Header.PageSize
				img = slices.Clone(img)
				for _, p := range rd.Pages {
					lo := int(p-1) * ps
					for i := lo; i < min(lo+ps, len(img)); i++ {
						img[i] = 0
					}
				}
			}
			fmt.Fprintf(&b, "|%s %d %x", n, len(img), sha256.Sum256(img))
		default:
			fmt.Fprintf(&b, "|%s %d %x", n, len(img), sha256.Sum256(img))
		}
	}
	return b.String()
}

// imagesOf is each file's image as a cut with fates f leaves it: its
// durable image with the changes f keeps applied again in order (those of
// fated files only; a change a failed sync dropped never).
func imagesOf(logs map[string]lossyfs.FileLog, fated map[string]bool, f lossyfs.Fates) map[string][]byte {
	kept := map[string]map[int]lossyfs.Kept{}
	for _, k := range f {
		if kept[k.File] == nil {
			kept[k.File] = map[int]lossyfs.Kept{}
		}
		kept[k.File][k.N] = k
	}
	images := map[string][]byte{}
	for name, lg := range logs {
		img := slices.Clone(lg.Durable)
		if fated[name] {
			for i, c := range lg.Changes {
				k, ok := kept[name][i+1]
				if !ok || c.Dropped {
					continue
				}
				w := classWrite{c: c}
				m := uint64(1)<<w.bits() - 1
				if len(k.Sectors) > 0 {
					m = 0
					for _, s := range k.Sectors {
						m |= 1 << s
					}
				}
				img, _ = applyRegion(img, []classWrite{w}, []uint64{m}, 0, 0, true)
			}
		}
		images[name] = img
	}
	return images
}
