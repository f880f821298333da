package lossyfs

import (
	"context"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
	"golang.org/x/sys/unix"
)

// The file system itself. It is a loopback over the backing folder, so the
// backing folder always holds what the processes see (the current image).
// What makes it forgetful is a log per file of the writes and truncations
// made since its last fsync or fdatasync: each change keeps the bytes it
// wrote (to apply it again) and the bytes and size it replaced (to undo
// it). A sync empties the log: the durable image is then the current one.
// A cut undoes every logged change, newest first, which leaves each file as
// it was at its last sync; then it applies again, in the order they were
// made, the changes the cut's fates keep (any subset, across files; a torn
// write only in some of its sectors), as a disk that wrote some of them
// before it lost power.
//
// Directory entries (create, link, rename, unlink) are durable as soon as
// they return, as on a file system that journals its metadata
// synchronously (LazyFS's choice), unless the folder follows an entry
// model (entry.go): then they are logged too, and a cut may undo them.
// Folders (mkdir, rmdir) and attributes (chmod) are durable at once.
//
// A cut acts on one folder directly under the mount point (a run's; the
// simulator runs seeds side by side in folders of their own). Between the
// cut and the thaw the folder is frozen: every change to it fails with
// EIO, as nothing a process does after the power went can reach the disk.
// Handles opened before the cut stay dead after the thaw: a change through
// one fails with EIO, never applied. Reads through them still work (they
// read the durable image): an in-process SQLite handle that is closed after
// the cut reads its mmap'd -shm file, and a read that failed there would be
// a SIGBUS, not an error.

// lossy is the state of the file system.
type lossy struct {
	backing string
	root    *gofs.Inode

	// cut is the barrier: every change and read holds it shared, a cut
	// holds it alone, so an operation in flight is wholly before the cut or
	// wholly after it.
	cut    sync.RWMutex
	gens   map[string]uint64 // per folder, bumped by each cut
	frozen map[string]bool

	filesMu sync.Mutex
	files   map[uint64]*file // by backing inode, while open or unsynced

	// arms are the sync faults armed on each folder (sync.go); struck,
	// for a folder whose power a sync crash cut, what it lost, until
	// asked. struck is guarded by cut.
	armsMu sync.Mutex
	arms   map[string][]arm
	struck map[string]reply
	// flags is the folder (the mount's private one, off the mount) where
	// a struck folder's flag file tells the program, which looks for it
	// after every step, without a round trip to the server.
	flags string

	// entries are each folder's directory-entry model and the entry ops
	// it has not made durable (entry.go).
	entryMu sync.Mutex
	entries map[string]*folderEntries

	// stores are the pages being handed to the kernel (store.go): a
	// thaw waits for them before it drops the folder's pages.
	stores sync.RWMutex
}

// file is a backing file that is open or has unsynced changes.
type file struct {
	mu   sync.Mutex
	ino  uint64
	sub  string // the folder under the mount point it lives in
	fd   int    // the file system's own descriptor on it, to undo and redo
	open int    // handles open on it
	log  []change
	// node is its inode in the tree (from its first open): while a handle
	// is open the kernel keeps it, and its pages, whether or not a name
	// still leads to it (filesMu).
	node *gofs.Inode
	// pages is what the kernel may hold of it (store.go).
	pages pages
}

// change is one write or truncation since the file's last sync.
type change struct {
	// dropped: a failed sync dropped it (syncFailed): never durable, so
	// a cut loses it whatever its fate, and a later sync does not make
	// it durable.
	dropped bool
	// durable: the change that takes the current image back to the
	// durable one, which a sync after a failed one leaves first in the
	// log (dropped too): its old bytes, from oldAt, are the durable
	// image's, up to size; before oldAt the two images are the same.
	durable bool
	trunc   bool
	off     int64  // a write's offset; a truncation's new size
	data    []byte // a write's bytes
	size    int64  // the file's size before
	old     []byte // the bytes the change replaced, at oldAt
	oldAt   int64
}

