package lossyfs

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// The file system checked against the model (fsmodel_test.go), as
// jepsen-io/local-fs checks LazyFS: random sequences of file ops run
// through the mount and through the model, every answer (an errno, the
// bytes a read gets) compared as it comes; at each cut, what the file
// system says it has unsynced and what the cut lost compared, and after
// the thaw every name, every file's bytes and which names share an inode.
// A sequence that diverges is shrunk (ops dropped while it still
// diverges) and printed with its seed.

// fsCheckSeedsEnv sets how many seeds TestTheFileSystemMatchesItsModel
// checks (fsCheckSeeds when unset).
const fsCheckSeedsEnv = "STORECHECK_FSMODEL_SEEDS"

const fsCheckSeeds = 60

// fsOp is one step of a sequence.
type fsOp struct {
	kind     string // create write trunc fsync failsync fsyncdir rename exchange unlink link read open hwrite hread hfsync cut crash
	name, to string
	off      int64  // a write's offset, a truncation's size
	n        int    // a write's length; open's handle slot
	fill     byte   // a write's bytes start from it
	seed     uint64 // a cut's fates; the handle slot of an op through one
}

func (o fsOp) String() string {
	switch o.kind {
	case "write":
		return fmt.Sprintf("write %s %d+%d (%q...)", o.name, o.off, o.n, o.fill)
	case "trunc":
		return fmt.Sprintf("trunc %s %d", o.name, o.off)
	case "rename", "link", "exchange":
		return fmt.Sprintf("%s %s %s", o.kind, o.name, o.to)
	case "open":
		return fmt.Sprintf("open %s as handle %d", o.name, o.n)
	case "hwrite":
		return fmt.Sprintf("write through handle %d %d+%d (%q...)", o.seed, o.off, o.n, o.fill)
	case "hread", "hfsync":
		return fmt.Sprintf("%s through handle %d", strings.TrimPrefix(o.kind, "h"), o.seed)
	case "cut", "crash":
		s := fmt.Sprintf("%s seed=%d", o.kind, o.seed)
		if o.name != "" {
			s += " at the sync of " + o.name
		}
		return s
	}
	return o.kind + " " + o.name
}

// data is a write's bytes: each sector's run of them its own.
func (o fsOp) data() []byte {
	b := make([]byte, o.n)
	for i := range b {
		b[i] = o.fill + byte((o.off+int64(i))/SectorSize)
	}
	return b
}

// fsSeq is a sequence to check: the folder's entry model and its ops.
type fsSeq struct {
	seed    uint64
	entries string
	ops     []fsOp
}

func (s fsSeq) String() string {
	model := s.entries
	if model == "" {
		model = "durable"
	}
	lines := []string{fmt.Sprintf("seed %d, entry model %s, %d ops:", s.seed, model, len(s.ops))}
	for i, o := range s.ops {
		lines = append(lines, fmt.Sprintf("  %2d. %s", i+1, o))
	}
	return strings.Join(lines, "\n")
}

var (
	fsFiles = []string{"a", "b", "c", "sub/a", "sub/b"}
	fsDirs  = []string{".", "sub"}
)

