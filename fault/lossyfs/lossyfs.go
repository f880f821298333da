// Package lossyfs is a file system that forgets what was never synced: a
// FUSE mount over a backing folder that passes every operation through, but
// keeps each file's writes and truncations since its last fsync or
// fdatasync apart, so that a power cut can lose them. It is how the kit
// tells a backend that makes its writes durable from one that only hands
// them to the operating system: a process kill keeps what the kernel
// cached, a power cut keeps only what was synced.
//
// The crash model. A cut gives every write and truncation made since its
// file's last fsync or fdatasync a fate of its own (Fates), across all the
// files of the folder: kept, lost, or torn, a torn write persisting some of
// its sectors (SectorSize, 512 bytes, aligned on the file's offset 0) whole
// and none of the others, which keep what they held before it. So the
// writes between two syncs may persist in any subset, not only in the order
// they were made: a disk and its cache may reorder writes (POSIX says
// nothing of what survives a crash without fsync, only that fsync's data
// is on the medium when it returns), and SQLite's own crash VFS
// (src/test6.c) gives each unsynced write, of any file, its own fate the
// same way (written, dropped, or its sectors overwritten; it writes
// garbage where this model keeps the old sectors). SQLite's atomic-commit
// page (sqlite.org/atomiccommit.html, "Hardware Assumptions") assumes that
// disks write whole sectors and that they may reorder writes between
// syncs, and nothing more, so its files survive every state the model
// allows; its powersafe-overwrite assumption (sqlite.org/psow.html), that
// a write changes no byte outside its range, is what sector-whole tearing
// keeps. LazyFS (Ramos et al., "When Amnesia Strikes", VLDB 2024), which
// Jepsen uses, models the same losses ("torn-seq" and "torn-op" faults);
// the model's "all lost" and "a prefix of one file's writes" are two of the
// states this one allows.
//
// Two faults act at a sync (sync.go): a sync that fails with EIO and drops
// the file's dirty data as Linux does (FailSync), and a power cut at the
// Nth sync of a named file, as in SQLite's crash VFS (CrashAtSync).
//
// Any process in any language can run on the mount unmodified (SQLite in
// WAL mode, with its mmap'd -shm and POSIX locks, which the kernel keeps).
// Directory entries (create, link, rename, unlink) are durable at once,
// unless a folder follows an entry model (SetEntryModel: strict POSIX, or
// ext4's ordered mode; entry.go): then a cut may undo those not yet
// durable. Folders (mkdir, rmdir) are durable at once. A power cut
// acts on one folder directly under the mount point, so that runs side by
// side in folders of their own lose power one at a time: Cut, then end
// every process on that folder, then Thaw, then start them again.
//
// The file system is served by a process of its own (this program, run
// again: see serveEnv), which unmounts when this program ends, however it
// ends; a mount that a killed server left behind is cleaned at the next
// Mount.
package lossyfs

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// DeviceEnv names the FUSE device Mount checks for ("/dev/fuse" when
// unset): set to a path that does not exist, it makes Mount fail as on a
// machine without FUSE, which is how the kit's tests reach that path.
const DeviceEnv = "STORECHECK_FUSE_DEVICE"

// folderPrefix starts the name of every mount's private folder, followed by
// the mounting process's pid.
const folderPrefix = "storecheck-lossyfs-"

// Unavailable is why a mount cannot be made here: no FUSE device, no right
// to mount, a busy folder. A caller runs without power cuts and says why.
type Unavailable struct{ Reason string }

func (u *Unavailable) Error() string { return u.Reason }

// Disk is a mounted forgetful file system.
type Disk struct {
	// Dir is the mount point: put files in folders under it.
	Dir string

	folder string // the private folder: backing/ and mnt/
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  *bufio.Scanner
	stderr *tail
	mu     sync.Mutex
	closed bool
}

// SectorSize is the granularity a torn write persists at: a write covers
// the sectors of SectorSize bytes (aligned on the file's offset 0) its bytes
// fall in, and a torn one persists some of them whole and none of the
// others, which keep what they held before it. SQLite's crash VFS
// (src/test6.c) tears writes the same way, at the sector size a file
// declares (512 bytes by default).
const SectorSize = 512