func newLossy(backing string) *lossy {
	return &lossy{backing: backing, gens: map[string]uint64{}, frozen: map[string]bool{}, files: map[uint64]*file{},
		arms: map[string][]arm{}, struck: map[string]reply{}, entries: map[string]*folderEntries{}}
}

// subOf is the folder under the mount point that rel (a path relative to
// it) is in.
func subOf(rel string) string {
	sub, _, _ := strings.Cut(filepath.ToSlash(rel), "/")
	return sub
}

// track is the state of the backing file fd is open on, made if needed;
// it counts one more handle when handle is true.
func (l *lossy) track(fd int, sub string, handle bool) (*file, syscall.Errno) {
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		return nil, gofs.ToErrno(err)
	}
	l.filesMu.Lock()
	defer l.filesMu.Unlock()
	f := l.files[st.Ino]
	if f == nil {
		own, err := syscall.Open("/proc/self/fd/"+strconv.Itoa(fd), syscall.O_RDWR|syscall.O_CLOEXEC, 0)
		if err != nil {
			return nil, gofs.ToErrno(err)
		}
		f = &file{ino: st.Ino, sub: sub, fd: own, pages: pages{base: st.Size}}
		l.files[st.Ino] = f
	}
	if handle {
		f.open++
	}
	return f, 0
}

// release lets go of one handle of f (or of none), and forgets f when
// nothing is open on it and it has nothing unsynced, or it was unlinked.
func (l *lossy) release(f *file, handle bool) {
	l.filesMu.Lock()
	defer l.filesMu.Unlock()
	f.mu.Lock()
	defer f.mu.Unlock()
	if handle {
		f.open--
	}
	if f.open > 0 {
		return
	}
	var st syscall.Stat_t
	if len(f.log) > 0 && syscall.Fstat(f.fd, &st) == nil && st.Nlink > 0 {
		return
	}
	if l.files[f.ino] == f {
		delete(l.files, f.ino)
	}
	syscall.Close(f.fd)
	f.fd = -1
	f.log = nil
}

// write writes data at off through fd and logs it. f.mu is held.
func (f *file) write(fd int, data []byte, off int64) (int, syscall.Errno) {
	var st syscall.Stat_t
	if err := syscall.Fstat(f.fd, &st); err != nil {
		return 0, gofs.ToErrno(err)
	}
	c := change{off: off, size: st.Size, oldAt: off}
	if off < st.Size {
		c.old = make([]byte, min(int64(len(data)), st.Size-off))
		if _, err := syscall.Pread(f.fd, c.old, off); err != nil {
			return 0, gofs.ToErrno(err)
		}
	}
	n, err := syscall.Pwrite(fd, data, off)
	if n > 0 {
		c.data = append([]byte(nil), data[:n]...)
		f.log = append(f.log, c)
	}
	return max(n, 0), gofs.ToErrno(err)
}

// truncate sets the file's size and logs it. f.mu is held.
func (f *file) truncate(size int64) syscall.Errno {
	var st syscall.Stat_t
	if err := syscall.Fstat(f.fd, &st); err != nil {
		return gofs.ToErrno(err)
	}
	if size == st.Size && !slices.ContainsFunc(f.log, func(c change) bool { return c.dropped }) {
		// Changes nothing, so nothing to lose; but where a failed sync
		// dropped data, the durable size may not be the current one.
		return 0
	}
	c := change{trunc: true, off: size, size: st.Size, oldAt: size}
	if size < st.Size {
		c.old = make([]byte, st.Size-size)
		if _, err := syscall.Pread(f.fd, c.old, size); err != nil {
			return gofs.ToErrno(err)
		}
	}
	if err := syscall.Ftruncate(f.fd, size); err != nil {
		return gofs.ToErrno(err)
	}
	f.log = append(f.log, c)
	return 0
}

// sectors is how many sectors (SectorSize) a write covers; 0 for a
// truncation, -1 for a change a failed sync dropped (it has no fate).
func (c change) sectors() int {
	if c.dropped {
		return -1
	}
	if c.trunc || len(c.data) == 0 {
		return 0
	}
	first, last := c.off/SectorSize, (c.off+int64(len(c.data))-1)/SectorSize
	return int(last - first + 1)
}