// genSeq draws a sequence from seed: an entry model, some ops, a cut at a
// random point (sometimes two, or one at a sync), and a cut at the end. A
// model run alongside steers the names: mostly files that exist for the
// ops that need one, names free for those that make one, and now and then
// any name, so that errors are checked too.
func genSeq(seed uint64) fsSeq {
	r := rand.New(rand.NewPCG(seed, 0xf5))
	models := []string{EntriesDurable, EntriesPOSIX, EntriesExt4Ordered}
	s := fsSeq{seed: seed, entries: models[r.IntN(len(models))]}
	m := newFSModel(s.entries, modelBugs{})
	n := 8 + r.IntN(28)
	cuts := map[int]bool{r.IntN(n): true}
	if r.IntN(3) == 0 {
		cuts[r.IntN(n)] = true
	}
	pick := func(exists bool) string {
		var from []string
		for _, f := range fsFiles {
			if _, ok := m.cur[f]; ok == exists {
				from = append(from, f)
			}
		}
		if len(from) == 0 || r.IntN(10) == 0 {
			from = fsFiles
		}
		return from[r.IntN(len(from))]
	}
	file := func() string { return pick(true) }
	for i := range n {
		if cuts[i] {
			o := fsOp{kind: "cut", seed: r.Uint64()}
			if r.IntN(3) == 0 {
				o.kind, o.name = "crash", file()
			}
			s.ops = append(s.ops, o)
			m.cut(m.drawFates(rand.New(rand.NewPCG(o.seed, 0xc7))))
		}
		var o fsOp
		switch k := r.IntN(100); {
		case k < 11:
			o = fsOp{kind: "create", name: pick(false)}
			m.create(o.name)
		case k < 33:
			o = fsOp{kind: "write", name: file(), off: int64(r.IntN(4 * SectorSize)), n: 1 + r.IntN(3*SectorSize), fill: byte('A' + r.IntN(26))}
			m.write(o.name, o.off, o.data())
		case k < 40:
			o = fsOp{kind: "trunc", name: file(), off: int64(r.IntN(5 * SectorSize))}
			m.truncate(o.name, o.off)
		case k < 48:
			o = fsOp{kind: "fsync", name: file()}
			m.fsync(o.name)
		case k < 51:
			o = fsOp{kind: "failsync", name: file()}
			m.failSync(o.name)
		case k < 57:
			o = fsOp{kind: "fsyncdir", name: fsDirs[r.IntN(len(fsDirs))]}
			m.fsyncDir(o.name)
		case k < 62:
			o = fsOp{kind: "rename", name: file(), to: fsFiles[r.IntN(len(fsFiles))]}
			m.rename(o.name, o.to)
		case k < 64:
			o = fsOp{kind: "exchange", name: file(), to: file()}
			m.exchange(o.name, o.to)
		case k < 69:
			o = fsOp{kind: "unlink", name: file()}
			m.unlink(o.name)
		case k < 75:
			o = fsOp{kind: "link", name: file(), to: pick(false)}
			m.link(o.name, o.to)
		case k < 80:
			o = fsOp{kind: "open", name: file(), n: r.IntN(2)}
			m.open(o.n, o.name)
		case k < 88:
			o = fsOp{kind: "hwrite", off: int64(r.IntN(4 * SectorSize)), n: 1 + r.IntN(3*SectorSize), fill: byte('a' + r.IntN(26)), seed: uint64(r.IntN(2))}
		case k < 92:
			o = fsOp{kind: "hread", seed: uint64(r.IntN(2))}
		case k < 95:
			o = fsOp{kind: "hfsync", seed: uint64(r.IntN(2))}
		default:
			o = fsOp{kind: "read", name: file()}
		}
		s.ops = append(s.ops, o)
	}
	s.ops = append(s.ops, fsOp{kind: "cut", seed: r.Uint64()})
	return s
}

// fsChecker runs sequences on one mount, each in a folder of its own.
type fsChecker struct {
	d    *Disk
	runs int
	// What the runs exercised: ops that succeeded on both sides, by kind;
	// what the cuts kept, tore and undid.
	ok                 map[string]int
	kept, torn, undone int
	handles            map[int]*os.File // this run's, by slot
}

// run runs s through the mount and the model (with bugs): the first
// divergence, or nil.
func (c *fsChecker) run(s fsSeq, bugs modelBugs) error {
	c.runs++
	dir := filepath.Join(c.d.Dir, "seq-"+strconv.Itoa(c.runs))
	if err := os.Mkdir(dir, 0o755); err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	if err := c.d.SetEntryModel(dir, s.entries); err != nil {
		return err
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		return err
	}
	m := newFSModel(s.entries, bugs)
	c.handles = map[int]*os.File{}
	defer func() {
		for _, h := range c.handles {
			h.Close()
		}
	}()
	for i, o := range s.ops {
		if err := c.step(dir, m, o); err != nil {
			return fmt.Errorf("op %d (%s): %w", i+1, o, err)
		}
	}
	return nil
}

