package lossyfs

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// Directory entries. Under a model (SetEntryModel, per folder) a create,
// link, symlink, mknod, rename or unlink of a file is not durable when it
// returns: it is logged, and a cut undoes those of the folder's entry ops
// not yet durable but the first ones its Cut keeps (KeepEntries), newest
// first, as a file system whose directory blocks never reached the disk.
// What makes an entry op durable is the model's:
//
//   - EntriesPOSIX, strict POSIX: only a sync of its directory (fsync on
//     the directory's descriptor), of both directories for a rename. POSIX
//     (fsync) promises only the file's own data, and Linux's fsync(2)
//     says "calling fsync() does not necessarily ensure that the entry in
//     the directory containing the file has also reached disk. For that an
//     explicit fsync() on a file descriptor for the directory is also
//     needed". SQLite does that: its atomic-commit page
//     (sqlite.org/atomiccommit.html) and os_unix.c (UNIXFILE_DIRSYNC) sync
//     the directory after it creates a rollback journal or a WAL, which
//     makes every entry op of the directory before it durable. An op made
//     durable makes durable with it every earlier op on a name it touches
//     (POSIX is silent; a cut could not undo that earlier op consistently),
//     so the disk may hold more than POSIX requires, never less.
//   - EntriesExt4Ordered, ext4 with data=ordered (its default): entry ops
//     are metadata in one journal, committed in order, and every fsync of
//     any file or directory of the file system commits the running
//     transaction, so each sync makes every entry op before it durable
//     (ext4's Documentation/filesystems/ext4.rst, data=ordered; jbd2's
//     one running transaction), and a cut keeps a prefix of the others.
//
// Under both, a cut keeps a prefix (in the order they were made) of the
// entry ops not yet durable: under ext4's journal exactly the states it
// allows; under POSIX, which allows any subset, some of them. Folders
// (mkdir, rmdir, a folder's rename) stay durable at once, and the rename or
// removal of a folder makes the entry ops logged before it durable first,
// so that no logged path goes stale. The removal of SQLite's rollback
// journal is durable at once (sqliteJournal). With no model
// (EntriesDurable) every entry op is durable at once, as before.

// The entry models (SetEntryModel).
const (
	EntriesDurable     = ""
	EntriesPOSIX       = "posix"
	EntriesExt4Ordered = "ext4_ordered"
)

// EntryModels are the models a run may follow, as SetEntryModel takes them.
var EntryModels = []string{EntriesPOSIX, EntriesExt4Ordered}

// entryOp is one directory entry op not yet durable.
type entryOp struct {
	kind string // create, link, symlink, mknod, rename, exchange, unlink
	name string // the name made or removed (a rename's new one), relative to the folder
	from string // a rename's old name
	// stash is where a link to what the op removed or replaced waits, to
	// be put back if the op is undone ("" for none).
	stash string
	// need: under POSIX, the directories (relative to the folder) whose
	// sync it waits for.
	need map[string]bool
}

func (o entryOp) String() string {
	switch o.kind {
	case "rename", "exchange":
		return fmt.Sprintf("%s %s -> %s", o.kind, o.from, o.name)
	}
	return o.kind + " " + o.name
}

// folderEntries is a folder's model and its entry ops not yet durable.
type folderEntries struct {
	model string
	ops   []entryOp
	n     int // stash names made
	// stale are the names (relative to the folder) a cut changed behind the
	// kernel's back, for the thaw to tell it.
	stale []string
}

func dirOf(name string) string { return filepath.Dir(name) }

// entriesOf is folder sub's entries when it has a model, else nil.
// l.entryMu is held.
func (l *lossy) entriesOf(sub string) *folderEntries {
	if fe := l.entries[sub]; fe != nil && fe.model != EntriesDurable {
		return fe
	}
	return nil
}

// stashDir is where folder sub's stashed entries wait: beside the backing
// folder, on its file system, out of the mount.
func (l *lossy) stashDir(sub string) string {
	return filepath.Join(filepath.Dir(l.backing), "stash", sub)
}

