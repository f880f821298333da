package lossyfs

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// behind is the backing file of path (a file on the mount), which the
// kernel's cache does not see change.
func behind(d *Disk, path string) string {
	return filepath.Join(d.folder, "backing", strings.TrimPrefix(path, d.Dir))
}

// scribble overwrites the backing file of path with as many 'X's as it has
// bytes: a read through the mount that still sees what was written was
// served from the kernel's cache, not by the server.
func scribble(t *testing.T, d *Disk, path string) {
	t.Helper()
	st, err := os.Stat(behind(d, path))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(behind(d, path), bytes.Repeat([]byte("X"), int(st.Size())), 0o644); err != nil {
		t.Fatal(err)
	}
}

// frames writes n frames as SQLite's WAL does (a header of 24 bytes, then
// a page of 4096, one write each, after a header of 32), which never line up
// with the kernel's pages, and answers what it wrote.
func frames(t *testing.T, f *os.File, n int) []byte {
	t.Helper()
	var all []byte
	put := func(b []byte) {
		if _, err := f.WriteAt(b, int64(len(all))); err != nil {
			t.Fatal(err)
		}
		all = append(all, b...)
	}
	put(bytes.Repeat([]byte("w"), 32))
	for i := range n {
		put(bytes.Repeat([]byte{byte('a' + i)}, 24))
		put(bytes.Repeat([]byte{byte('A' + i)}, 4096))
	}
	return all
}

// A sync hands the kernel the pages its writes left partly written, up to
// the end of the file, so that reading them back (as SQLite reads its WAL)
// costs no round trip: after the sync the kernel serves every byte from its
// cache, even once the backing file changed behind it.
func TestASyncHandsTheKernelThePagesItsWritesLeftPartlyWritten(t *testing.T) {
	d, run := mountForTest(t)
	p, f := create(t, run, "db-wal")
	defer f.Close()
	want := frames(t, f, 5)
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	scribble(t, d, p)
	if got := []byte(read(t, p)); !bytes.Equal(got, want) {
		i := firstDiff(got, want)
		t.Errorf("read back %d bytes, want the %d written: they differ from byte %d (%q, page %d): the kernel asked the server for a page the sync should have stored", len(got), len(want), i, got[i:min(i+8, len(got))], i/int(pageSize))
	}
}

// Not before the sync: a page written in part is stored only once the file
// is synced, when no write of it can be under way.
func TestNoPageIsStoredBeforeTheSync(t *testing.T) {
	d, run := mountForTest(t)
	p, f := create(t, run, "db-wal")
	defer f.Close()
	frames(t, f, 3)
	scribble(t, d, p)
	if got := read(t, p); !strings.Contains(got, "X") {
		t.Errorf("read back no byte of the backing file before any sync: a page was stored before the sync")
	}
}

// A file the kernel wrote mapped pages of is never stored: a page changed
// through a mapping is newer in the kernel than in the backing file.
func TestNoPageOfAMappedFileIsStored(t *testing.T) {
	d, run := mountForTest(t)
	p, f := create(t, run, "db-shm")
	defer f.Close()
	if err := f.Truncate(2 * pageSize); err != nil {
		t.Fatal(err)
	}
	m, err := unix.Mmap(int(f.Fd()), 0, int(2*pageSize), unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(m)
	m[10] = 'M'
	if err := unix.Msync(m, unix.MS_SYNC); err != nil {
		t.Fatal(err)
	}
	// A page past the mapped ones, written in part and synced.
	if _, err := f.WriteAt([]byte("partly"), 2*pageSize+100); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	scribble(t, d, p)
	got := make([]byte, 6)
	if _, err := f.ReadAt(got, 2*pageSize+100); err != nil {
		t.Fatal(err)
	}
	if string(got) != "XXXXXX" {
		t.Errorf("the written page reads %q, want the backing file's XXXXXX: a page of a mapped file was stored", got)
	}
}

// The pages a sync stored hold what the backing file did then; a cut that
// loses the writes since still reads as the disk holds it (the thaw drops
// what the kernel keeps, stored or not).
func TestACutDropsStoredPagesToo(t *testing.T) {
	d, run := mountForTest(t)
	p, f := create(t, run, "db-wal")
	synced := frames(t, f, 2)
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	// Unsynced: a frame over the first one's page (and the header), and one
	// more at the end.
	if _, err := f.WriteAt(bytes.Repeat([]byte("u"), 4096+24), 32); err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteAt(bytes.Repeat([]byte("v"), 4096+24), int64(len(synced))); err != nil {
		t.Fatal(err)
	}
	read(t, p) // every page in the kernel's cache
	f.Close()
	// (How many writes the kernel made of the two depends on its cache.)
	if c := cut(t, d, run, nil); c.Unsynced["db-wal"] == 0 {
		t.Fatalf("the cut lost %v, want the unsynced writes of db-wal", c.Unsynced)
	}
	if got := []byte(read(t, p)); !bytes.Equal(got, synced) {
		t.Errorf("after the cut db-wal reads %d bytes, want the %d synced ones (first byte that differs: %d)", len(got), len(synced), firstDiff(got, synced))
	}
}

// create is a new file name in the mount's folder run, open.
func create(t *testing.T, run, name string) (string, *os.File) {
	t.Helper()
	p := filepath.Join(run, name)
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	return p, f
}

// firstDiff is the first byte a and b differ at.
func firstDiff(a, b []byte) int {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return i
}
