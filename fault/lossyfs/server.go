package lossyfs

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// The server is a process of its own: the program that mounts runs itself
// again with serveEnv set, and this package's init serves the file system
// there instead of running the program. In the process that mounts, it
// could deadlock: a goroutine that touches an mmap'd page of the mount (the
// -shm file SQLite maps) faults in the kernel, which waits for the server,
// while Go's garbage collector waits for that goroutine to stop before it
// lets the server's goroutines run again. A process of its own also undoes
// the mount however the program ends: it serves until its stdin closes,
// which the kernel does when the program exits, even by SIGKILL.

// serveEnv, when set (to the JSON of a serveConfig), makes this process the
// server.
const serveEnv = "STORECHECK_LOSSYFS_SERVE"

type serveConfig struct {
	Backing string `json:"backing"`
	Mount   string `json:"mount"`
}

// request is what the program asks the server, one JSON line each.
type request struct {
	Op    string      `json:"op"` // "cut", "thaw", "unsynced", "logs", "arm", "struck", "entry_model" or "entries"
	Dir   string      `json:"dir"`
	Fates Fates       `json:"fates,omitempty"`
	Arm   *armRequest `json:"arm,omitempty"`
	// KeepEntries: how many of the entry ops not yet durable a cut keeps.
	KeepEntries int    `json:"keep_entries,omitempty"`
	Model       string `json:"model,omitempty"`
}

// reply is the server's answer to a request (the first line it writes is
// its answer to mounting: ready or an error).
type reply struct {
	Ready    bool               `json:"ready,omitempty"`
	Error    string             `json:"error,omitempty"`
	Errno    int                `json:"errno,omitempty"`
	Unsynced map[string]int     `json:"unsynced,omitempty"`
	Pending  map[string][]int   `json:"pending,omitempty"`
	Kept     int                `json:"kept,omitempty"`
	Torn     int                `json:"torn,omitempty"`
	Struck   bool               `json:"struck,omitempty"`
	Fates    Fates              `json:"fates,omitempty"`
	Entries  []string           `json:"entries,omitempty"`
	Undone   []string           `json:"undone,omitempty"`
	Logs     map[string]FileLog `json:"logs,omitempty"`
}

func init() {
	if cfg := os.Getenv(serveEnv); cfg != "" {
		os.Exit(serve(cfg, os.Stdin, os.Stdout))
	}
}