// Kept names one unsynced write (or truncation) that a cut keeps: the Nth,
// from 1, that File (relative to the folder cut) got since its last sync.
// With Sectors set the write is torn: only those of its sectors persist,
// numbered from 0 (the sector of its first byte); a truncation is never
// torn.
type Kept struct {
	File    string `json:"file"`
	N       int    `json:"n"`
	Sectors []int  `json:"sectors,omitempty"`
}

func (k Kept) String() string {
	if len(k.Sectors) == 0 {
		return fmt.Sprintf("%s#%d", k.File, k.N)
	}
	s := make([]string, len(k.Sectors))
	for i, n := range k.Sectors {
		s[i] = strconv.Itoa(n)
	}
	return fmt.Sprintf("%s#%d (torn: sectors %s)", k.File, k.N, strings.Join(s, ","))
}

// Fates is what a cut keeps of the unsynced writes and truncations of every
// file in the folder: each one named survives (whole, or torn), each one
// not named is lost. Every write has a fate of its own, so the writes made
// between two syncs may persist in any subset, across files, not only in
// the order they were made. The nil Fates keeps nothing.
type Fates []Kept

// Cut is what a power cut lost.
type Cut struct {
	// Unsynced is how many unsynced writes and truncations each file had,
	// by its path relative to the folder.
	Unsynced map[string]int
	// Kept is how many of them survived whole, Torn how many torn.
	Kept, Torn int
	// Undone are the directory entry ops the cut undid, oldest first
	// ("rename a.tmp -> a"; entry.go), under the folder's entry model.
	Undone []string
	// Pending, for a cut at a sync (Disk.Struck), is what Disk.Unsynced
	// said just before it: the sectors of each unsynced write.
	Pending map[string][]int
	// Logs, for a cut at a sync armed by ProbeAtSync, is what Disk.Logs
	// said just before it.
	Logs map[string]FileLog
}

// Mount mounts a forgetful file system in a private folder under scratch.
// A *Unavailable error says why it cannot be mounted here.
func Mount(scratch string) (*Disk, error) {
	if err := Available(); err != nil {
		return nil, err
	}
	CleanStale(scratch)
	folder, err := os.MkdirTemp(scratch, folderPrefix+strconv.Itoa(os.Getpid())+"-")
	if err != nil {
		return nil, fmt.Errorf("lossyfs: %w", err)
	}
	d := &Disk{folder: folder, Dir: filepath.Join(folder, "mnt"), stderr: &tail{}}
	fail := func(err error) (*Disk, error) {
		d.stop()
		os.RemoveAll(folder)
		return nil, err
	}
	backing := filepath.Join(folder, "backing")
	for _, p := range []string{backing, d.Dir} {
		if err := os.Mkdir(p, 0o700); err != nil {
			return fail(fmt.Errorf("lossyfs: %w", err))
		}
	}
	self, err := os.Executable()
	if err != nil {
		return fail(&Unavailable{Reason: "cannot find this program to serve the file system from: " + err.Error()})
	}
	cfg, _ := json.Marshal(serveConfig{Backing: backing, Mount: d.Dir})
	d.cmd = exec.Command(self)
	d.cmd.Env = append(os.Environ(), serveEnv+"="+string(cfg))
	d.cmd.Stderr = d.stderr
	if d.stdin, err = d.cmd.StdinPipe(); err != nil {
		return fail(err)
	}
	out, err := d.cmd.StdoutPipe()
	if err != nil {
		return fail(err)
	}
	if err := d.cmd.Start(); err != nil {
		return fail(&Unavailable{Reason: "cannot start the file system's server: " + err.Error()})
	}
	d.lines = bufio.NewScanner(out)
	d.lines.Buffer(make([]byte, 64<<10), 16<<20)
	first := make(chan reply, 1)
	go func() {
		var r reply
		if !d.lines.Scan() {
			r.Error = "the file system's server ended before it mounted: " + d.stderr.String()
		} else if err := json.Unmarshal(d.lines.Bytes(), &r); err != nil {
			r.Error = fmt.Sprintf("the file system's server answered %q", d.lines.Text())
		}
		first <- r
	}()
	select {
	case r := <-first:
		if !r.Ready {
			return fail(&Unavailable{Reason: mountFailure(r)})
		}
	case <-time.After(serverStartTimeout):
		return fail(&Unavailable{Reason: fmt.Sprintf("the file system's server did not mount within %v", serverStartTimeout)})
	}
	return d, nil
}

