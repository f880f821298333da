package lossyfs

import (
	"bytes"
	"fmt"
	"maps"
	"math/rand/v2"
	"path"
	"slices"
	"syscall"
)

// fsModel is what the disk may hold, written apart from the file system
// (fs.go, entry.go, sync.go) from the crash model their comments state: a
// file (an inode, which every hard link to it names) has a durable image
// and the changes made since its last sync; a sync makes the changes
// durable, but those a failed sync dropped; a cut keeps, of each named
// file's changes, those the cut's fates keep (a torn write only in some of
// its sectors), applied again in order to the durable image. The names are
// a durable namespace and the entry ops not yet durable; a cut keeps a
// prefix of those. Where fs.go undoes from the current image backwards,
// the model applies forwards from the durable one, so the two meet only
// if both are right.
//
// Its rules and their sources (the package's comments cite them at
// length): a sync makes a file's data durable (POSIX fsync); a write not
// synced may be kept, lost or torn at SectorSize, in any subset (SQLite's
// src/test6.c; sqlite.org/atomiccommit.html "Hardware Assumptions"); a
// failed sync drops the dirty data, a later sync succeeds without it
// (Linux since 4.13, the PostgreSQL fsync report); an entry op is durable
// once its directories are synced (Linux fsync(2)), under ext4's ordered
// mode once anything is (ext4.rst, data=ordered), and a cut keeps a
// prefix of the rest. Where the sources are silent the model says what
// the file system chose: under POSIX a durable op makes the earlier ops
// on its names durable (entriesSynced); a file no name leads to at the
// cut loses its unsynced writes (DrawFates); a failed sync commits no
// entry op; a torn write's kept sectors past the end of the file extend
// it, as a pwrite would.
type fsModel struct {
	entries string // the folder's entry model (EntriesDurable, POSIX, ext4)
	bugs    modelBugs

	inodes map[int]*mInode
	next   int
	// cur is what a process sees (name -> inode), durable what the
	// directories on the disk hold.
	cur, durable map[string]int
	pending      []mEntry
	cuts         int
	// handles are the open handles, by slot: dead once a cut came after
	// the open.
	handles map[int]mHandle
}

type mHandle struct {
	f   *mInode
	gen int // the cuts before its open
}

// modelBugs are deliberately wrong variants of the model, each a bug a
// file system of this kind has had (jepsen-io/local-fs found the first two
// in LazyFS), to show the check catches a divergence.
type modelBugs struct {
	// linksApart: a hard link is a copy, so a write through one name is
	// unseen through the other.
	linksApart bool
	// truncZeroes: after a cut, a truncation that extends a file leaves
	// only zeroes in it.
	truncZeroes bool
	// noUndo: a cut undoes no entry op.
	noUndo bool
	// tornWhole: a torn write persists whole.
	tornWhole bool
}

type mInode struct {
	durable, cur []byte
	log          []mChange
}

// mChange is one logged change: a write, a truncation, or the mark fs.go
// leaves first in the log after a sync that followed a failed one (it
// stands for the current image's difference from the durable one, has no
// fate, and counts as a change).
type mChange struct {
	trunc, dropped, mark bool
	off                  int64 // a write's offset, a truncation's size
	data                 []byte
}

func (c mChange) sectors() int {
	switch {
	case c.dropped:
		return -1
	case c.trunc:
		return 0
	}
	return int((c.off+int64(len(c.data))-1)/SectorSize - c.off/SectorSize + 1)
}

// apply is img with c made.
func (c mChange) apply(img []byte) []byte {
	if c.trunc {
		return resize(img, c.off)
	}
	img = resize(img, max(int64(len(img)), c.off+int64(len(c.data))))
	copy(img[c.off:], c.data)
	return img
}

// tear is img with only the sectors keep names (from 0, c's first) of
// write c made.
func (c mChange) tear(img []byte, keep []int) []byte {
	first, end := c.off/SectorSize, c.off+int64(len(c.data))
	for _, s := range keep {
		lo := max((first+int64(s))*SectorSize, c.off)
		hi := min((first+int64(s)+1)*SectorSize, end)
		if lo >= hi {
			continue
		}
		img = resize(img, max(int64(len(img)), hi))
		copy(img[lo:hi], c.data[lo-c.off:hi-c.off])
	}
	return img
}