// serve mounts and answers requests until in ends; then it unmounts.
func serve(cfgJSON string, in io.Reader, out io.Writer) int {
	// A Ctrl-C reaches the whole process group: the server outlives the
	// program by its stdin, not by a signal.
	// One P: the server's work is the kernel's (a read of /dev/fuse, a
	// write of the reply), and with more the idle Ps spin after every
	// request, on the cores the backend needs (measured: 10% faster runs).
	runtime.GOMAXPROCS(1)
	signal.Ignore(syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	enc := json.NewEncoder(out)
	var cfg serveConfig
	if err := json.Unmarshal([]byte(cfgJSON), &cfg); err != nil {
		enc.Encode(reply{Error: fmt.Sprintf("lossyfs server: %s: %v", serveEnv, err)})
		return 2
	}
	l := newLossy(cfg.Backing)
	l.flags = filepath.Dir(cfg.Mount)
	server, err := mount(l, cfg.Mount)
	if err != nil {
		r := reply{Error: err.Error()}
		if errno, ok := errnoOf(err); ok {
			r.Errno = int(errno)
		}
		enc.Encode(r)
		return 1
	}
	enc.Encode(reply{Ready: true})
	lines := bufio.NewScanner(in)
	for lines.Scan() {
		var req request
		if err := json.Unmarshal(lines.Bytes(), &req); err != nil {
			enc.Encode(reply{Error: fmt.Sprintf("lossyfs server: bad request %q: %v", lines.Text(), err)})
			continue
		}
		enc.Encode(l.answer(req))
	}
	unmount(server, cfg.Mount)
	// The program may be gone: the private folder goes with the mount.
	if folder := filepath.Dir(cfg.Mount); strings.HasPrefix(filepath.Base(folder), folderPrefix) {
		os.RemoveAll(folder)
	}
	return 0
}

func mount(l *lossy, dir string) (*fuse.Server, error) {
	var st syscall.Stat_t
	if err := syscall.Stat(l.backing, &st); err != nil {
		return nil, err
	}
	data := &gofs.LoopbackRoot{Path: l.backing, Dev: uint64(st.Dev)}
	root := &node{LoopbackNode: &gofs.LoopbackNode{RootData: data}, l: l}
	data.RootNode = root
	timeout := attrTimeout
	opts := &gofs.Options{EntryTimeout: &timeout, AttrTimeout: &timeout, NegativeTimeout: &timeout, MountOptions: fuse.MountOptions{
		FsName: "storecheck-lossyfs", Name: "lossyfs",
		// As root, mount(2) itself; else fusermount3.
		DirectMount: true,
		// No extended attributes: else the kernel asks for
		// security.capability before every write.
		DisableXAttrs: true,
		// Every change but a cut's reaches the file through the kernel's
		// cache, so the cache never goes stale but at a cut, and a thaw
		// drops it: the kernel need not drop it whenever it sees a new
		// mtime (which it would after every write).
		ExplicitDataCacheControl: true,
	}}
	server, err := gofs.Mount(dir, root, opts)
	if err != nil {
		return nil, err
	}
	l.root = root.EmbeddedInode()
	return server, nil
}

// unmount undoes the mount; when it is busy (a process still holds a file
// open there), it detaches it lazily, so the path is free at once.
func unmount(server *fuse.Server, dir string) {
	if server.Unmount() == nil {
		return
	}
	if syscall.Unmount(dir, syscall.MNT_DETACH) != nil {
		for _, prog := range []string{"fusermount3", "fusermount"} {
			if exec.Command(prog, "-u", "-z", dir).Run() == nil {
				return
			}
		}
	}
}

func (l *lossy) answer(req request) reply {
	if req.Dir == "" || req.Dir != filepath.Base(req.Dir) || req.Dir == "." || req.Dir == ".." {
		return reply{Error: fmt.Sprintf("lossyfs: %q is no folder directly under the mount point", req.Dir)}
	}
	switch req.Op {
	case "unsynced":
		return reply{Pending: l.unsynced(req.Dir)}
	case "cut":
		c, err := l.powerCut(req.Dir, req.Fates, req.KeepEntries)
		if err != nil {
			return reply{Error: err.Error()}
		}
		return reply{Unsynced: c.Unsynced, Kept: c.Kept, Torn: c.Torn, Undone: c.Undone}
	case "thaw":
		l.thaw(req.Dir)
		return reply{}
	case "arm":
		if req.Arm == nil {
			return reply{Error: "lossyfs server: arm: nothing to arm"}
		}
		l.armed(req.Dir, *req.Arm)
		return reply{}
	case "struck":
		return l.struckReply(req.Dir)
	case "entry_model":
		if err := l.setEntryModel(req.Dir, req.Model); err != nil {
			return reply{Error: err.Error()}
		}
		return reply{}
	case "entries":
		return reply{Entries: l.pendingEntries(req.Dir)}
	case "logs":
		l.cut.Lock()
		defer l.cut.Unlock()
		return reply{Logs: l.logsLocked(req.Dir)}
	}
	return reply{Error: fmt.Sprintf("lossyfs server: unknown request %q", req.Op)}
}

// names maps the backing inodes of the files in folder sub to their paths
// relative to it.
func (l *lossy) names(sub string) map[uint64]string {
	out := map[uint64]string{}
	top := filepath.Join(l.backing, sub)
	filepath.WalkDir(top, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.Type().IsRegular() {
			return nil
		}
		var st syscall.Stat_t
		if syscall.Lstat(p, &st) == nil {
			rel, _ := filepath.Rel(top, p)
			out[st.Ino] = rel
		}
		return nil
	})
	return out
}

// unsynced is the unsynced changes of each file of folder sub (by its path
// relative to sub; "(unlinked)" for files open but no longer named), in
// order: the sectors each write covers, 0 for a truncation.
func (l *lossy) unsynced(sub string) map[string][]int {
	l.cut.Lock()
	defer l.cut.Unlock()
	return l.unsyncedLocked(sub)
}

// unsyncedLocked is unsynced with l.cut held.
func (l *lossy) unsyncedLocked(sub string) map[string][]int {
	names := l.names(sub)
	out := map[string][]int{}
	l.filesMu.Lock()
	defer l.filesMu.Unlock()
	for ino, f := range l.files {
		f.mu.Lock()
		if f.sub == sub {
			// A file open with nothing unsynced is named too (with no
			// writes): a sync fault may name it.
			name := nameOr(names, ino)
			if out[name] == nil {
				out[name] = []int{}
			}
			for _, c := range f.log {
				out[name] = append(out[name], c.sectors())
			}
		}
		f.mu.Unlock()
	}
	return out
}

