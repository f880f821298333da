package lossyfs

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// Sync faults: a sync that fails, and a power cut at a sync.
//
// A failing sync (Disk.FailSync) answers EIO, and the file's dirty data is
// dropped as Linux drops it since 4.13 (the PostgreSQL "fsyncgate" of
// 2018; see LWN's "PostgreSQL's fsync() surprise" and the kernel's
// Documentation/filesystems/vfs.rst on writeback errors): the pages whose
// writeback failed are marked clean, so they are never written again; a
// process still reads them from the cache, and a later sync reports
// success without them. Here: every unsynced change the file has when the
// sync fails stays in the current image but is never durable: a cut loses
// it whatever its fate, and a later sync makes durable only what came
// after it (and what it did not overwrite). A kernel that evicts the
// clean pages would show the old bytes before any cut; this model keeps
// them until the power goes.
//
// A power cut at a sync (Disk.CrashAtSync) is SQLite's crash VFS's
// (src/test6.c, sqlite3_crash_now and crashParamsObjCmd's "-file"): the
// Nth sync of the named file never returns; the power goes instead, and
// every unsynced write of the folder gets a fate drawn from a seed
// (DrawFates; seed 0: every one lost), the sync's own file's as well, and
// the entry ops not yet durable a kept prefix drawn after them (seed 0:
// every one undone).

// armKind is what an armed sync does.
type armKind int

const (
	armNone armKind = iota
	armFail
	armCrash
)

// arm is a sync fault armed on a folder: the Nth sync of File, counted
// from the arming, fails or cuts the power.
type arm struct {
	kind   armKind
	file   string
	left   int
	fates  uint64
	noFate []string
	// explicit: the cut keeps kept and the first keepEntries entry ops,
	// instead of drawing them from fates.
	explicit    bool
	kept        Fates
	keepEntries int
	// logs: the strike keeps the folder's logs (Disk.Logs) as they were
	// just before it, for Disk.Struck to tell.
	logs bool
}

// armedAt is the fault that strikes this sync of file name (backing inode
// ino) of folder sub, if any; it counts the sync against every arm that
// waits for the file. An arm names a file, and a sync through any of the
// file's hard links is a sync of it: the name a handle knows is the one
// the kernel's inode has, which may be another link's. l.cut is held
// (shared).
func (l *lossy) armedAt(sub, name string, ino uint64) arm {
	l.armsMu.Lock()
	defer l.armsMu.Unlock()
	arms := l.arms[sub]
	for i := range arms {
		var st syscall.Stat_t
		if arms[i].file != name && (syscall.Lstat(filepath.Join(l.backing, sub, arms[i].file), &st) != nil || st.Ino != ino) {
			continue
		}
		if arms[i].left--; arms[i].left == 0 {
			a := arms[i]
			l.arms[sub] = slices.Delete(arms, i, i+1)
			return a
		}
	}
	return arm{}
}

// syncFailed drops the file's dirty data: every change it has is never
// durable. f.mu is held.
func (f *file) syncFailed() {
	for i := range f.log {
		f.log[i].dropped = true
	}
}