// stashed links the backing file at p (if any) into sub's stash, for an op
// that removes or replaces it: its path there, "" when there is nothing.
func (l *lossy) stashed(fe *folderEntries, sub, p string) (string, error) {
	var st syscall.Stat_t
	if err := syscall.Lstat(p, &st); err != nil {
		return "", nil
	}
	dir := l.stashDir(sub)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	fe.n++
	s := filepath.Join(dir, strconv.Itoa(fe.n))
	return s, os.Link(p, s)
}

// entryOp runs fn, an entry op on the names (relative to the mount point)
// names, the first the one it makes or removes and the second, for a
// rename, the old one; under the folder's model it is logged. l.cut is
// held (shared).
func (n *node) entryOp(kind string, names []string, fn func() syscall.Errno) syscall.Errno {
	l := n.l
	sub := subOf(names[0])
	l.entryMu.Lock()
	defer l.entryMu.Unlock()
	fe := l.entriesOf(sub)
	if fe == nil {
		return fn()
	}
	rel := func(p string) string { r, _ := filepath.Rel(sub, p); return filepath.ToSlash(r) }
	op := entryOp{kind: kind, name: rel(names[0])}
	if len(names) > 1 {
		op.from = rel(names[1])
	}
	target := filepath.Join(l.backing, names[0])
	if kind == "create" {
		if _, err := os.Lstat(target); err == nil {
			return fn() // no new name: nothing to undo
		}
	}
	if kind == "rename" || kind == "exchange" {
		var st syscall.Stat_t
		if syscall.Lstat(filepath.Join(l.backing, names[1]), &st) == nil && st.Mode&syscall.S_IFMT == syscall.S_IFDIR {
			// A folder's rename is durable at once, and the paths logged
			// before it must not go stale.
			l.commitEntries(fe, sub)
			return fn()
		}
	}
	if kind == "unlink" || kind == "rename" {
		s, err := l.stashed(fe, sub, target)
		if err != nil {
			return gofs.ToErrno(err)
		}
		op.stash = s
	}
	errno := fn()
	if errno != 0 {
		if op.stash != "" {
			os.Remove(op.stash)
		}
		return errno
	}
	if fe.model == EntriesPOSIX {
		op.need = map[string]bool{dirOf(op.name): true}
		if op.from != "" {
			op.need[dirOf(op.from)] = true
		}
	}
	fe.ops = append(fe.ops, op)
	if kind == "unlink" && strings.HasSuffix(op.name, sqliteJournal) {
		// SQLite's commit in journal_mode=DELETE: durable at once.
		last := len(fe.ops) - 1
		l.settle(fe, sub, func(i int, _ entryOp) bool { return i == last })
	}
	return 0
}

// sqliteJournal ends the name of SQLite's rollback journal. Its removal
// commits a transaction in journal_mode=DELETE (SQLite's default), and
// SQLite syncs the directory after it only under synchronous=EXTRA (its
// synchronous pragma), not FULL, its default too: the seeds' Durable is
// read as FULL (spec.PowerLossModel), so the model does not undo it, in
// either entry model; a cut that did would roll back a commit FULL
// acknowledged, which SQLite documents as the durability FULL gives up.
const sqliteJournal = "-journal"

// commitEntries makes every logged entry op of sub durable. l.entryMu is
// held.
func (l *lossy) commitEntries(fe *folderEntries, sub string) {
	if len(fe.ops) == 0 {
		return
	}
	fe.ops = nil
	os.RemoveAll(l.stashDir(sub))
}

// entriesSynced is a sync of folder sub's dir (relative to it; "" for a
// file's sync, which is no directory's): under ext4's ordered mode every
// sync commits every entry op; under POSIX a directory's sync makes those
// that waited only for it durable.
func (l *lossy) entriesSynced(sub, dir string) {
	l.entryMu.Lock()
	defer l.entryMu.Unlock()
	fe := l.entriesOf(sub)
	if fe == nil || len(fe.ops) == 0 {
		return
	}
	if fe.model == EntriesExt4Ordered {
		l.commitEntries(fe, sub)
		return
	}
	if dir == "" {
		return
	}
	l.settle(fe, sub, func(_ int, op entryOp) bool {
		delete(op.need, dir)
		return len(op.need) == 0
	})
}

