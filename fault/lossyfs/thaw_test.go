package lossyfs

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A thaw drops the kernel's pages of a file whose name the cut undid: the
// file leaves the tree of inodes under its undone name, but the kernel may
// keep its inode and hand it back at the next lookup of the name it gets
// back, with the pages of before the cut (the model check found it, in 1
// run of 40: a lost write still read, zeros where a kept one was). A
// handle held across the cut keeps the inode, which makes it happen every
// time.
func TestAThawDropsThePagesOfAFileWhoseNameTheCutUndid(t *testing.T) {
	d, run := mountForTest(t)
	setModel(t, d, run, EntriesPOSIX)
	a, b := filepath.Join(run, "a"), filepath.Join(run, "b")
	synced := strings.Repeat("s", 1000)
	writeSynced(t, a, synced)
	syncDir(t, run)
	if err := os.Rename(a, b); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b, []byte(strings.Repeat("L", 3000)), 0o644); err != nil {
		t.Fatal(err)
	}
	h, err := os.Open(b)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	read(t, b) // the lost bytes in the kernel's cache
	if c := cut(t, d, run, nil); len(c.Undone) != 1 {
		t.Fatalf("the cut undid %q, want the rename", c.Undone)
	}
	if got := read(t, a); got != synced {
		t.Errorf("after the cut a reads %d bytes (%.8q...), want the 1000 synced ones: the kernel's pages of before the cut", len(got), got)
	}
}

// So does it for a file an unlink took out of the tree, whose name the cut
// gives back (the model check: open, unlink, cut, read by the name).
func TestAThawDropsThePagesOfAFileWhoseUnlinkTheCutUndid(t *testing.T) {
	d, run := mountForTest(t)
	setModel(t, d, run, EntriesPOSIX)
	a := filepath.Join(run, "a")
	synced := strings.Repeat("s", 1000)
	writeSynced(t, a, synced)
	syncDir(t, run)
	if err := os.Truncate(a, 10); err != nil {
		t.Fatal(err)
	}
	h, err := os.Open(a)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	read(t, a)
	if err := os.Remove(a); err != nil {
		t.Fatal(err)
	}
	if c := cut(t, d, run, nil); len(c.Undone) != 1 {
		t.Fatalf("the cut undid %q, want the unlink", c.Undone)
	}
	if got := read(t, a); got != synced {
		t.Errorf("after the cut a reads %d bytes (%.12q...), want the 1000 synced ones: the kernel's pages of before the cut", len(got), got)
	}
}

// And for a file still open that no name leads to (renamed over): a read
// through the dead handle after the thaw reads what the cut left, not the
// kernel's pages of before it.
func TestAThawDropsThePagesOfAFileOpenButNamedNoMore(t *testing.T) {
	d, run := mountForTest(t)
	a, b := filepath.Join(run, "a"), filepath.Join(run, "b")
	synced := strings.Repeat("s", 1000)
	writeSynced(t, b, synced)
	h, err := os.Open(b)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if err := os.WriteFile(b, []byte(strings.Repeat("L", 3000)), 0o644); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 4096)
	h.ReadAt(buf, 0)
	writeSynced(t, a, "new")
	if err := os.Rename(a, b); err != nil {
		t.Fatal(err)
	}
	cut(t, d, run, nil)
	n, _ := h.ReadAt(buf, 0)
	if got := string(buf[:n]); got != synced {
		t.Errorf("after the cut the handle reads %d bytes (%.8q...), want the 1000 synced ones: the kernel's pages of before the cut", n, got)
	}
}