// forget undoes every unsynced change, newest first, which leaves the file
// as its last sync did; then it applies again, in order, those kept names
// (by their number, from 1), a torn write only in the sectors it keeps.
// It answers how many it kept whole and torn. f.mu is held.
func (f *file) forget(kept map[int]Kept) (int, int, error) {
	for i := len(f.log) - 1; i >= 0; i-- {
		c := f.log[i]
		if err := syscall.Ftruncate(f.fd, c.size); err != nil {
			return 0, 0, err
		}
		if len(c.old) > 0 {
			if _, err := syscall.Pwrite(f.fd, c.old, c.oldAt); err != nil {
				return 0, 0, err
			}
		}
	}
	whole, torn := 0, 0
	for i, c := range f.log {
		k, ok := kept[i+1]
		if !ok || c.dropped {
			continue
		}
		var err error
		switch {
		case c.trunc:
			whole++
			err = syscall.Ftruncate(f.fd, c.off)
		case len(k.Sectors) == 0:
			whole++
			_, err = syscall.Pwrite(f.fd, c.data, c.off)
		default:
			torn++
			err = c.tear(f.fd, k.Sectors)
		}
		if err != nil {
			return whole, torn, err
		}
	}
	f.log = nil
	return whole, torn, nil
}

// tear writes again, of write c, only the bytes that fall in the sectors
// keep names (numbered from 0, c's first); a number past c's last is
// nothing.
func (c change) tear(fd int, keep []int) error {
	first := c.off / SectorSize
	end := c.off + int64(len(c.data))
	for _, s := range keep {
		lo := max((first+int64(s))*SectorSize, c.off)
		hi := min((first+int64(s)+1)*SectorSize, end)
		if s < 0 || lo >= hi {
			continue
		}
		if _, err := syscall.Pwrite(fd, c.data[lo-c.off:hi-c.off], lo); err != nil {
			return err
		}
	}
	return nil
}

// live reports whether a handle of folder sub opened at gen may still
// change it. l.cut is held.
func (l *lossy) live(sub string, gen uint64) bool {
	return !l.frozen[sub] && l.gens[sub] == gen
}

// node is a file or folder of the file system: the loopback's, with every
// change checked against the cut and file data going through handles.
type node struct {
	*gofs.LoopbackNode
	l *lossy
}

var (
	_ gofs.NodeWrapChilder = (*node)(nil)
	_ gofs.NodeOpener      = (*node)(nil)
	_ gofs.NodeCreater     = (*node)(nil)
	_ gofs.NodeSetattrer   = (*node)(nil)
	_ gofs.NodeTmpfiler    = (*node)(nil)
)

func (n *node) WrapChild(ctx context.Context, ops gofs.InodeEmbedder) gofs.InodeEmbedder {
	return &node{LoopbackNode: ops.(*gofs.LoopbackNode), l: n.l}
}

func (n *node) rel() string              { return n.Path(n.Root()) }
func (n *node) backing() string          { return filepath.Join(n.l.backing, n.rel()) }
func (n *node) child(name string) string { return filepath.Join(n.rel(), name) }

// frozen reports whether a change to rel must fail: its folder's power is
// cut. l.cut is held.
func (n *node) frozen(rel string) bool { return n.l.frozen[subOf(rel)] }

// guard runs a metadata change of rel unless its folder is frozen.
func (n *node) guard(rel string, fn func() syscall.Errno) syscall.Errno {
	n.l.cut.RLock()
	defer n.l.cut.RUnlock()
	if n.frozen(rel) {
		return syscall.EIO
	}
	return fn()
}

func (n *node) Mkdir(ctx context.Context, name string, mode uint32, out *fuse.EntryOut) (ch *gofs.Inode, errno syscall.Errno) {
	errno = n.guard(n.child(name), func() syscall.Errno {
		ch, errno = n.LoopbackNode.Mkdir(ctx, name, mode, out)
		return errno
	})
	return ch, errno
}