// Available says, without mounting, whether a mount can be tried here: a
// *Unavailable names why not (no FUSE device, no right to use it, not root
// and no fusermount3). A mount can still fail where it says yes.
func Available() error {
	if why := unavailable(); why != "" {
		return &Unavailable{Reason: why}
	}
	return nil
}

func unavailable() string {
	dev := os.Getenv(DeviceEnv)
	if dev == "" {
		dev = "/dev/fuse"
	}
	if _, err := os.Stat(dev); err != nil {
		return fmt.Sprintf("no FUSE device: %s is missing (load the fuse module; in a container, pass the device in)", dev)
	}
	if os.Geteuid() == 0 {
		f, err := os.OpenFile(dev, os.O_RDWR, 0)
		if err != nil {
			return fmt.Sprintf("no right to use the FUSE device: %v", err)
		}
		f.Close()
		return ""
	}
	for _, prog := range []string{"fusermount3", "fusermount"} {
		if _, err := exec.LookPath(prog); err == nil {
			return ""
		}
	}
	return "no right to mount: not root, and no fusermount3 to mount as a user (Debian package fuse3)"
}

// mountFailure names why the server could not mount.
func mountFailure(r reply) string {
	switch syscall.Errno(r.Errno) {
	case syscall.EPERM, syscall.EACCES:
		return "no right to mount: " + r.Error
	case syscall.EBUSY:
		return "the mount point is busy: " + r.Error
	case syscall.ENODEV:
		return "the kernel has no FUSE file system (load the fuse module): " + r.Error
	case syscall.ENOENT:
		return "no FUSE device: " + r.Error
	}
	return "mount failed: " + r.Error
}

// call sends req and reads the answer.
func (d *Disk) call(req request) (reply, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return reply{}, errors.New("lossyfs: the disk is unmounted")
	}
	b, _ := json.Marshal(req)
	if _, err := d.stdin.Write(append(b, '\n')); err != nil {
		return reply{}, fmt.Errorf("lossyfs: the file system's server is gone: %w (%s)", err, d.stderr.String())
	}
	if !d.lines.Scan() {
		return reply{}, fmt.Errorf("lossyfs: the file system's server is gone (%s)", d.stderr.String())
	}
	var r reply
	if err := json.Unmarshal(d.lines.Bytes(), &r); err != nil {
		return reply{}, fmt.Errorf("lossyfs: the file system's server answered %q", d.lines.Text())
	}
	if r.Error != "" {
		return r, errors.New(r.Error)
	}
	return r, nil
}

// folderOf is dir as the server names it: a folder directly under the
// mount point.
func (d *Disk) folderOf(dir string) (string, error) {
	rel, err := filepath.Rel(d.Dir, dir)
	if err != nil || rel == "." || strings.ContainsRune(rel, filepath.Separator) || strings.HasPrefix(rel, "..") {
		return "", fmt.Errorf("lossyfs: %s is no folder directly under the mount point %s", dir, d.Dir)
	}
	return rel, nil
}

// Cut cuts the power of folder dir (directly under Dir): every unsynced
// write and truncation of its files is lost, but for those fates keeps
// (applied again in the order they were made); every
// handle open there is dead (a change through it fails with EIO, a read
// still reads); and every change to the folder fails until Thaw. End every
// process on the folder before the thaw.
func (d *Disk) Cut(dir string, fates Fates) (Cut, error) { return d.CutEntries(dir, fates, 0) }

// CutEntries is Cut, keeping the first keepEntries of the folder's entry
// ops not yet durable (SetEntryModel) and undoing the others.
func (d *Disk) CutEntries(dir string, fates Fates, keepEntries int) (Cut, error) {
	sub, err := d.folderOf(dir)
	if err != nil {
		return Cut{}, err
	}
	r, err := d.call(request{Op: "cut", Dir: sub, Fates: fates, KeepEntries: keepEntries})
	return Cut{Unsynced: r.Unsynced, Kept: r.Kept, Torn: r.Torn, Undone: r.Undone}, err
}