// mEntry is an entry op not yet durable: the inode it names (an
// exchange's other, the one name had, is other).
type mEntry struct {
	kind, name, from string
	ino, other       int
	need             map[string]bool // POSIX: the directories to sync
}

func (e mEntry) String() string {
	if e.kind == "rename" || e.kind == "exchange" {
		return fmt.Sprintf("%s %s -> %s", e.kind, e.from, e.name)
	}
	return e.kind + " " + e.name
}

// setTo makes e in namespace ns: the names it makes name its inode, the
// name it removes goes if it still names that inode.
func (e mEntry) setTo(ns map[string]int) {
	switch e.kind {
	case "create", "link":
		ns[e.name] = e.ino
	case "rename":
		ns[e.name] = e.ino
		if ns[e.from] == e.ino {
			delete(ns, e.from)
		}
	case "exchange":
		ns[e.name], ns[e.from] = e.ino, e.other
	case "unlink":
		if ns[e.name] == e.ino {
			delete(ns, e.name)
		}
	}
}

func newFSModel(entries string, bugs modelBugs) *fsModel {
	return &fsModel{entries: entries, bugs: bugs, inodes: map[int]*mInode{}, next: 1, cur: map[string]int{}, durable: map[string]int{}, handles: map[int]mHandle{}}
}

func (m *fsModel) lookup(name string) (*mInode, syscall.Errno) {
	ino, ok := m.cur[name]
	if !ok {
		return nil, syscall.ENOENT
	}
	return m.inodes[ino], 0
}

// entry logs an entry op, or makes it durable at once with no model.
func (m *fsModel) entry(e mEntry) {
	if m.entries == EntriesDurable {
		e.setTo(m.durable)
		return
	}
	if m.entries == EntriesPOSIX {
		e.need = map[string]bool{path.Dir(e.name): true}
		if e.from != "" {
			e.need[path.Dir(e.from)] = true
		}
	}
	m.pending = append(m.pending, e)
}

// synced is a sync of directory dir ("" for a file's sync): under ext4's
// ordered mode every one commits every entry op; under POSIX a
// directory's commits those that waited only for it, and every earlier
// one that shares a name with one it commits.
func (m *fsModel) synced(dir string) {
	commit := make([]bool, len(m.pending))
	for i, e := range m.pending {
		switch {
		case m.entries == EntriesExt4Ordered:
			commit[i] = true
		case dir != "":
			delete(e.need, dir)
			commit[i] = len(e.need) == 0
		}
	}
	// Each committed op commits the earlier ones on its names.
	for changed := true; changed; {
		changed = false
		for j, later := range m.pending {
			for i, e := range m.pending[:j] {
				if commit[j] && !commit[i] && e.shares(later) {
					commit[i], changed = true, true
				}
			}
		}
	}
	kept := m.pending[:0]
	for i, e := range m.pending {
		if commit[i] {
			e.setTo(m.durable)
		} else {
			kept = append(kept, e)
		}
	}
	m.pending = kept
}

// shares reports whether e and o touch a name in common.
func (e mEntry) shares(o mEntry) bool {
	names := func(x mEntry) []string {
		if x.from != "" {
			return []string{x.name, x.from}
		}
		return []string{x.name}
	}
	for _, a := range names(e) {
		if slices.Contains(names(o), a) {
			return true
		}
	}
	return false
}

func (m *fsModel) create(name string) syscall.Errno {
	if _, ok := m.cur[name]; ok {
		return syscall.EEXIST
	}
	ino := m.next
	m.next++
	m.inodes[ino] = &mInode{durable: []byte{}, cur: []byte{}}
	m.cur[name] = ino
	m.entry(mEntry{kind: "create", name: name, ino: ino})
	return 0
}

func (m *fsModel) write(name string, off int64, data []byte) syscall.Errno {
	f, errno := m.lookup(name)
	if errno != 0 {
		return errno
	}
	return f.write(off, data)
}

