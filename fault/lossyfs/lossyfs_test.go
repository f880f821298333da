package lossyfs

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	_ "modernc.org/sqlite"
)

// needFUSE skips the test, with the reason, where no mount can be tried
// here (the kit's CI has FUSE; the tests of a machine without it run
// everywhere).
func needFUSE(t *testing.T) {
	t.Helper()
	if err := Available(); err != nil {
		t.Skipf("no FUSE here: %v", err)
	}
}

// mountForTest mounts a disk for the test and makes a run folder on it.
func mountForTest(t *testing.T) (*Disk, string) {
	t.Helper()
	needFUSE(t)
	d, err := Mount(t.TempDir())
	if err != nil {
		t.Fatalf("mount: %v", err)
	}
	t.Cleanup(func() {
		if err := d.Unmount(); err != nil {
			t.Error(err)
		}
		if slices.Contains(Mounts(), d.Dir) {
			t.Errorf("%s is still mounted", d.Dir)
		}
	})
	run := filepath.Join(d.Dir, "run-1")
	if err := os.Mkdir(run, 0o755); err != nil {
		t.Fatal(err)
	}
	return d, run
}

func cut(t *testing.T, d *Disk, dir string, fates Fates) Cut {
	t.Helper()
	c, err := d.Cut(dir, fates)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Thaw(dir); err != nil {
		t.Fatal(err)
	}
	return c
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// What was synced survives a cut; what was written (or truncated) since is
// lost, whether the file was still open or already closed.
func TestACutLosesWhatWasNeverSynced(t *testing.T) {
	d, run := mountForTest(t)
	p := filepath.Join(run, "f")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	f.WriteString("synced bytes")
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	f.WriteAt([]byte("SYNCED"), 0)
	f.WriteString(" and more")
	f.Close()
	closed := filepath.Join(run, "closed")
	os.WriteFile(closed, []byte("never synced"), 0o644)
	if got := read(t, p); got != "SYNCED bytes and more" {
		t.Fatalf("before the cut the file reads %q", got)
	}
	c := cut(t, d, run, nil)
	if got := read(t, p); got != "synced bytes" {
		t.Errorf("after the cut the file reads %q, want what was synced", got)
	}
	if got := read(t, closed); got != "" {
		t.Errorf("a closed file never synced reads %q after the cut, want nothing (its creation is durable, its bytes are not)", got)
	}
	if c.Unsynced["f"] != 2 || c.Unsynced["closed"] != 1 {
		t.Errorf("the cut counted %v unsynced changes, want f: 2, closed: 1", c.Unsynced)
	}
}

// Truncations are changes like writes: one since the last sync is undone,
// and the bytes it cut come back.
func TestACutUndoesTruncations(t *testing.T) {
	d, run := mountForTest(t)
	p := filepath.Join(run, "f")
	f, _ := os.Create(p)
	f.WriteString("0123456789")
	f.Sync()
	f.Truncate(3)
	f.WriteAt([]byte("x"), 6)
	f.Close()
	if err := os.Truncate(p, 8); err != nil { // by path, with no handle
		t.Fatal(err)
	}
	if got := read(t, p); got != "012\x00\x00\x00x\x00" {
		t.Fatalf("before the cut the file reads %q", got)
	}
	cut(t, d, run, nil)
	if got := read(t, p); got != "0123456789" {
		t.Errorf("after the cut the file reads %q, want 0123456789", got)
	}
}

// fdatasync is a sync too; a file opened O_SYNC is synced by every write.
func TestFdatasyncAndOSyncMakeWritesDurable(t *testing.T) {
	d, run := mountForTest(t)
	a, _ := os.Create(filepath.Join(run, "a"))
	a.WriteString("data")
	if err := syscall.Fdatasync(int(a.Fd())); err != nil {
		t.Fatal(err)
	}
	a.Close()
	b, err := os.OpenFile(filepath.Join(run, "b"), os.O_CREATE|os.O_WRONLY|os.O_SYNC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	b.WriteString("sync")
	b.Close()
	cut(t, d, run, nil)
	if got := read(t, filepath.Join(run, "a")) + read(t, filepath.Join(run, "b")); got != "datasync" {
		t.Errorf("after the cut: %q, want datasync", got)
	}
}

// A cut may keep a prefix of one file's unsynced changes, in order, and
// lose the rest and every other file's (the old model's torn cut, one of
// the states the new one allows).
func TestACutMayKeepAPrefixOfOneFile(t *testing.T) {
	d, run := mountForTest(t)
	p, other := filepath.Join(run, "wal"), filepath.Join(run, "db")
	f, _ := os.Create(p)
	for _, w := range []string{"one ", "two ", "three "} {
		f.WriteString(w)
	}
	f.Close()
	os.WriteFile(other, []byte("lost"), 0o644)
	u, err := d.Unsynced(run)
	if err != nil || !slices.Equal(u["wal"], []int{1, 1, 1}) || !slices.Equal(u["db"], []int{1}) {
		t.Fatalf("unsynced: %v %v, want wal: three writes of one sector, db: one", u, err)
	}
	c := cut(t, d, run, Fates{{File: "wal", N: 1}, {File: "wal", N: 2}})
	if got := read(t, p); got != "one two " {
		t.Errorf("the torn file reads %q, want its first two writes", got)
	}
	if got := read(t, other); got != "" {
		t.Errorf("another file reads %q, want nothing", got)
	}
	if c.Kept != 2 || c.Torn != 0 || c.Unsynced["wal"] != 3 || c.Unsynced["db"] != 1 {
		t.Errorf("the cut says %+v, want 2 of wal's 3 and db's 1 kept", c)
	}
}

// Every unsynced write has a fate of its own: a cut may keep a later write
// of one file and lose an earlier one, and keep one file's write while it
// loses an earlier one of another file's. The old model (all lost, or a
// prefix of one file's) allowed neither state.
func TestACutKeepsAnySubsetOfTheWritesAcrossFiles(t *testing.T) {
	d, run := mountForTest(t)
	wal, db := filepath.Join(run, "wal"), filepath.Join(run, "db")
	os.WriteFile(db, []byte("old-page"), 0o644)
	g, _ := os.OpenFile(db, os.O_RDWR, 0)
	g.Sync()
	g.WriteAt([]byte("NEW-"), 0) // db#1, before every write of wal's
	f, _ := os.Create(wal)
	f.WriteString("one ")        // wal#1
	f.WriteString("two ")        // wal#2
	f.WriteString("three")       // wal#3
	g.WriteAt([]byte("PAGE"), 4) // db#2
	g.Close()
	f.Close()
	c := cut(t, d, run, Fates{{File: "wal", N: 3}, {File: "db", N: 2}, {File: "wal", N: 1}})
	if got, want := read(t, wal), "one \x00\x00\x00\x00three"; got != want {
		t.Errorf("wal reads %q after keeping its writes 1 and 3, want %q (the lost second reads as the hole it left)", got, want)
	}
	if got, want := read(t, db), "old-PAGE"; got != want {
		t.Errorf("db reads %q after keeping its second write and losing its first, want %q", got, want)
	}
	if c.Kept != 3 || c.Torn != 0 {
		t.Errorf("the cut says %+v, want 3 kept", c)
	}
}

// A torn write persists some of its sectors (SectorSize bytes, aligned on
// the file's offset 0) whole and none of the others, which keep what they
// held before it; the sectors are numbered from the write's first.
func TestATornWriteKeepsSomeOfItsSectors(t *testing.T) {
	d, run := mountForTest(t)
	p := filepath.Join(run, "f")
	f, _ := os.Create(p)
	f.Write(bytes.Repeat([]byte("a"), 4*SectorSize))
	f.Sync()
	// Sectors 0 (from byte 256), 1, 2, 3 and 4 (past the synced end).
	f.WriteAt(bytes.Repeat([]byte("b"), 4*SectorSize), SectorSize/2)
	f.WriteAt([]byte("c"), 0)
	f.Close()
	u, _ := d.Unsynced(run)
	if !slices.Equal(u["f"], []int{5, 1}) {
		t.Fatalf("unsynced %v, want f: a write of 5 sectors and one of 1", u)
	}
	c := cut(t, d, run, Fates{{File: "f", N: 1, Sectors: []int{1, 4}}})
	want := strings.Repeat("a", SectorSize) + strings.Repeat("b", SectorSize) + strings.Repeat("a", 2*SectorSize) + strings.Repeat("b", SectorSize/2)
	if got := read(t, p); got != want {
		t.Errorf("after the torn cut the file reads %d bytes, %q...; want sectors 1 and 4 of the write only (%d bytes)", len(got), got[:min(len(got), 40)], len(want))
	}
	if c.Kept != 0 || c.Torn != 1 {
		t.Errorf("the cut says %+v, want one torn", c)
	}
}

// A handle opened before the cut is dead: a write through it fails with
// EIO and is never applied, before the thaw and after; a read still reads.
// While the folder is frozen every change to it fails; another folder's
// power stays on.
func TestHandlesOpenedBeforeACutAreDead(t *testing.T) {
	d, run := mountForTest(t)
	other := filepath.Join(d.Dir, "run-2")
	os.Mkdir(other, 0o755)
	p := filepath.Join(run, "f")
	f, _ := os.Create(p)
	f.WriteString("durable")
	f.Sync()
	defer f.Close()
	if _, err := d.Cut(run, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("X"), 0); !errors.Is(err, syscall.EIO) {
		t.Errorf("a write through a handle opened before the cut: %v, want EIO", err)
	}
	if err := os.WriteFile(filepath.Join(run, "new"), nil, 0o644); !errors.Is(err, syscall.EIO) {
		t.Errorf("a create in the frozen folder: %v, want EIO", err)
	}
	if err := os.Remove(p); !errors.Is(err, syscall.EIO) {
		t.Errorf("an unlink in the frozen folder: %v, want EIO", err)
	}
	if err := os.WriteFile(filepath.Join(other, "g"), []byte("on"), 0o644); err != nil {
		t.Errorf("another folder lost power too: %v", err)
	}
	if err := d.Thaw(run); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt([]byte("X"), 0); !errors.Is(err, syscall.EIO) {
		t.Errorf("after the thaw, a write through the old handle: %v, want EIO", err)
	}
	if err := f.Sync(); !errors.Is(err, syscall.EIO) {
		t.Errorf("after the thaw, a sync through the old handle: %v, want EIO", err)
	}
	buf := make([]byte, 7)
	if _, err := f.ReadAt(buf, 0); err != nil || string(buf) != "durable" {
		t.Errorf("a read through the old handle: %q %v", buf, err)
	}
	if got := read(t, p); got != "durable" {
		t.Errorf("the file reads %q", got)
	}
	if err := os.WriteFile(filepath.Join(run, "new"), []byte("x"), 0o644); err != nil {
		t.Errorf("after the thaw a new file cannot be written: %v", err)
	}
}

// A write in flight when the power goes is wholly before the cut or wholly
// after it: with writers racing the cut, the file after it is exactly what
// was synced, never a write half applied, and every write after the cut
// failed.
func TestAWriteInFlightIsBeforeOrAfterTheCut(t *testing.T) {
	d, run := mountForTest(t)
	p := filepath.Join(run, "f")
	f, _ := os.Create(p)
	durable := bytes.Repeat([]byte("d"), 64<<10)
	f.Write(durable)
	f.Sync()
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			block := bytes.Repeat([]byte{byte('a' + w)}, 8<<10)
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				f.WriteAt(block, int64(i%8)*8<<10)
			}
		}()
	}
	time.Sleep(20 * time.Millisecond)
	if _, err := d.Cut(run, nil); err != nil {
		t.Fatal(err)
	}
	_, err := f.WriteAt([]byte("late"), 0)
	close(stop)
	wg.Wait()
	f.Close()
	if err := d.Thaw(run); err != nil {
		t.Fatal(err)
	}
	if !errors.Is(err, syscall.EIO) {
		t.Errorf("a write after the cut: %v, want EIO", err)
	}
	if got := read(t, p); got != string(durable) {
		t.Errorf("after the cut the file is not what was synced (%d bytes, %q...)", len(got), got[:min(len(got), 16)])
	}
}