// errnoOfErr is the errno err carries, 0 for none.
func errnoOfErr(err error) syscall.Errno {
	if err == nil {
		return 0
	}
	var errno syscall.Errno
	if errors.As(err, &errno) {
		return errno
	}
	return syscall.EINVAL
}

// step runs o on the mount and on the model and compares.
func (c *fsChecker) step(dir string, m *fsModel, o fsOp) error {
	p := func(name string) string { return filepath.Join(dir, name) }
	var want, got syscall.Errno
	switch o.kind {
	case "create":
		want = m.create(o.name)
		f, err := os.OpenFile(p(o.name), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
		if err == nil {
			f.Close()
		}
		got = errnoOfErr(err)
	case "write":
		data := o.data()
		want = m.write(o.name, o.off, data)
		f, err := os.OpenFile(p(o.name), os.O_WRONLY, 0)
		if err == nil {
			var n int
			n, err = f.WriteAt(data, o.off)
			f.Close()
			if err == nil && n != len(data) {
				return fmt.Errorf("wrote %d bytes of %d", n, len(data))
			}
		}
		got = errnoOfErr(err)
	case "trunc":
		want = m.truncate(o.name, o.off)
		got = errnoOfErr(os.Truncate(p(o.name), o.off))
	case "fsync", "failsync":
		if o.kind == "fsync" {
			want = m.fsync(o.name)
		} else if want = m.failSync(o.name); want == syscall.EIO {
			// Armed only where the model has the file: an arm left
			// waiting would strike a later sync.
			if err := c.d.FailSync(dir, o.name, 1); err != nil {
				return err
			}
		}
		f, err := os.OpenFile(p(o.name), os.O_RDWR, 0)
		if err == nil {
			err = f.Sync()
			f.Close()
		}
		got = errnoOfErr(err)
	case "fsyncdir":
		want = m.fsyncDir(o.name)
		f, err := os.Open(p(o.name))
		if err == nil {
			err = f.Sync()
			f.Close()
		}
		got = errnoOfErr(err)
	case "rename":
		want = m.rename(o.name, o.to)
		got = errnoOfErr(os.Rename(p(o.name), p(o.to)))
	case "exchange":
		want = m.exchange(o.name, o.to)
		got = errnoOfErr(unix.Renameat2(unix.AT_FDCWD, p(o.name), unix.AT_FDCWD, p(o.to), unix.RENAME_EXCHANGE))
	case "unlink":
		want = m.unlink(o.name)
		got = errnoOfErr(syscall.Unlink(p(o.name)))
	case "link":
		want = m.link(o.name, o.to)
		got = errnoOfErr(os.Link(p(o.name), p(o.to)))
	case "read":
		wantData, wantErr := m.read(o.name)
		b, err := os.ReadFile(p(o.name))
		want, got = wantErr, errnoOfErr(err)
		if want == 0 && got == 0 && !bytes.Equal(b, wantData) {
			return fmt.Errorf("read %s", diffBytes(b, wantData))
		}
	case "open":
		if h := c.handles[o.n]; h != nil {
			h.Close()
			delete(c.handles, o.n)
		}
		want = m.open(o.n, o.name)
		h, err := os.OpenFile(p(o.name), os.O_RDWR, 0)
		if err == nil {
			c.handles[o.n] = h
		}
		got = errnoOfErr(err)
	case "hwrite", "hread", "hfsync":
		mh, ok, dead := m.handle(int(o.seed))
		h := c.handles[int(o.seed)]
		if !ok || h == nil {
			if ok != (h != nil) {
				return fmt.Errorf("the mount has a handle %v, the model %v", h != nil, ok)
			}
			return nil // no handle in the slot: nothing to do
		}
		var err error
		switch o.kind {
		case "hwrite":
			if want = dead; want == 0 {
				want = mh.f.write(o.off, o.data())
			}
			_, err = h.WriteAt(o.data(), o.off)
		case "hfsync":
			if want = dead; want == 0 {
				want = m.fsyncInode(mh.f)
			}
			err = h.Sync()
		case "hread":
			// A dead handle still reads: what the cut left.
			b := make([]byte, 16*SectorSize)
			var n int
			n, err = h.ReadAt(b, 0)
			if errors.Is(err, io.EOF) {
				err = nil
			}
			if err == nil && !bytes.Equal(b[:n], mh.f.cur) {
				return fmt.Errorf("read %s", diffBytes(b[:n], mh.f.cur))
			}
		}
		got = errnoOfErr(err)
	case "cut", "crash":
		return c.cut(dir, m, o)
	default:
		return fmt.Errorf("no op %q", o.kind)
	}
	if got != want {
		return fmt.Errorf("the mount answered %v, the model %v", errName(got), errName(want))
	}
	switch {
	case got == 0:
		c.ok[o.kind]++
	case got == syscall.EIO:
		c.ok[o.kind+" (EIO)"]++
	}
	return nil
}

func errName(e syscall.Errno) string {
	if e == 0 {
		return "success"
	}
	return e.Error()
}

// cut cuts the power (at once, or at a sync of o.name), compares what the
// file system says it lost with what the model does, thaws, and compares
// every file.
func (c *fsChecker) cut(dir string, m *fsModel, o fsOp) error {
	u, err := c.d.Unsynced(dir)
	if err != nil {
		return err
	}
	delete(u, "(unlinked)") // which unnamed files are still tracked is no part of the model
	maps.DeleteFunc(u, func(_ string, s []int) bool { return len(s) == 0 })
	if want := m.unsynced(); !reflect.DeepEqual(u, want) {
		return fmt.Errorf("before the cut the mount has unsynced %v, the model %v", u, want)
	}
	var got Cut
	var fates Fates
	keep := 0
	if _, missing := m.read(o.name); o.kind == "crash" && missing == 0 {
		// Half the crashes draw their fates from the seed in the file
		// system, half are given them (CrashAtSyncKeeping).
		explicit := o.seed%2 == 0
		var given Fates
		if explicit {
			given, keep = m.drawFates(rand.New(rand.NewPCG(o.seed, 0xc7)))
			if err := c.d.CrashAtSyncKeeping(dir, o.name, 1, given, keep); err != nil {
				return err
			}
		} else if err := c.d.CrashAtSync(dir, o.name, 1, o.seed, nil); err != nil {
			return err
		}
		f, err := os.OpenFile(filepath.Join(dir, o.name), os.O_RDWR, 0)
		if err != nil {
			return err
		}
		err = f.Sync()
		f.Close()
		if !errors.Is(err, syscall.EIO) {
			return fmt.Errorf("the sync the power went at answered %v, want EIO", err)
		}
		var struck bool
		got, fates, struck, err = c.d.Struck(dir)
		if err != nil || !struck {
			return fmt.Errorf("the crash at the sync did not strike (%v)", err)
		}
		pending := got.Pending
		delete(pending, "(unlinked)")
		maps.DeleteFunc(pending, func(_ string, s []int) bool { return len(s) == 0 })
		if want := m.unsynced(); !reflect.DeepEqual(pending, want) {
			return fmt.Errorf("at the crash the mount had unsynced %v, the model %v", pending, want)
		}
		got.Pending = nil
		// The fates the file system drew, from the seed, over what the
		// model says is unsynced: the same if the two agree.
		want := given
		if !explicit {
			r := rand.New(rand.NewPCG(o.seed, fatesStream))
			want = DrawFates(r, m.unsynced(), nil)
			keep = drawKeepEntries(r, len(m.pending))
		}
		if !reflect.DeepEqual(fates, want) {
			return fmt.Errorf("the crash kept fates %v, the model %v", fates, want)
		}
	} else {
		fates, keep = m.drawFates(rand.New(rand.NewPCG(o.seed, 0xc7)))
		if got, err = c.d.CutEntries(dir, fates, keep); err != nil {
			return err
		}
	}
	want := m.cut(fates, keep)
	delete(got.Unsynced, "(unlinked)")
	if got.Unsynced == nil {
		got.Unsynced = map[string]int{}
	}
	if !reflect.DeepEqual(got, want) {
		return fmt.Errorf("with fates %v and %d entry ops kept the cut says %+v, the model %+v", fates, keep, got, want)
	}
	c.ok[o.kind]++
	c.kept, c.torn, c.undone = c.kept+want.Kept, c.torn+want.Torn, c.undone+len(want.Undone)
	if err := c.d.Thaw(dir); err != nil {
		return err
	}
	if err := compareTree(dir, m); err != nil {
		return fmt.Errorf("with fates %v and %d entry ops kept, after the thaw: %w", fates, keep, err)
	}
	return nil
}

// compareTree compares every file of dir with the model: its names, each
// file's bytes and link count, and which names share an inode.
func compareTree(dir string, m *fsModel) error {
	inos := map[string]uint64{}
	for _, sub := range fsDirs {
		entries, err := os.ReadDir(filepath.Join(dir, sub))
		if err != nil {
			return err
		}
		for _, e := range entries {
			if e.IsDir() {
				continue
			}
			inos[filepath.ToSlash(filepath.Join(sub, e.Name()))] = 0
		}
	}
	if got, want := slices.Sorted(maps.Keys(inos)), slices.Sorted(maps.Keys(m.cur)); !slices.Equal(got, want) {
		return fmt.Errorf("the folder holds %q, the model %q", got, want)
	}
	links := map[int]int{}
	for _, ino := range m.cur {
		links[ino]++
	}
	same := map[uint64]int{} // the mount's inode -> the model's
	for name, ino := range m.cur {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		if want := m.inodes[ino].cur; !bytes.Equal(b, want) {
			return fmt.Errorf("%s: %s", name, diffBytes(b, want))
		}
		var st syscall.Stat_t
		if err := syscall.Stat(filepath.Join(dir, name), &st); err != nil {
			return err
		}
		if int(st.Nlink) != links[ino] {
			return fmt.Errorf("%s has %d links, the model %d", name, st.Nlink, links[ino])
		}
		if other, ok := same[st.Ino]; ok && other != ino {
			return fmt.Errorf("%s shares an inode with a file the model keeps apart", name)
		}
		same[st.Ino] = ino
	}
	if len(same) != len(links) {
		return fmt.Errorf("the folder has %d inodes, the model %d", len(same), len(links))
	}
	return nil
}

// diffBytes says where got and want part.
func diffBytes(got, want []byte) string {
	i := 0
	for i < min(len(got), len(want)) && got[i] == want[i] {
		i++
	}
	show := func(b []byte) string {
		end := min(len(b), i+16)
		if i >= len(b) {
			return "(end)"
		}
		return fmt.Sprintf("%q", b[i:end])
	}
	return fmt.Sprintf("%d bytes, the model %d; first difference at %d: %s, the model %s", len(got), len(want), i, show(got), show(want))
}

// shrink drops ops from s while it still diverges (with bugs), chunks
// first, then one at a time, within a bounded number of runs.
func (c *fsChecker) shrink(s fsSeq, bugs modelBugs) (fsSeq, error) {
	err := c.run(s, bugs)
	const budget = 400
	tries := 0
	for chunk := len(s.ops) / 2; chunk >= 1 && tries < budget; {
		shrunk := false
		for i := 0; i+chunk <= len(s.ops) && tries < budget; {
			try := s
			try.ops = slices.Concat(s.ops[:i], s.ops[i+chunk:])
			tries++
			if e := c.run(try, bugs); e != nil {
				s, err, shrunk = try, e, true
				continue
			}
			i++
		}
		if !shrunk {
			chunk /= 2
		}
	}
	return s, err
}

// checkSeeds checks seeds from..from+n-1: the first that diverges, shrunk,
// and its divergence.
func (c *fsChecker) checkSeeds(from, n uint64, bugs modelBugs) (fsSeq, error, bool) {
	for seed := from; seed < from+n; seed++ {
		s := genSeq(seed)
		if first := c.run(s, bugs); first != nil {
			shrunk, err := c.shrink(s, bugs)
			if err == nil {
				// Not again: the divergence depends on more than the ops.
				return s, fmt.Errorf("%w (and then not again: flaky)", first), true
			}
			return shrunk, err, true
		}
	}
	return fsSeq{}, nil, false
}

func newFSChecker(t *testing.T) *fsChecker {
	d, run := mountForTest(t)
	os.Remove(run)
	return &fsChecker{d: d, ok: map[string]int{}}
}

// fsCheckSeedEnv, when set, checks that seed alone (to replay one a
// failure printed).
const fsCheckSeedEnv = "STORECHECK_FSMODEL_SEED"

// fsSeeds are the seeds to check: from, and how many.
func fsSeeds(t *testing.T) (uint64, uint64) {
	if v := os.Getenv(fsCheckSeedEnv); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: want a seed", fsCheckSeedEnv, v)
		}
		return n, 1
	}
	return 1, fsSeedCount(t)
}