func (f *mInode) write(off int64, data []byte) syscall.Errno {
	c := mChange{off: off, data: data}
	f.cur = c.apply(f.cur)
	f.log = append(f.log, c)
	return 0
}

func (m *fsModel) truncate(name string, size int64) syscall.Errno {
	f, errno := m.lookup(name)
	if errno != 0 {
		return errno
	}
	if size == int64(len(f.cur)) && !slices.ContainsFunc(f.log, func(c mChange) bool { return c.dropped }) {
		return 0 // nothing changes, nothing to lose
	}
	c := mChange{trunc: true, off: size}
	if m.bugs.truncZeroes && m.cuts > 0 && size > int64(len(f.cur)) {
		f.cur = make([]byte, size)
	} else {
		f.cur = c.apply(f.cur)
	}
	f.log = append(f.log, c)
	return 0
}

// fsync makes the file's changes durable, but the dropped ones: when they
// leave the current image apart from the durable one, the mark stays.
func (m *fsModel) fsync(name string) syscall.Errno {
	f, errno := m.lookup(name)
	if errno != 0 {
		return errno
	}
	return m.fsyncInode(f)
}

func (m *fsModel) fsyncInode(f *mInode) syscall.Errno {
	img := f.durable
	for _, c := range f.log {
		if !c.dropped && !c.mark {
			img = c.apply(img)
		}
	}
	f.durable, f.log = img, nil
	if !bytes.Equal(img, f.cur) {
		f.log = []mChange{{dropped: true, mark: true}}
	}
	m.synced("")
	return 0
}

// failSync is a sync that fails: every change the file has is dropped.
func (m *fsModel) failSync(name string) syscall.Errno {
	f, errno := m.lookup(name)
	if errno != 0 {
		return errno
	}
	for i := range f.log {
		f.log[i].dropped = true
	}
	return syscall.EIO
}

func (m *fsModel) fsyncDir(dir string) syscall.Errno {
	m.synced(dir)
	return 0
}

func (m *fsModel) rename(from, to string) syscall.Errno {
	ino, ok := m.cur[from]
	if !ok {
		return syscall.ENOENT
	}
	if m.cur[to] == ino {
		return 0 // two names of one inode: rename(2) does nothing
	}
	m.cur[to] = ino
	delete(m.cur, from)
	m.entry(mEntry{kind: "rename", name: to, from: from, ino: ino})
	return 0
}

// exchange swaps two names (renameat2's RENAME_EXCHANGE).
func (m *fsModel) exchange(from, to string) syscall.Errno {
	a, ok := m.cur[from]
	b, ok2 := m.cur[to]
	if !ok || !ok2 {
		return syscall.ENOENT
	}
	if a == b {
		return 0 // two names of one inode: nothing changes
	}
	m.cur[to], m.cur[from] = a, b
	m.entry(mEntry{kind: "exchange", name: to, from: from, ino: a, other: b})
	return 0
}

func (m *fsModel) unlink(name string) syscall.Errno {
	ino, ok := m.cur[name]
	if !ok {
		return syscall.ENOENT
	}
	delete(m.cur, name)
	m.entry(mEntry{kind: "unlink", name: name, ino: ino})
	return 0
}

func (m *fsModel) link(from, to string) syscall.Errno {
	ino, ok := m.cur[from]
	if !ok {
		return syscall.ENOENT
	}
	if _, ok := m.cur[to]; ok {
		return syscall.EEXIST
	}
	if m.bugs.linksApart {
		f := m.inodes[ino]
		ino = m.next
		m.next++
		m.inodes[ino] = &mInode{durable: bytes.Clone(f.cur), cur: bytes.Clone(f.cur)}
	}
	m.cur[to] = ino
	m.entry(mEntry{kind: "link", name: to, ino: ino})
	return 0
}

// open opens a handle on name in slot (closing the one there).
func (m *fsModel) open(slot int, name string) syscall.Errno {
	delete(m.handles, slot)
	f, errno := m.lookup(name)
	if errno != 0 {
		return errno
	}
	m.handles[slot] = mHandle{f: f, gen: m.cuts}
	return 0
}