// synced makes every change of the file durable but the dropped ones:
// the log is then empty, or, when some were dropped, one dropped change
// that takes the current image back to the durable one (the last synced
// image with every change not dropped applied again in order). f.mu is
// held.
func (f *file) synced() error {
	if !slices.ContainsFunc(f.log, func(c change) bool { return c.dropped }) {
		f.log = nil
		return nil
	}
	// A change dropped since that reaches below the durable tail makes
	// the images differ where the tail does not say: computed afresh.
	below := func(c change) bool { return c.dropped && c.off < f.log[0].oldAt }
	if f.log[0].durable && !slices.ContainsFunc(f.log[1:], below) {
		// The durable image's tail is kept: the changes since apply to
		// it in memory, with no read of the file (syncs after a failed
		// one stay cheap).
		d := f.log[0]
		img, lo := d.old, d.oldAt
		for _, c := range f.log[1:] {
			switch {
			case c.dropped:
			case c.trunc && c.off < lo:
				img, lo = nil, c.off
			case c.trunc:
				img = resize(img, c.off-lo)
			default:
				end := c.off + int64(len(c.data))
				if end > lo+int64(len(img)) {
					img = resize(img, end-lo)
				}
				if end > lo {
					from := max(c.off, lo)
					copy(img[from-lo:], c.data[from-c.off:])
				}
			}
		}
		// The durable image may have caught up with the current one (a
		// truncation over what was dropped): then nothing is unsynced. Only
		// a file of the same size can be, so the read is the tail at most.
		var st syscall.Stat_t
		if err := syscall.Fstat(f.fd, &st); err == nil && st.Size == lo+int64(len(img)) {
			cur := make([]byte, len(img))
			if n, err := syscall.Pread(f.fd, cur, lo); err == nil && n == len(cur) && bytes.Equal(cur, img) {
				f.log = nil
				return nil
			}
		}
		f.log = []change{{dropped: true, durable: true, size: lo + int64(len(img)), oldAt: lo, old: img}}
		return nil
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(f.fd, &st); err != nil {
		return err
	}
	cur := make([]byte, st.Size)
	if _, err := syscall.Pread(f.fd, cur, 0); err != nil {
		return err
	}
	img := bytes.Clone(cur)
	for i := len(f.log) - 1; i >= 0; i-- {
		c := f.log[i]
		img = resize(img, c.size)
		if len(c.old) > 0 {
			copy(img[c.oldAt:], c.old)
		}
	}
	for _, c := range f.log {
		switch {
		case c.dropped:
		case c.trunc:
			img = resize(img, c.off)
		default:
			img = resize(img, max(int64(len(img)), c.off+int64(len(c.data))))
			copy(img[c.off:], c.data)
		}
	}
	if bytes.Equal(img, cur) {
		f.log = nil
		return nil
	}
	lo := 0
	for lo < min(len(img), len(cur)) && img[lo] == cur[lo] {
		lo++
	}
	f.log = []change{{dropped: true, durable: true, size: int64(len(img)), oldAt: int64(lo), old: img[lo:]}}
	return nil
}

// resize is b cut or grown with zeros to n bytes.
func resize(b []byte, n int64) []byte {
	if n <= int64(len(b)) {
		return b[:n]
	}
	return append(b, make([]byte, n-int64(len(b)))...)
}

// crashAtSync cuts the power of folder sub at a sync of one of its files,
// which a handle of generation gen made: unless a cut came first, every
// unsynced change gets a fate drawn from a's seed, and the cut is kept for
// Disk.Struck to tell.
func (l *lossy) crashAtSync(sub string, gen uint64, a arm) {
	l.cut.Lock()
	defer l.cut.Unlock()
	if !l.live(sub, gen) {
		return
	}
	var fates Fates
	keep := 0
	pending := l.unsyncedLocked(sub)
	var logs map[string]FileLog
	if a.logs {
		logs = l.logsLocked(sub)
	}
	if a.explicit {
		fates, keep = a.kept, a.keepEntries
	} else if a.fates != 0 {
		r := rand.New(rand.NewPCG(a.fates, fatesStream))
		fates = DrawFates(r, pending, a.noFate)
		keep = drawKeepEntries(r, len(l.pendingEntries(sub)))
	}
	c, err := l.powerCutLocked(sub, fates, keep)
	r := reply{Struck: true, Unsynced: c.Unsynced, Kept: c.Kept, Torn: c.Torn, Fates: fates, Undone: c.Undone, Pending: pending, Logs: logs}
	if err != nil {
		r.Error = err.Error()
	}
	l.struck[sub] = r
	if l.flags != "" {
		os.WriteFile(struckFlag(l.flags, sub), nil, 0o600)
	}
}

// struckFlag is the file that says a sync crash struck folder sub.
func struckFlag(folder, sub string) string {
	return filepath.Join(folder, "struck-"+sub)
}

// fatesStream seeds, with a sync crash's seed, the stream its fates are
// drawn from.
const fatesStream = 0x6a7e5

// Unlinked is the name Disk.Unsynced gives the files open there but no
// longer named: no fate can name them, so their writes are lost.
const Unlinked = "(unlinked)"

// FatedFiles are the files of unsynced (as Disk.Unsynced says them) whose
// writes a cut gives fates to, sorted: not one whose name ends in one of
// noFate, nor a file no longer named (Unlinked).
func FatedFiles(unsynced map[string][]int, noFate []string) []string {
	var files []string
	for f := range unsynced {
		if f != Unlinked && !slices.ContainsFunc(noFate, func(s string) bool { return strings.HasSuffix(f, s) }) {
			files = append(files, f)
		}
	}
	slices.Sort(files)
	return files
}

// DrawFates gives each unsynced write of the files of unsynced (as
// Disk.Unsynced says them; in the order of their names, each file's in
// order) a fate of its own from r: kept 4 times in 8, lost 3 in 8, torn 1
// in 8 when it covers two sectors or more (each of its sectors kept or
// not, some kept and some not). A file whose name ends in one of noFate,
// and a file no longer named, gets none: its writes are lost.
func DrawFates(r *rand.Rand, unsynced map[string][]int, noFate []string) Fates {
	var kept Fates
	for _, f := range FatedFiles(unsynced, noFate) {
		for i, sectors := range unsynced[f] {
			if sectors < 0 {
				continue // a failed sync dropped it
			}
			switch n := r.IntN(8); {
			case n < 4:
				kept = append(kept, Kept{File: f, N: i + 1})
			case n == 7 && sectors >= 2:
				kept = append(kept, Kept{File: f, N: i + 1, Sectors: someSectors(r, sectors)})
			}
		}
	}
	return kept
}

// someSectors is some of a write's n sectors (n >= 2), never none and
// never all, in order.
func someSectors(r *rand.Rand, n int) []int {
	var out []int
	for len(out) == 0 || len(out) == n {
		out = out[:0]
		for s := range n {
			if r.IntN(2) == 0 {
				out = append(out, s)
			}
		}
	}
	return out
}

// FailSync arms folder dir (directly under Dir): the nth sync (fsync or
// fdatasync; from 1) of file (relative to dir) from now answers EIO and
// drops the file's dirty data, never durable after (see sync.go).
func (d *Disk) FailSync(dir, file string, nth int) error {
	return d.arm(dir, armRequest{Fail: true, File: file, Nth: nth})
}

// CrashAtSync arms folder dir: at the nth sync of file (relative to dir)
// from now, the power of the folder goes instead, as Cut with fates drawn
// from seed (DrawFates, files ending in one of noFate given none; seed 0:
// every unsynced write lost); the sync answers EIO. Struck says when it
// struck. End every process on the folder, then Thaw.
func (d *Disk) CrashAtSync(dir, file string, nth int, seed uint64, noFate []string) error {
	return d.arm(dir, armRequest{File: file, Nth: nth, Fates: seed, NoFate: noFate})
}

func (d *Disk) arm(dir string, a armRequest) error {
	sub, err := d.folderOf(dir)
	if err != nil {
		return err
	}
	if a.File == "" || a.Nth < 1 {
		return fmt.Errorf("lossyfs: a sync fault needs a file and a count from 1 (got %q, %d)", a.File, a.Nth)
	}
	_, err = d.call(request{Op: "arm", Dir: sub, Arm: &a})
	return err
}

// Struck says whether a power cut at a sync (CrashAtSync) struck folder
// dir since it was last asked, and what it lost and kept. It is cheap
// when none did (a look for a flag file, no round trip to the server), so
// that it can be asked after every step.
func (d *Disk) Struck(dir string) (Cut, Fates, bool, error) {
	sub, err := d.folderOf(dir)
	if err != nil {
		return Cut{}, nil, false, err
	}
	if _, err := os.Stat(struckFlag(d.folder, sub)); err != nil {
		return Cut{}, nil, false, nil
	}
	r, err := d.call(request{Op: "struck", Dir: sub})
	return Cut{Unsynced: r.Unsynced, Kept: r.Kept, Torn: r.Torn, Undone: r.Undone, Pending: r.Pending, Logs: r.Logs}, r.Fates, r.Struck, err
}

// armRequest is a sync fault to arm, as the program asks the server.
type armRequest struct {
	Fail        bool     `json:"fail,omitempty"`
	File        string   `json:"file"`
	Nth         int      `json:"nth"`
	Fates       uint64   `json:"fates,omitempty"`
	NoFate      []string `json:"no_fate,omitempty"`
	Explicit    bool     `json:"explicit,omitempty"`
	Kept        Fates    `json:"kept,omitempty"`
	KeepEntries int      `json:"keep_entries,omitempty"`
	Logs        bool     `json:"logs,omitempty"`
}

// armed arms a sync fault on folder sub.
func (l *lossy) armed(sub string, a armRequest) {
	k := armCrash
	if a.Fail {
		k = armFail
	}
	l.armsMu.Lock()
	defer l.armsMu.Unlock()
	l.arms[sub] = append(l.arms[sub], arm{kind: k, file: a.File, left: a.Nth, fates: a.Fates, noFate: a.NoFate,
		explicit: a.Explicit, kept: a.Kept, keepEntries: a.KeepEntries, logs: a.Logs})
}

// struckReply answers whether a sync crash struck folder sub, and forgets
// it.
func (l *lossy) struckReply(sub string) reply {
	l.cut.Lock()
	defer l.cut.Unlock()
	r := l.struck[sub]
	delete(l.struck, sub)
	if l.flags != "" {
		os.Remove(struckFlag(l.flags, sub))
	}
	return r
}