func nameOr(names map[uint64]string, ino uint64) string {
	if n, ok := names[ino]; ok {
		return n
	}
	return Unlinked
}

// powerCut loses the power of folder sub: it is frozen (until thaw), every
// handle open in it is dead, every unsynced change of its files is
// undone, but for those fates keeps, and so is every entry op not yet
// durable but the first keepEntries (entry.go). It answers how many
// unsynced changes each file had, how many survived whole and torn, and
// which entry ops it undid.
func (l *lossy) powerCut(sub string, fates Fates, keepEntries int) (Cut, error) {
	l.cut.Lock()
	defer l.cut.Unlock()
	return l.powerCutLocked(sub, fates, keepEntries)
}

// powerCutLocked is powerCut with l.cut held. The cut disarms every sync
// fault armed on the folder.
func (l *lossy) powerCutLocked(sub string, fates Fates, keepEntries int) (Cut, error) {
	l.armsMu.Lock()
	delete(l.arms, sub)
	l.armsMu.Unlock()
	l.frozen[sub] = true
	l.gens[sub]++
	names := l.names(sub)
	byFile := map[string]map[int]Kept{}
	for _, k := range fates {
		if byFile[k.File] == nil {
			byFile[k.File] = map[int]Kept{}
		}
		byFile[k.File][k.N] = k
	}
	unsynced, kept, torn := map[string]int{}, 0, 0
	l.filesMu.Lock()
	defer l.filesMu.Unlock()
	var errs []error
	for ino, f := range l.files {
		if f.sub != sub {
			continue
		}
		f.mu.Lock()
		name := nameOr(names, ino)
		if n := len(f.log); n > 0 {
			unsynced[name] += n
		}
		// An unlinked file has no name a fate could give.
		var mine map[int]Kept
		if name != Unlinked {
			mine = byFile[name]
		}
		k, t, err := f.forget(mine)
		kept, torn = kept+k, torn+t
		if err != nil {
			errs = append(errs, fmt.Errorf("lossyfs: forgetting %s: %w", name, err))
		}
		if f.open == 0 {
			delete(l.files, ino)
			syscall.Close(f.fd)
			f.fd = -1
		}
		f.mu.Unlock()
	}
	// The names last: the fates named the files as they were named before
	// the cut.
	undone, err := l.undoEntries(sub, keepEntries)
	if err != nil {
		errs = append(errs, err)
	}
	c := Cut{Unsynced: unsynced, Kept: kept, Torn: torn, Undone: undone}
	if len(errs) > 0 {
		return c, errs[0]
	}
	return c, nil
}

// thaw gives folder sub its power back, and has the kernel drop what it
// cached of its files (their pages and attributes), so that a process
// started now reads the disk as the cut left it.
func (l *lossy) thaw(sub string) {
	l.cut.Lock()
	delete(l.frozen, sub)
	l.cut.Unlock()
	if l.root == nil {
		return
	}
	// A store under way (store.go) may hold a page of before the cut: it
	// lands first, and one that starts now reads what the cut left.
	l.stores.Lock()
	l.stores.Unlock()
	if top := l.root.GetChild(sub); top != nil {
		// Content first: a name the cut undid leaves the tree next, and
		// its file with it, but the kernel may keep that inode and hand
		// it back at the next lookup, with the pages of before the cut.
		invalidate(top)
		l.entriesThawed(sub, top)
	}
	// A file still open that no name leads to (unlinked, or renamed over,
	// and maybe given its name back by the cut's undo) is out of the tree:
	// its pages too.
	var held []*gofs.Inode
	l.filesMu.Lock()
	for _, f := range l.files {
		if f.sub == sub && f.node != nil {
			held = append(held, f.node)
		}
	}
	l.filesMu.Unlock()
	for _, n := range held {
		n.NotifyContent(0, 0)
	}
}

func invalidate(n *gofs.Inode) {
	n.NotifyContent(0, 0)
	for _, c := range n.Children() {
		invalidate(c)
	}
}

// errnoOf is the errno an error wraps, if any.
func errnoOf(err error) (syscall.Errno, bool) {
	var errno syscall.Errno
	return errno, errors.As(err, &errno)
}

// serverStartTimeout bounds how long Mount waits for the server to answer.
const serverStartTimeout = 30 * time.Second