func (n *node) Mknod(ctx context.Context, name string, mode, rdev uint32, out *fuse.EntryOut) (ch *gofs.Inode, errno syscall.Errno) {
	errno = n.guard(n.child(name), func() syscall.Errno {
		return n.entryOp("mknod", []string{n.child(name)}, func() syscall.Errno {
			ch, errno = n.LoopbackNode.Mknod(ctx, name, mode, rdev, out)
			return errno
		})
	})
	return ch, errno
}

func (n *node) Symlink(ctx context.Context, target, name string, out *fuse.EntryOut) (ch *gofs.Inode, errno syscall.Errno) {
	errno = n.guard(n.child(name), func() syscall.Errno {
		return n.entryOp("symlink", []string{n.child(name)}, func() syscall.Errno {
			ch, errno = n.LoopbackNode.Symlink(ctx, target, name, out)
			return errno
		})
	})
	return ch, errno
}

func (n *node) Link(ctx context.Context, target gofs.InodeEmbedder, name string, out *fuse.EntryOut) (ch *gofs.Inode, errno syscall.Errno) {
	errno = n.guard(n.child(name), func() syscall.Errno {
		return n.entryOp("link", []string{n.child(name)}, func() syscall.Errno {
			ch, errno = n.LoopbackNode.Link(ctx, target, name, out)
			return errno
		})
	})
	return ch, errno
}

func (n *node) Rmdir(ctx context.Context, name string) syscall.Errno {
	rel := n.child(name)
	// A folder's removal is durable at once: what was logged in it first.
	n.l.forgetEntries(subOf(rel), !strings.Contains(filepath.ToSlash(rel), "/"))
	errno := n.guard(rel, func() syscall.Errno { return n.LoopbackNode.Rmdir(ctx, name) })
	if errno == 0 && !strings.Contains(filepath.ToSlash(rel), "/") {
		// A folder directly under the mount point is gone: so is its
		// power state.
		n.l.cut.Lock()
		delete(n.l.gens, rel)
		delete(n.l.frozen, rel)
		delete(n.l.struck, rel)
		n.l.cut.Unlock()
		n.l.armsMu.Lock()
		delete(n.l.arms, rel)
		n.l.armsMu.Unlock()
		n.l.forgetFiles(rel)
	}
	return errno
}

// forgetFiles forgets the files of folder sub (removed) that nothing has
// open: each was unlinked with changes unsynced, and kept (for a cut to
// undo them, or its name a stash's until the folder went), which would
// hold its descriptor for as long as the server runs.
func (l *lossy) forgetFiles(sub string) {
	l.filesMu.Lock()
	defer l.filesMu.Unlock()
	for ino, f := range l.files {
		f.mu.Lock()
		if f.sub == sub && f.open == 0 {
			delete(l.files, ino)
			syscall.Close(f.fd)
			f.fd = -1
			f.log = nil
		}
		f.mu.Unlock()
	}
}

func (n *node) Unlink(ctx context.Context, name string) syscall.Errno {
	return n.guard(n.child(name), func() syscall.Errno {
		var st syscall.Stat_t
		known := syscall.Lstat(filepath.Join(n.backing(), name), &st) == nil
		if errno := n.entryOp("unlink", []string{n.child(name)}, func() syscall.Errno { return n.LoopbackNode.Unlink(ctx, name) }); errno != 0 {
			return errno
		}
		// What was never synced of a file no one can open again is
		// nothing a cut could bring back.
		if known {
			n.l.filesMu.Lock()
			f := n.l.files[st.Ino]
			n.l.filesMu.Unlock()
			if f != nil {
				n.l.release(f, false)
			}
		}
		return 0
	})
}