// settle makes durable the entry ops of folder sub that durable picks (it
// sees every op, newest first). An op made durable makes durable with it
// every earlier one that touched a name it touches (newest first, so that
// this carries back): else undoing that earlier op would find the name as
// the durable op left it, not as it left it (create sub/a; rename sub/a ->
// c; rename c -> a; a sync of . alone). The disk then holds more than
// POSIX requires, never less. l.entryMu is held.
func (l *lossy) settle(fe *folderEntries, sub string, durable func(i int, op entryOp) bool) {
	done := make([]bool, len(fe.ops))
	touched := map[string]bool{}
	for i := len(fe.ops) - 1; i >= 0; i-- {
		op := fe.ops[i]
		if !durable(i, op) && !touched[op.name] && (op.from == "" || !touched[op.from]) {
			continue
		}
		done[i] = true
		touched[op.name] = true
		if op.from != "" {
			touched[op.from] = true
		}
	}
	kept := fe.ops[:0]
	for i, op := range fe.ops {
		if !done[i] {
			kept = append(kept, op)
		} else if op.stash != "" {
			os.Remove(op.stash)
		}
	}
	fe.ops = kept
	if len(fe.ops) == 0 {
		os.RemoveAll(l.stashDir(sub))
	}
}

// pendingEntries is folder sub's entry ops not yet durable, oldest first.
func (l *lossy) pendingEntries(sub string) []string {
	l.entryMu.Lock()
	defer l.entryMu.Unlock()
	fe := l.entriesOf(sub)
	if fe == nil {
		return nil
	}
	out := make([]string, len(fe.ops))
	for i, op := range fe.ops {
		out[i] = op.String()
	}
	return out
}

// undoEntries undoes, newest first, sub's entry ops not yet durable but the
// first keep, and answers what it undid (oldest first). l.cut is held.
func (l *lossy) undoEntries(sub string, keep int) ([]string, error) {
	l.entryMu.Lock()
	defer l.entryMu.Unlock()
	fe := l.entriesOf(sub)
	if fe == nil {
		return nil, nil
	}
	defer l.commitEntries(fe, sub)
	keep = min(max(keep, 0), len(fe.ops))
	top := filepath.Join(l.backing, sub)
	var undone []string
	var first error
	note := func(err error) {
		if err != nil && first == nil {
			first = err
		}
	}
	for i := len(fe.ops) - 1; i >= keep; i-- {
		op := fe.ops[i]
		name := filepath.Join(top, op.name)
		switch op.kind {
		case "rename":
			note(os.Rename(name, filepath.Join(top, op.from)))
			fe.stale = append(fe.stale, op.from)
		case "exchange":
			note(unix.Renameat2(unix.AT_FDCWD, name, unix.AT_FDCWD, filepath.Join(top, op.from), unix.RENAME_EXCHANGE))
			fe.stale = append(fe.stale, op.from)
		case "unlink":
		default: // create, link, symlink, mknod
			note(os.Remove(name))
		}
		if op.stash != "" {
			note(os.Link(op.stash, name))
		}
		fe.stale = append(fe.stale, op.name)
		undone = append([]string{op.String()}, undone...)
	}
	if first != nil {
		return undone, fmt.Errorf("lossyfs: undoing the entry ops of %s: %w", sub, first)
	}
	return undone, nil
}

// entriesThawed tells the kernel, and the file system's tree of inodes,
// of the names a cut of folder sub changed. No lock is held: the kernel
// may call back.
func (l *lossy) entriesThawed(sub string, top *gofs.Inode) {
	l.entryMu.Lock()
	var stale []string
	if fe := l.entries[sub]; fe != nil {
		stale, fe.stale = fe.stale, nil
	}
	l.entryMu.Unlock()
	for _, name := range stale {
		dir := top
		for _, part := range splitPath(dirOf(name)) {
			if dir = dir.GetChild(part); dir == nil {
				break
			}
		}
		if dir == nil {
			continue
		}
		base := filepath.Base(name)
		dir.RmChild(base)
		dir.NotifyEntry(base)
	}
}

func splitPath(p string) []string {
	if p == "." || p == "" {
		return nil
	}
	return strings.Split(filepath.ToSlash(p), "/")
}