// A mount that fails names why: no right, a busy folder, no FUSE in the
// kernel, no device.
func TestAFailedMountNamesWhy(t *testing.T) {
	for errno, want := range map[syscall.Errno]string{syscall.EPERM: "no right to mount: ", syscall.EBUSY: "the mount point is busy: ",
		syscall.ENODEV: "the kernel has no FUSE file system", syscall.ENOENT: "no FUSE device: ", syscall.EINVAL: "mount failed: "} {
		if got := mountFailure(reply{Error: "mount: " + errno.Error(), Errno: int(errno)}); !strings.HasPrefix(got, want) || !strings.HasSuffix(got, errno.Error()) {
			t.Errorf("%v: %q, want %q and the error", errno, got, want)
		}
	}
}

// sqliteDB opens the database at path in WAL mode with synchronous set as
// given ("" leaves SQLite's default).
func sqliteDB(t *testing.T, path, synchronous string) *sql.DB {
	t.Helper()
	dsn := "file:" + path + "?_pragma=journal_mode(WAL)&_pragma=busy_timeout(5000)"
	if synchronous != "" {
		dsn += "&_pragma=synchronous(" + synchronous + ")"
	}
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec("CREATE TABLE IF NOT EXISTS kv (k INTEGER PRIMARY KEY, v TEXT)"); err != nil {
		t.Fatal(err)
	}
	return db
}