func (n *node) Rename(ctx context.Context, name string, newParent gofs.InodeEmbedder, newName string, flags uint32) syscall.Errno {
	to, ok := newParent.(*node)
	if !ok {
		return syscall.EXDEV
	}
	n.l.cut.RLock()
	defer n.l.cut.RUnlock()
	if n.frozen(n.child(name)) || n.frozen(to.child(newName)) {
		return syscall.EIO
	}
	kind := "rename"
	if flags&unix.RENAME_EXCHANGE != 0 {
		kind = "exchange"
	}
	return n.entryOp(kind, []string{to.child(newName), n.child(name)}, func() syscall.Errno {
		return n.LoopbackNode.Rename(ctx, name, to.LoopbackNode, newName, flags)
	})
}

// Tmpfile is refused: an unnamed file the loopback would open bypasses the
// log.
func (n *node) Tmpfile(ctx context.Context, flags uint32, mode uint32, out *fuse.EntryOut) (*gofs.Inode, gofs.FileHandle, uint32, syscall.Errno) {
	return nil, nil, 0, syscall.EOPNOTSUPP
}

func (n *node) Open(ctx context.Context, flags uint32) (gofs.FileHandle, uint32, syscall.Errno) {
	n.l.cut.RLock()
	defer n.l.cut.RUnlock()
	rel := n.rel()
	if n.frozen(rel) {
		return nil, 0, syscall.EIO
	}
	fd, err := syscall.Open(n.backing(), int(flags&^(syscall.O_APPEND|syscall.O_TRUNC|fuse.FMODE_EXEC))|syscall.O_CLOEXEC, 0)
	if err != nil {
		return nil, 0, gofs.ToErrno(err)
	}
	h, errno := n.l.handle(fd, rel, flags, n.EmbeddedInode())
	return h, keepCache, errno
}

func (n *node) Create(ctx context.Context, name string, flags uint32, mode uint32, out *fuse.EntryOut) (*gofs.Inode, gofs.FileHandle, uint32, syscall.Errno) {
	n.l.cut.RLock()
	defer n.l.cut.RUnlock()
	rel := n.child(name)
	if n.frozen(rel) {
		return nil, nil, 0, syscall.EIO
	}
	fd := -1
	if errno := n.entryOp("create", []string{rel}, func() syscall.Errno {
		var err error
		fd, err = syscall.Open(filepath.Join(n.backing(), name), int(flags&^(syscall.O_APPEND|syscall.O_TRUNC))|syscall.O_CREAT|syscall.O_CLOEXEC, mode)
		return gofs.ToErrno(err)
	}); errno != 0 {
		return nil, nil, 0, errno
	}
	// The loopback's own lookup makes the inode, so that it is the one a
	// later lookup finds.
	ch, errno := n.LoopbackNode.Lookup(ctx, name, out)
	if errno != 0 {
		syscall.Close(fd)
		return nil, nil, 0, errno
	}
	h, errno := n.l.handle(fd, rel, flags, ch)
	return ch, h, keepCache, errno
}

// keepCache lets the kernel keep a file's pages across opens: every write
// goes through its cache on the way here, so the cache holds what the
// backing file does, but after a cut, which a thaw has it drop.
const keepCache = fuse.FOPEN_KEEP_CACHE

// handle is a handle on fd of file rel (relative to the mount point; its
// inode in the tree is ino), opened with flags (a truncation they ask for
// is logged). l.cut is held.
func (l *lossy) handle(fd int, rel string, flags uint32, ino *gofs.Inode) (*handle, syscall.Errno) {
	sub := subOf(rel)
	f, errno := l.track(fd, sub, true)
	if errno != 0 {
		syscall.Close(fd)
		return nil, errno
	}
	l.filesMu.Lock()
	if f.node == nil {
		f.node = ino
	}
	l.filesMu.Unlock()
	name, _ := filepath.Rel(sub, rel)
	h := &handle{l: l, fd: fd, f: f, node: ino, name: filepath.ToSlash(name), gen: l.gens[sub], sync: flags&(syscall.O_SYNC|syscall.O_DSYNC) != 0}
	if flags&syscall.O_TRUNC != 0 && flags&syscall.O_ACCMODE != syscall.O_RDONLY {
		f.mu.Lock()
		errno = f.truncate(0)
		f.mu.Unlock()
		if errno != 0 {
			h.close()
			return nil, errno
		}
	}
	return h, 0
}