// setEntryModel sets folder sub's model, making what it logged durable.
func (l *lossy) setEntryModel(sub, model string) error {
	switch model {
	case EntriesDurable, EntriesPOSIX, EntriesExt4Ordered:
	default:
		return fmt.Errorf("lossyfs: unknown entry model %q (want %q or %q)", model, EntriesPOSIX, EntriesExt4Ordered)
	}
	l.entryMu.Lock()
	defer l.entryMu.Unlock()
	if fe := l.entries[sub]; fe != nil {
		l.commitEntries(fe, sub)
	}
	l.entries[sub] = &folderEntries{model: model}
	return nil
}

// forgetEntries forgets folder sub (removed), or commits what it logged
// before a folder inside it is removed.
func (l *lossy) forgetEntries(sub string, gone bool) {
	l.entryMu.Lock()
	defer l.entryMu.Unlock()
	if fe := l.entries[sub]; fe != nil {
		l.commitEntries(fe, sub)
	}
	if gone {
		delete(l.entries, sub)
	}
}

// drawKeepEntries draws how many of n entry ops not yet durable a cut
// keeps, a prefix: any number from none to all.
func drawKeepEntries(r *rand.Rand, n int) int {
	if n == 0 {
		return 0
	}
	return r.IntN(n + 1)
}

// SetEntryModel sets the directory-entry model of folder dir (directly
// under Dir): EntriesPOSIX, EntriesExt4Ordered, or EntriesDurable (entry
// ops durable at once, the default).
func (d *Disk) SetEntryModel(dir, model string) error {
	sub, err := d.folderOf(dir)
	if err != nil {
		return err
	}
	_, err = d.call(request{Op: "entry_model", Dir: sub, Model: model})
	return err
}

// Entries is folder dir's entry ops not yet durable, oldest first, as a cut
// names them ("rename a.tmp -> a").
func (d *Disk) Entries(dir string) ([]string, error) {
	sub, err := d.folderOf(dir)
	if err != nil {
		return nil, err
	}
	r, err := d.call(request{Op: "entries", Dir: sub})
	return r.Entries, err
}

// OpendirHandle opens a folder as the loopback does, with a handle whose
// sync (fsync on the folder's descriptor) the entry model sees.
func (n *node) OpendirHandle(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	fh, fuseFlags, errno := n.LoopbackNode.OpendirHandle(ctx, flags)
	if errno != 0 {
		return fh, fuseFlags, errno
	}
	return &dirHandle{FileHandle: fh, n: n, rel: n.rel()}, fuseFlags, 0
}

// dirHandle is an open folder: the loopback's, passed through.
type dirHandle struct {
	gofs.FileHandle
	n   *node
	rel string // relative to the mount point
}

var (
	_ gofs.FileReaddirenter = (*dirHandle)(nil)
	_ gofs.FileSeekdirer    = (*dirHandle)(nil)
	_ gofs.FileReleasedirer = (*dirHandle)(nil)
	_ gofs.FileFsyncdirer   = (*dirHandle)(nil)
)

func (d *dirHandle) Readdirent(ctx context.Context) (*fuse.DirEntry, syscall.Errno) {
	return d.FileHandle.(gofs.FileReaddirenter).Readdirent(ctx)
}

func (d *dirHandle) Seekdir(ctx context.Context, off uint64) syscall.Errno {
	return d.FileHandle.(gofs.FileSeekdirer).Seekdir(ctx, off)
}

func (d *dirHandle) Releasedir(ctx context.Context, releaseFlags uint32) {
	if r, ok := d.FileHandle.(gofs.FileReleasedirer); ok {
		r.Releasedir(ctx, releaseFlags)
	}
}

// Fsyncdir syncs the folder: under POSIX the entry ops in it are then
// durable, under ext4's ordered mode every one of its folder's.
func (d *dirHandle) Fsyncdir(ctx context.Context, flags uint32) syscall.Errno {
	d.n.l.cut.RLock()
	defer d.n.l.cut.RUnlock()
	if d.n.frozen(d.rel) {
		return syscall.EIO
	}
	if fs, ok := d.FileHandle.(gofs.FileFsyncdirer); ok {
		if errno := fs.Fsyncdir(ctx, flags); errno != 0 {
			return errno
		}
	}
	sub := subOf(d.rel)
	dir := "."
	if r, err := filepath.Rel(sub, d.rel); err == nil {
		dir = filepath.ToSlash(r)
	}
	d.n.l.entriesSynced(sub, dir)
	return 0
}