func rows(t *testing.T, db *sql.DB) int {
	t.Helper()
	var n int
	if err := db.QueryRow("SELECT COUNT(*) FROM kv").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// SQLite in WAL mode runs on the mount: with SQLite's default (FULL) every
// committed row survives a cut, even though the handles are closed after
// the cut (as the simulator's in-process crash closes them: the close
// would checkpoint, and fails); with synchronous=NORMAL or OFF the commits
// since the last checkpoint are lost, which is what the kit must catch.
func TestSQLiteOnTheMountKeepsExactlyWhatItSynced(t *testing.T) {
	for _, tc := range []struct {
		synchronous string
		survive     bool
	}{{"", true}, {"FULL", true}, {"NORMAL", false}, {"OFF", false}} {
		t.Run("synchronous="+tc.synchronous, func(t *testing.T) {
			d, run := mountForTest(t)
			path := filepath.Join(run, "s.db")
			db := sqliteDB(t, path, tc.synchronous)
			for i := range 20 {
				if _, err := db.Exec("INSERT INTO kv VALUES (?, ?)", i, strings.Repeat("v", 500)); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := d.Cut(run, nil); err != nil {
				t.Fatal(err)
			}
			db.Close() // fails to checkpoint: the power is off
			if err := d.Thaw(run); err != nil {
				t.Fatal(err)
			}
			db = sqliteDB(t, path, tc.synchronous)
			defer db.Close()
			got := rows(t, db)
			if tc.survive && got != 20 {
				t.Errorf("%d of 20 committed rows survived the cut", got)
			}
			if !tc.survive && got == 20 {
				t.Errorf("every committed row survived the cut, want the unsynced ones lost")
			}
		})
	}
}

// Why a cut comes before the kill: a WAL database closed before the power
// goes is checkpointed and synced by its last close, so even
// synchronous=NORMAL keeps its commits; only the cut first loses them.
func TestClosingBeforeTheCutWouldSyncWhatTheCutMustLose(t *testing.T) {
	d, run := mountForTest(t)
	path := filepath.Join(run, "s.db")
	db := sqliteDB(t, path, "NORMAL")
	for i := range 20 {
		if _, err := db.Exec("INSERT INTO kv VALUES (?, 'v')", i); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	cut(t, d, run, nil)
	db = sqliteDB(t, path, "NORMAL")
	defer db.Close()
	if n := rows(t, db); n != 20 {
		t.Errorf("closed before the cut, %d of 20 rows survived: the last close should have checkpointed them", n)
	}
}

// Two processes share a database on the mount with SQLite's locking: a
// Python process (another language, another SQLite) cannot write while
// this one holds the write lock, and each sees the other's commits.
func TestSQLiteLocksAcrossProcessesOnTheMount(t *testing.T) {
	python, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3 here to be the other process")
	}
	_, run := mountForTest(t)
	path := filepath.Join(run, "s.db")
	db := sqliteDB(t, path, "")
	defer db.Close()
	db.Exec("INSERT INTO kv VALUES (1, 'go')")
	other := func() (string, error) {
		out, err := exec.Command(python, "-c", `
import sqlite3, sys
c = sqlite3.connect(sys.argv[1], timeout=0.2)
c.execute("PRAGMA journal_mode=WAL")
try:
    c.execute("INSERT INTO kv VALUES (2, 'python')")
    c.commit()
    print("wrote", c.execute("SELECT COUNT(*) FROM kv").fetchone()[0])
except sqlite3.OperationalError as e:
    print("refused:", e)
`, path).CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	conn, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(context.Background(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	if got, err := other(); err != nil || got != "refused: database is locked" {
		t.Errorf("while this process holds the write lock, python: %q %v", got, err)
	}
	conn.ExecContext(context.Background(), "ROLLBACK")
	conn.Close()
	if got, err := other(); err != nil || got != "wrote 2" {
		t.Errorf("once the lock is free, python: %q %v", got, err)
	}
	if n := rows(t, db); n != 2 {
		t.Errorf("this process sees %d rows, want python's too", n)
	}
}

// Without a FUSE device Mount says why, and mounts nothing.
func TestMountSaysWhyWithoutAFUSEDevice(t *testing.T) {
	t.Setenv(DeviceEnv, "/nonexistent/fuse")
	scratch := t.TempDir()
	_, err := Mount(scratch)
	var u *Unavailable
	if !errors.As(err, &u) || !strings.Contains(u.Reason, "no FUSE device: /nonexistent/fuse is missing") {
		t.Fatalf("mount: %v, want an Unavailable naming the missing device", err)
	}
	if entries, _ := os.ReadDir(scratch); len(entries) > 0 {
		t.Errorf("a failed mount left %v behind", entries)
	}
}

// helperEnv makes the test binary one of the helper processes below.
const helperEnv = "LOSSYFS_TEST_HELPER"

// TestHelper is not a test: run with helperEnv, it mounts under the folder
// the variable names, prints the mount point and its server's pid, and
// then fails (a test that fails mid-run), or waits to be killed.
func TestHelper(t *testing.T) {
	how, scratch, ok := strings.Cut(os.Getenv(helperEnv), ":")
	if !ok {
		t.Skip("a helper process of the tests below")
	}
	d, err := Mount(scratch)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Unmount() })
	fmt.Printf("mounted %s %d\n", d.Dir, d.cmd.Process.Pid)
	os.WriteFile(filepath.Join(d.Dir, "held"), []byte("x"), 0o644)
	switch how {
	case "fail":
		t.Fatal("failing mid-run, as a test may")
	case "wait":
		time.Sleep(time.Minute)
	}
}

// helper starts the test binary as a helper that mounts under scratch,
// and waits until it has mounted.
func helper(t *testing.T, how, scratch string) (*exec.Cmd, *tail, string, int) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelper$", "-test.v")
	cmd.Env = append(os.Environ(), helperEnv+"="+how+":"+scratch)
	out := &tail{}
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		for _, line := range strings.Split(out.String(), "\n") {
			var dir string
			var pid int
			if n, _ := fmt.Sscanf(line, "mounted %s %d", &dir, &pid); n == 2 {
				return cmd, out, dir, pid
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	cmd.Process.Kill()
	t.Fatalf("the helper never mounted:\n%s", out)
	return nil, nil, "", 0
}

// waitUnmounted waits until dir is no longer mounted.
func waitUnmounted(t *testing.T, dir string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for slices.Contains(Mounts(), dir) {
		if time.Now().After(deadline) {
			t.Fatalf("%s is still mounted", dir)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// The mount is undone when the program ends however it ends: a test that
// fails mid-run, a Ctrl-C, a SIGKILL.
func TestNoMountOutlivesItsProgram(t *testing.T) {
	needFUSE(t)
	for _, tc := range []struct {
		name, how string
		sig       os.Signal
	}{{"a failing test", "fail", nil}, {"SIGINT", "wait", syscall.SIGINT}, {"SIGKILL", "wait", syscall.SIGKILL}} {
		t.Run(tc.name, func(t *testing.T) {
			scratch := t.TempDir()
			cmd, out, dir, _ := helper(t, tc.how, scratch)
			if tc.sig != nil {
				cmd.Process.Signal(tc.sig)
			}
			cmd.Wait()
			if tc.how == "fail" && !strings.Contains(out.String(), "failing mid-run") {
				t.Fatalf("the helper did not fail as asked:\n%s", out)
			}
			waitUnmounted(t, dir)
			deadline := time.Now().Add(10 * time.Second)
			for entries, _ := os.ReadDir(scratch); len(entries) > 0; entries, _ = os.ReadDir(scratch) {
				if time.Now().After(deadline) {
					t.Fatalf("left behind: %v", entries)
				}
				time.Sleep(10 * time.Millisecond)
			}
		})
	}
}

// A mount whose server and program were both killed (so nothing could
// unmount it) is cleaned by the next Mount under the same folder.
func TestAStaleMountIsCleanedAtTheNextMount(t *testing.T) {
	needFUSE(t)
	scratch := t.TempDir()
	cmd, _, dir, server := helper(t, "wait", scratch)
	syscall.Kill(server, syscall.SIGKILL)
	cmd.Process.Kill()
	cmd.Wait()
	time.Sleep(50 * time.Millisecond)
	if !slices.Contains(Mounts(), dir) {
		t.Fatalf("killing both left no stale mount at %s to clean", dir)
	}
	d, err := Mount(scratch)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Unmount()
	if slices.Contains(Mounts(), dir) {
		t.Errorf("the stale mount %s is still there", dir)
	}
	if _, err := os.Stat(filepath.Dir(dir)); !os.IsNotExist(err) {
		t.Errorf("the stale folder %s is still there: %v", filepath.Dir(dir), err)
	}
}

// A sync that fails answers EIO and drops the file's dirty data as Linux
// does: the process still reads it, a later sync succeeds, and what that
// sync makes durable is what came after the failure (over what was
// synced before it), never the dropped bytes; a cut then shows the hole.
// The counting is from the arming: the second sync fails, not the first.
func TestAFailedSyncDropsTheDirtyDataAndALaterSyncSucceedsWithoutIt(t *testing.T) {
	d, run := mountForTest(t)
	p := filepath.Join(run, "f")
	f, _ := os.Create(p)
	defer f.Close()
	f.WriteString("aaaaaaaa")
	if err := d.FailSync(run, "f", 2); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatalf("the first sync after the arming: %v", err)
	}
	f.WriteAt([]byte("bbbbbbbb"), 0)
	if err := f.Sync(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("the second sync answered %v, want EIO", err)
	}
	if got := read(t, p); got != "bbbbbbbb" {
		t.Fatalf("after the failed sync the file reads %q, want the dropped bytes still (the cache keeps them)", got)
	}
	f.WriteAt([]byte("dd"), 0)
	f.WriteAt([]byte("cc"), 8)
	if err := f.Sync(); err != nil {
		t.Fatalf("a later sync: %v, want success", err)
	}
	f.WriteAt([]byte("ee"), 10)
	u, _ := d.Unsynced(run)
	if !slices.Equal(u["f"], []int{-1, 1}) {
		t.Fatalf("unsynced %v, want the dropped data (no fate: -1) and one write", u)
	}
	// Keeping #1 keeps nothing: a dropped change has no fate.
	cut(t, d, run, Fates{{File: "f", N: 1}, {File: "f", N: 2}})
	if got, want := read(t, p), "ddaaaaaacc"+"ee"; got != want {
		t.Errorf("after the cut the file reads %q, want %q: what was synced, then what came after the failed sync, never the dropped bytes", got, want)
	}
}

// A sync that answers EIO drops what the file had dirty, but not what
// another file had.
func TestAFailedSyncDropsOnlyItsFilesData(t *testing.T) {
	d, run := mountForTest(t)
	a, b := filepath.Join(run, "a"), filepath.Join(run, "b")
	fa, _ := os.Create(a)
	defer fa.Close()
	fb, _ := os.Create(b)
	defer fb.Close()
	fa.WriteString("a")
	fb.WriteString("b")
	d.FailSync(run, "a", 1)
	if err := fa.Sync(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("sync of a: %v, want EIO", err)
	}
	if err := fb.Sync(); err != nil {
		t.Fatal(err)
	}
	if err := fa.Sync(); err != nil {
		t.Fatal(err)
	}
	cut(t, d, run, nil)
	if read(t, a) != "" || read(t, b) != "b" {
		t.Errorf("after the cut a reads %q, b %q; want a's dropped write lost and b's synced one kept", read(t, a), read(t, b))
	}
}

// The power goes at the Nth sync of a named file, counted from the arming,
// as in SQLite's crash VFS: that sync never succeeds, every unsynced write
// of the folder (the file's own too) is lost (seed 0), and the folder is
// frozen until the thaw; Struck tells it once.
func TestAPowerCutAtTheNthSyncOfAFile(t *testing.T) {
	d, run := mountForTest(t)
	wal, db := filepath.Join(run, "wal"), filepath.Join(run, "db")
	fw, _ := os.Create(wal)
	defer fw.Close()
	fd, _ := os.Create(db)
	defer fd.Close()
	if err := d.CrashAtSync(run, "wal", 2, 0, nil); err != nil {
		t.Fatal(err)
	}
	fw.WriteString("one ")
	if err := fd.Sync(); err != nil {
		t.Fatalf("a sync of another file: %v", err)
	}
	if err := fw.Sync(); err != nil {
		t.Fatalf("the first sync of wal: %v", err)
	}
	if _, _, struck, _ := d.Struck(run); struck {
		t.Fatal("struck before the second sync")
	}
	fd.WriteString("page")
	fw.WriteString("two ")
	if err := fw.Sync(); !errors.Is(err, syscall.EIO) {
		t.Fatalf("the second sync of wal answered %v, want EIO", err)
	}
	c, fates, struck, err := d.Struck(run)
	if err != nil || !struck || fates != nil || c.Unsynced["wal"] != 1 || c.Unsynced["db"] != 1 {
		t.Fatalf("struck %v (%v), cut %+v, fates %v: want struck, wal's and db's one unsynced write each lost", struck, err, c, fates)
	}
	if _, _, again, _ := d.Struck(run); again {
		t.Error("Struck tells a cut twice")
	}
	if _, err := os.Create(filepath.Join(run, "new")); err == nil {
		t.Error("a change to the folder after the cut succeeded before the thaw")
	}
	if err := d.Thaw(run); err != nil {
		t.Fatal(err)
	}
	if read(t, wal) != "one " || read(t, db) != "" {
		t.Errorf("after the cut wal reads %q, db %q; want what was synced", read(t, wal), read(t, db))
	}
}

// With a seed, the writes a cut at a sync finds unsynced get the fates
// DrawFates draws from it, which Struck reports, and the files hold
// exactly what those fates keep; a file named in noFate gets none.
func TestAPowerCutAtASyncDrawsItsFatesFromItsSeed(t *testing.T) {
	d, _ := mountForTest(t)
	for seed := uint64(1); seed <= 40; seed++ {
		sub := filepath.Join(d.Dir, fmt.Sprintf("s%d", seed))
		os.Mkdir(sub, 0o755)
		words := []string{"one ", "two ", "three "}
		f, _ := os.Create(filepath.Join(sub, "wal"))
		g, _ := os.Create(filepath.Join(sub, "db-shm"))
		for _, w := range words {
			f.WriteString(w)
			g.WriteString(w)
		}
		if err := d.CrashAtSync(sub, "wal", 1, seed, []string{"-shm"}); err != nil {
			t.Fatal(err)
		}
		if err := f.Sync(); !errors.Is(err, syscall.EIO) {
			t.Fatalf("seed %d: the sync answered %v, want EIO", seed, err)
		}
		f.Close()
		g.Close()
		_, fates, struck, err := d.Struck(sub)
		if err != nil || !struck {
			t.Fatalf("seed %d: struck %v %v", seed, struck, err)
		}
		want := DrawFates(rand.New(rand.NewPCG(seed, fatesStream)), map[string][]int{"wal": {1, 1, 1}, "db-shm": {1, 1, 1}}, []string{"-shm"})
		if !reflect.DeepEqual(fates, want) {
			t.Fatalf("seed %d: the cut drew %v, DrawFates %v", seed, fates, want)
		}
		d.Thaw(sub)
		var b strings.Builder
		for _, k := range fates {
			if k.File != "wal" {
				t.Fatalf("seed %d: a fate for %s", seed, k.File)
			}
			for len(b.String()) < len(strings.Join(words[:k.N-1], "")) {
				b.WriteByte(0)
			}
			b.WriteString(words[k.N-1])
		}
		if got := read(t, filepath.Join(sub, "wal")); got != b.String() {
			t.Errorf("seed %d: kept %v, wal reads %q, want %q", seed, fates, got, b.String())
		}
		if got := read(t, filepath.Join(sub, "db-shm")); got != "" {
			t.Errorf("seed %d: db-shm reads %q, want nothing (no fate)", seed, got)
		}
	}
}

// The file system against a model of the durable image, over random
// writes, truncations, syncs and failed syncs of one file: after a cut
// that keeps nothing, the file is the model's durable image, the synced
// image with every change a sync made durable applied in order, and never
// a change a failed sync dropped (however many syncs came after it, and
// wherever later dropped changes reach).
func TestFailedSyncsAgainstAModel(t *testing.T) {
	d, run := mountForTest(t)
	r := rand.New(rand.NewPCG(27, 1))
	type op struct {
		trunc   bool
		off     int
		data    []byte
		dropped bool
	}
	apply := func(img []byte, o op) []byte {
		if o.trunc {
			if o.off <= len(img) {
				return img[:o.off]
			}
			return append(img, make([]byte, o.off-len(img))...)
		}
		if end := o.off + len(o.data); end > len(img) {
			img = append(img, make([]byte, end-len(img))...)
		}
		copy(img[o.off:], o.data)
		return img
	}
	for iter := range 60 {
		name := fmt.Sprintf("f%d", iter)
		p := filepath.Join(run, name)
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		var durable []byte
		var pending []op
		var history []string
		for range 20 {
			switch n := r.IntN(10); {
			case n < 5:
				o := op{off: r.IntN(40), data: bytes.Repeat([]byte{byte('a' + r.IntN(26))}, 1+r.IntN(8))}
				f.WriteAt(o.data, int64(o.off))
				pending = append(pending, o)
				history = append(history, fmt.Sprintf("write %q at %d", o.data, o.off))
			case n < 6:
				o := op{trunc: true, off: r.IntN(40)}
				f.Truncate(int64(o.off))
				pending = append(pending, o)
				history = append(history, fmt.Sprintf("truncate to %d", o.off))
			case n < 8:
				if err := f.Sync(); err != nil {
					t.Fatalf("%s: after\n%s\nsync: %v", name, strings.Join(history, "\n"), err)
				}
				for _, o := range pending {
					if !o.dropped {
						durable = apply(durable, o)
					}
				}
				pending = nil
				history = append(history, "sync")
			default:
				d.FailSync(run, name, 1)
				if err := f.Sync(); !errors.Is(err, syscall.EIO) {
					t.Fatalf("%s: a failing sync answered %v", name, err)
				}
				for i := range pending {
					pending[i].dropped = true
				}
				history = append(history, "failed sync")
			}
		}
		f.Close()
		cut(t, d, run, nil)
		if got := read(t, p); got != string(durable) {
			t.Fatalf("%s: after\n%s\nand a cut the file reads %q, the model %q", name, strings.Join(history, "\n"), got, durable)
		}
	}
}