func (n *node) Setattr(ctx context.Context, fh gofs.FileHandle, in *fuse.SetAttrIn, out *fuse.AttrOut) syscall.Errno {
	n.l.cut.RLock()
	defer n.l.cut.RUnlock()
	rel := n.rel()
	if n.frozen(rel) {
		return syscall.EIO
	}
	h, _ := fh.(*handle)
	if h != nil && !n.l.live(h.f.sub, h.gen) {
		return syscall.EIO
	}
	p := n.backing()
	if m, ok := in.GetMode(); ok {
		if err := syscall.Chmod(p, m); err != nil {
			return gofs.ToErrno(err)
		}
	}
	uid, uok := in.GetUID()
	gid, gok := in.GetGID()
	if uok || gok {
		u, g := -1, -1
		if uok {
			u = int(uid)
		}
		if gok {
			g = int(gid)
		}
		if err := unix.Fchownat(unix.AT_FDCWD, p, u, g, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return gofs.ToErrno(err)
		}
	}
	if size, ok := in.GetSize(); ok {
		f := (*file)(nil)
		if h != nil {
			f = h.f
		} else {
			fd, err := syscall.Open(p, syscall.O_RDWR|syscall.O_CLOEXEC, 0)
			if err != nil {
				return gofs.ToErrno(err)
			}
			var errno syscall.Errno
			f, errno = n.l.track(fd, subOf(rel), false)
			syscall.Close(fd)
			if errno != 0 {
				return errno
			}
			defer n.l.release(f, false)
		}
		f.mu.Lock()
		errno := f.truncate(int64(size))
		f.mu.Unlock()
		if errno != 0 {
			return errno
		}
	}
	mtime, mok := in.GetMTime()
	atime, aok := in.GetATime()
	if mok || aok {
		ts := []unix.Timespec{{Nsec: unix.UTIME_OMIT}, {Nsec: unix.UTIME_OMIT}}
		if aok {
			ts[0] = unix.NsecToTimespec(atime.UnixNano())
		}
		if mok {
			ts[1] = unix.NsecToTimespec(mtime.UnixNano())
		}
		if err := unix.UtimesNanoAt(unix.AT_FDCWD, p, ts, unix.AT_SYMLINK_NOFOLLOW); err != nil {
			return gofs.ToErrno(err)
		}
	}
	var st syscall.Stat_t
	var err error
	if h != nil {
		err = syscall.Fstat(h.fd, &st)
	} else {
		err = syscall.Lstat(p, &st)
	}
	if err != nil {
		return gofs.ToErrno(err)
	}
	out.FromStat(&st)
	// The attributes stay good as long as a getattr's would: SQLite, as
	// root, chowns every -wal and -shm it opens to their own owner, and
	// fstats them next.
	out.SetTimeout(attrTimeout)
	return 0
}

// attrTimeout is how long the kernel may keep names and attributes: every
// change but a cut's goes through it, and a thaw drops what a cut made
// stale.
const attrTimeout = time.Second

// handle is an open file. It implements the file operations a FUSE
// handle may have, minus passthrough (which would hand the kernel the
// backing file and bypass the log) and minus copy_file_range (the kernel
// then copies with reads and writes).
type handle struct {
	l    *lossy
	fd   int
	f    *file
	node *gofs.Inode // the inode it was opened on
	name string      // the file's path in its folder when it was opened
	gen  uint64      // its folder's generation when it was opened
	sync bool        // opened O_SYNC or O_DSYNC: every write is synced
}

var (
	_ gofs.FileReader    = (*handle)(nil)
	_ gofs.FileWriter    = (*handle)(nil)
	_ gofs.FileFsyncer   = (*handle)(nil)
	_ gofs.FileFlusher   = (*handle)(nil)
	_ gofs.FileReleaser  = (*handle)(nil)
	_ gofs.FileGetattrer = (*handle)(nil)
	_ gofs.FileStatxer   = (*handle)(nil)
	_ gofs.FileAllocater = (*handle)(nil)
)