// Thaw gives folder dir its power back: processes started now find the
// files as the cut left them.
func (d *Disk) Thaw(dir string) error {
	sub, err := d.folderOf(dir)
	if err != nil {
		return err
	}
	_, err = d.call(request{Op: "thaw", Dir: sub})
	return err
}

// Unsynced is the unsynced writes and truncations of each file of folder
// dir, by its path relative to dir ("(unlinked)" for files open but no
// longer named), in the order the file got them: how many sectors each
// write covers (SectorSize), 0 for a truncation.
func (d *Disk) Unsynced(dir string) (map[string][]int, error) {
	sub, err := d.folderOf(dir)
	if err != nil {
		return nil, err
	}
	r, err := d.call(request{Op: "unsynced", Dir: sub})
	if r.Pending == nil {
		r.Pending = map[string][]int{}
	}
	return r.Pending, err
}

// Unmount undoes the mount (lazily if a process still holds a file there)
// and removes the private folder. It is safe to call more than once.
func (d *Disk) Unmount() error {
	d.mu.Lock()
	if d.closed {
		d.mu.Unlock()
		return nil
	}
	d.closed = true
	d.mu.Unlock()
	err := d.stop()
	if mounted(d.Dir) {
		detach(d.Dir)
	}
	if rmErr := os.RemoveAll(d.folder); rmErr != nil && err == nil {
		err = fmt.Errorf("lossyfs: %w", rmErr)
	}
	return err
}

// stop ends the server: it unmounts when its stdin closes.
func (d *Disk) stop() error {
	if d.cmd == nil || d.cmd.Process == nil {
		return nil
	}
	if d.stdin != nil {
		d.stdin.Close()
	}
	done := make(chan error, 1)
	go func() { done <- d.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("lossyfs: the file system's server: %w (%s)", err, d.stderr.String())
		}
		return nil
	case <-time.After(serverStartTimeout):
		d.cmd.Process.Kill()
		<-done
		return fmt.Errorf("lossyfs: the file system's server did not unmount within %v: killed", serverStartTimeout)
	}
}

// CleanStale unmounts and removes the private folders under scratch that
// a mounting process which no longer runs left behind (killed before its
// server could unmount).
func CleanStale(scratch string) {
	entries, err := os.ReadDir(scratch)
	if err != nil {
		return
	}
	for _, e := range entries {
		rest, ok := strings.CutPrefix(e.Name(), folderPrefix)
		if !ok || !e.IsDir() {
			continue
		}
		pidText, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidText)
		if err != nil || pid == os.Getpid() || alive(pid) {
			continue
		}
		folder := filepath.Join(scratch, e.Name())
		mnt := filepath.Join(folder, "mnt")
		if mounted(mnt) {
			detach(mnt)
		}
		if !mounted(mnt) {
			os.RemoveAll(folder)
		}
	}
}

func alive(pid int) bool {
	_, err := os.Stat(filepath.Join("/proc", strconv.Itoa(pid)))
	return err == nil
}

// detach unmounts dir lazily: at once for new lookups, for good when the
// last file open there closes.
func detach(dir string) {
	if syscall.Unmount(dir, syscall.MNT_DETACH) == nil {
		return
	}
	for _, prog := range []string{"fusermount3", "fusermount"} {
		if exec.Command(prog, "-u", "-z", dir).Run() == nil {
			return
		}
	}
}

// Mounts are the mount points of this package's mounts the kernel holds
// (/proc/self/mountinfo), whether or not their server still runs.
func Mounts() []string {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		fields := strings.Fields(line)
		if len(fields) < 5 {
			continue
		}
		if p := unescape(fields[4]); strings.Contains(filepath.Base(filepath.Dir(p)), folderPrefix) {
			out = append(out, p)
		}
	}
	return out
}

func mounted(dir string) bool {
	for _, p := range Mounts() {
		if p == dir {
			return true
		}
	}
	return false
}

// unescape undoes mountinfo's octal escapes (\040 for a space).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// tail keeps the last few KiB a process wrote.
type tail struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if over := len(t.buf) - 4096; over > 0 {
		t.buf = t.buf[over:]
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	s := strings.TrimSpace(string(t.buf))
	if s == "" {
		return "it said nothing"
	}
	return s
}