func fsSeedCount(t *testing.T) uint64 {
	if v := os.Getenv(fsCheckSeedsEnv); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil || n == 0 {
			t.Fatalf("%s=%q: want a count of seeds", fsCheckSeedsEnv, v)
		}
		return n
	}
	return fsCheckSeeds
}

// The file system holds, before every cut and after it, what the model
// says it may: random sequences of creates, writes, truncations, syncs
// (failing ones too), renames, unlinks, links and reads, under each entry
// model, cut at random points (some at a sync), agree with the model at
// every step. STORECHECK_FSMODEL_SEEDS checks more seeds.
func TestTheFileSystemMatchesItsModel(t *testing.T) {
	c := newFSChecker(t)
	from, n := fsSeeds(t)
	if s, err, bad := c.checkSeeds(from, n, modelBugs{}); bad {
		t.Fatalf("the mount diverges from the model:\n%s\n%v", s, err)
	}
	t.Logf("%d seeds agree: ops done on both sides %v; the cuts kept %d changes, tore %d, undid %d entry ops", n, c.ok, c.kept, c.torn, c.undone)
}

// The check catches a divergence: against each deliberately wrong model
// (a bug LazyFS had, or one this file system could have) some seed
// diverges, and shrinks to a few ops.
func TestTheModelCheckCatchesAWrongModel(t *testing.T) {
	c := newFSChecker(t)
	for _, tc := range []struct {
		name string
		bugs modelBugs
	}{
		{"a write through one hard link unseen through the other", modelBugs{linksApart: true}},
		{"an extending truncation after a cut leaves zeroes", modelBugs{truncZeroes: true}},
		{"a cut undoes no entry op", modelBugs{noUndo: true}},
		{"a torn write persists whole", modelBugs{tornWhole: true}},
	} {
		s, err, bad := c.checkSeeds(1, fsSeedCount(t), tc.bugs)
		if !bad {
			t.Errorf("%s: every seed agrees with the wrong model", tc.name)
			continue
		}
		if len(s.ops) > 8 {
			t.Errorf("%s: shrunk only to %d ops:\n%s", tc.name, len(s.ops), s)
		}
		t.Logf("%s: caught, shrunk to\n%s\n%v", tc.name, s, err)
	}
}