func (h *handle) Read(ctx context.Context, dest []byte, off int64) (fuse.ReadResult, syscall.Errno) {
	h.l.cut.RLock()
	defer h.l.cut.RUnlock()
	n, err := syscall.Pread(h.fd, dest, off)
	if err != nil {
		return nil, gofs.ToErrno(err)
	}
	h.f.mu.Lock()
	h.f.pages.read(off, len(dest))
	h.f.mu.Unlock()
	return fuse.ReadResultData(dest[:n]), 0
}

func (h *handle) Write(ctx context.Context, data []byte, off int64) (uint32, syscall.Errno) {
	h.l.cut.RLock()
	defer h.l.cut.RUnlock()
	if !h.l.live(h.f.sub, h.gen) {
		return 0, syscall.EIO
	}
	h.f.mu.Lock()
	defer h.f.mu.Unlock()
	n, errno := h.f.write(h.fd, data, off)
	h.f.pages.wrote(ctx, off, n)
	if h.sync {
		if err := h.f.synced(); err != nil && errno == 0 {
			errno = gofs.ToErrno(err)
		}
		h.l.entriesSynced(h.f.sub, "")
	}
	return uint32(n), errno
}

// Fsync makes every change of the file durable (fdatasync as fsync: the
// size is data here), but those a failed sync dropped; unless a sync fault
// is armed on it (sync.go): then it fails, or the power goes.
func (h *handle) Fsync(ctx context.Context, flags uint32) syscall.Errno {
	h.l.cut.RLock()
	if !h.l.live(h.f.sub, h.gen) {
		h.l.cut.RUnlock()
		return syscall.EIO
	}
	switch a := h.l.armedAt(h.f.sub, h.name, h.f.ino); a.kind {
	case armFail:
		defer h.l.cut.RUnlock()
		h.f.mu.Lock()
		defer h.f.mu.Unlock()
		h.f.syncFailed()
		return syscall.EIO
	case armCrash:
		gen := h.gen
		h.l.cut.RUnlock()
		h.l.crashAtSync(h.f.sub, gen, a)
		return syscall.EIO
	}
	h.f.mu.Lock()
	err := h.f.synced()
	if err == nil {
		h.l.entriesSynced(h.f.sub, "")
	}
	var pgs []int64
	if err == nil {
		pgs = h.f.pages.toStore()
	}
	h.f.mu.Unlock()
	h.l.cut.RUnlock()
	if err != nil {
		return gofs.ToErrno(err)
	}
	h.l.store(h.node, h.f, pgs)
	return 0
}

// Allocate is refused, so the C library writes the zeros itself, which
// are logged as writes.
func (h *handle) Allocate(ctx context.Context, off uint64, size uint64, mode uint32) syscall.Errno {
	return syscall.EOPNOTSUPP
}

// Flush, at every close, has nothing to do: the kernel writes a file's
// dirty mmap'd pages back before it asks, and ENOSYS tells it never to
// ask again, which saves a round trip per close.
func (h *handle) Flush(ctx context.Context) syscall.Errno { return syscall.ENOSYS }

func (h *handle) Release(ctx context.Context) syscall.Errno {
	h.close()
	return 0
}

func (h *handle) close() {
	syscall.Close(h.fd)
	h.l.release(h.f, true)
}

func (h *handle) Getattr(ctx context.Context, out *fuse.AttrOut) syscall.Errno {
	var st syscall.Stat_t
	if err := syscall.Fstat(h.fd, &st); err != nil {
		return gofs.ToErrno(err)
	}
	out.FromStat(&st)
	return 0
}

func (h *handle) Statx(ctx context.Context, flags uint32, mask uint32, out *fuse.StatxOut) syscall.Errno {
	var st unix.Statx_t
	if err := unix.Statx(h.fd, "", int(flags)|unix.AT_EMPTY_PATH, int(mask), &st); err != nil {
		return gofs.ToErrno(err)
	}
	out.FromStatx(&st)
	return 0
}