// handle is the handle in slot: ok false for none, errno EIO when a cut
// made it dead.
func (m *fsModel) handle(slot int) (mHandle, bool, syscall.Errno) {
	h, ok := m.handles[slot]
	if ok && h.gen != m.cuts {
		return h, true, syscall.EIO
	}
	return h, ok, 0
}

func (m *fsModel) read(name string) ([]byte, syscall.Errno) {
	f, errno := m.lookup(name)
	if errno != 0 {
		return nil, errno
	}
	return f.cur, 0
}

// names is each inode's name as the file system reports it (Unsynced) and
// its fates name it: the last of its names in a walk of the folder.
func (m *fsModel) names() map[int]string {
	out := map[int]string{}
	for _, name := range slices.Sorted(maps.Keys(m.cur)) {
		out[m.cur[name]] = name
	}
	return out
}

// unsynced is what Disk.Unsynced must say of the named files with
// unsynced changes: the sectors of each change, -1 for a dropped one.
func (m *fsModel) unsynced() map[string][]int {
	out := map[string][]int{}
	for ino, name := range m.names() {
		f := m.inodes[ino]
		for _, c := range f.log {
			out[name] = append(out[name], c.sectors())
		}
	}
	return out
}

// drawFates gives each change of a named file that a failed sync did not
// drop a fate from r: kept, lost, or (for a write of two sectors or more)
// torn; and draws how many entry ops not yet durable the cut keeps.
func (m *fsModel) drawFates(r *rand.Rand) (Fates, int) {
	u := m.unsynced()
	var fates Fates
	for _, name := range slices.Sorted(maps.Keys(u)) {
		for i, n := range u[name] {
			if n < 0 {
				continue
			}
			switch k := r.IntN(8); {
			case k < 4:
				fates = append(fates, Kept{File: name, N: i + 1})
			case k == 7 && n >= 2:
				var s []int
				for len(s) == 0 || len(s) == n {
					s = s[:0]
					for j := range n {
						if r.IntN(2) == 0 {
							s = append(s, j)
						}
					}
				}
				fates = append(fates, Kept{File: name, N: i + 1, Sectors: s})
			}
		}
	}
	return fates, r.IntN(len(m.pending) + 1)
}

// cut is a power cut that keeps what fates name and the first keep entry
// ops not yet durable: it answers the Cut the file system must report.
// Every file is then as the cut left it, durable.
func (m *fsModel) cut(fates Fates, keep int) Cut {
	c := Cut{Unsynced: map[string]int{}}
	byName := map[string]map[int]Kept{}
	for _, k := range fates {
		if byName[k.File] == nil {
			byName[k.File] = map[int]Kept{}
		}
		byName[k.File][k.N] = k
	}
	names := m.names()
	for ino, f := range m.inodes {
		img := f.durable
		if name, ok := names[ino]; ok {
			if len(f.log) > 0 {
				c.Unsynced[name] = len(f.log)
			}
			for i, ch := range f.log {
				k, ok := byName[name][i+1]
				switch {
				case !ok || ch.dropped:
				case ch.trunc || len(k.Sectors) == 0 || m.bugs.tornWhole:
					c.Kept++
					img = ch.apply(img)
				default:
					c.Torn++
					img = ch.tear(img, k.Sectors)
				}
			}
		}
		f.durable, f.cur, f.log = img, bytes.Clone(img), nil
	}
	if m.bugs.noUndo {
		keep = len(m.pending)
	}
	keep = min(keep, len(m.pending))
	for _, e := range m.pending[:keep] {
		e.setTo(m.durable)
	}
	for _, e := range m.pending[keep:] {
		c.Undone = append(c.Undone, e.String())
	}
	m.pending = nil
	m.cur = maps.Clone(m.durable)
	live := map[int]bool{}
	for _, ino := range m.cur {
		live[ino] = true
	}
	maps.DeleteFunc(m.inodes, func(ino int, _ *mInode) bool { return !live[ino] })
	m.cuts++
	return c
}
