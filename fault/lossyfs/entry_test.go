package lossyfs

import (
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// writeSynced writes data to a new file p and fsyncs it (the file, not its
// folder).
func writeSynced(t *testing.T, p, data string) {
	t.Helper()
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(data); err != nil {
		t.Fatal(err)
	}
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

func syncDir(t *testing.T, dir string) {
	t.Helper()
	f, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		t.Fatal(err)
	}
}

func exists(p string) bool { _, err := os.Lstat(p); return err == nil }

func setModel(t *testing.T, d *Disk, run, model string) {
	t.Helper()
	if err := d.SetEntryModel(run, model); err != nil {
		t.Fatal(err)
	}
}

// Under strict POSIX a temp file synced and renamed into place, its folder
// never synced, is undone by a cut: the old file is back under its name,
// and the temp name with it; the cut names what it undid. A sync of the
// folder makes the rename durable.
func TestUnderPOSIXACutUndoesARenameItsFolderNeverSynced(t *testing.T) {
	d, run := mountForTest(t)
	setModel(t, d, run, EntriesPOSIX)
	final, tmp := filepath.Join(run, "a"), filepath.Join(run, "a.tmp")
	writeSynced(t, final, "old")
	syncDir(t, run)
	writeSynced(t, tmp, "new")
	if err := os.Rename(tmp, final); err != nil {
		t.Fatal(err)
	}
	if got, _ := d.Entries(run); !reflect.DeepEqual(got, []string{"create a.tmp", "rename a.tmp -> a"}) {
		t.Fatalf("entry ops not yet durable: %q", got)
	}
	c := cut(t, d, run, nil)
	if !reflect.DeepEqual(c.Undone, []string{"create a.tmp", "rename a.tmp -> a"}) {
		t.Errorf("the cut undid %q", c.Undone)
	}
	if got := read(t, final); got != "old" {
		t.Errorf("after the cut a reads %q, want the old file back", got)
	}
	if exists(tmp) {
		t.Errorf("a.tmp, created in a folder never synced, survived the cut")
	}

	// Synced, the rename survives.
	writeSynced(t, tmp, "new")
	os.Rename(tmp, final)
	syncDir(t, run)
	if c := cut(t, d, run, nil); len(c.Undone) != 0 {
		t.Errorf("a cut after the folder's sync undid %q", c.Undone)
	}
	if got := read(t, final); got != "new" {
		t.Errorf("after a synced rename and a cut, a reads %q, want new", got)
	}
}

// Under POSIX an unlink and a link are undone too, and a file's own fsync
// does not make its name durable; a sync of another folder does not either.
func TestUnderPOSIXAnUnlinkAndALinkAreUndoneAndAFileSyncIsNoFolderSync(t *testing.T) {
	d, run := mountForTest(t)
	setModel(t, d, run, EntriesPOSIX)
	sub := filepath.Join(run, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	gone, linked := filepath.Join(run, "gone"), filepath.Join(sub, "linked")
	writeSynced(t, gone, "kept")
	syncDir(t, run)
	os.Link(gone, linked)
	os.Remove(gone)
	syncDir(t, sub) // the link is durable, the unlink is not
	writeSynced(t, filepath.Join(run, "other"), "x")
	c := cut(t, d, run, nil)
	if want := []string{"unlink gone", "create other"}; !reflect.DeepEqual(c.Undone, want) {
		t.Errorf("the cut undid %q, want %q", c.Undone, want)
	}
	if got := read(t, gone); got != "kept" {
		t.Errorf("an unlinked file reads %q after the cut undid its unlink", got)
	}
	if got := read(t, linked); got != "kept" {
		t.Errorf("a link whose folder was synced reads %q", got)
	}
	if exists(filepath.Join(run, "other")) {
		t.Errorf("a file fsynced, its folder not, kept its name")
	}
}

// Under ext4's ordered mode a sync of any file commits every entry op
// before it; a cut keeps a prefix of the others, as many as it is told.
func TestUnderExt4OrderedAnySyncCommitsAndACutKeepsAPrefix(t *testing.T) {
	d, run := mountForTest(t)
	setModel(t, d, run, EntriesExt4Ordered)
	tmp, final := filepath.Join(run, "t"), filepath.Join(run, "f")
	writeSynced(t, tmp, "data") // its create is committed by its own sync
	os.Rename(tmp, final)
	for _, n := range []string{"x", "y", "z"} {
		os.WriteFile(filepath.Join(run, n), nil, 0o644)
	}
	c, err := d.CutEntries(run, nil, 2)
	if err != nil {
		t.Fatal(err)
	}
	d.Thaw(run)
	if want := []string{"create y", "create z"}; !reflect.DeepEqual(c.Undone, want) {
		t.Errorf("keeping 2 of 4, the cut undid %q, want %q", c.Undone, want)
	}
	for n, want := range map[string]bool{"f": true, "t": false, "x": true, "y": false, "z": false} {
		if exists(filepath.Join(run, n)) != want {
			t.Errorf("after the cut %s exists: %v, want %v", n, !want, want)
		}
	}

	// Any file's sync commits every entry op made before it.
	os.Rename(final, tmp)
	writeSynced(t, filepath.Join(run, "w"), "")
	if c := cut(t, d, run, nil); len(c.Undone) != 0 {
		t.Errorf("after a sync the cut undid %q", c.Undone)
	}
	if !exists(tmp) || exists(final) {
		t.Errorf("a rename committed by another file's sync was undone")
	}
}

// With no model, entry ops are durable at once, as before.
func TestWithNoModelEntryOpsAreDurableAtOnce(t *testing.T) {
	d, run := mountForTest(t)
	writeSynced(t, filepath.Join(run, "t"), "data")
	os.Rename(filepath.Join(run, "t"), filepath.Join(run, "f"))
	if c := cut(t, d, run, nil); len(c.Undone) != 0 {
		t.Errorf("with no model the cut undid %q", c.Undone)
	}
	if got := read(t, filepath.Join(run, "f")); got != "data" {
		t.Errorf("with no model a synced file renamed reads %q", got)
	}
	// An unknown model is refused, by its name; the known ones are taken.
	if err := d.SetEntryModel(run, "journal"); err == nil || !strings.Contains(err.Error(), `unknown entry model "journal"`) {
		t.Errorf("an unknown model: %v", err)
	}
	for _, m := range append([]string{EntriesDurable}, EntryModels...) {
		if err := d.SetEntryModel(run, m); err != nil {
			t.Errorf("model %q: %v", m, err)
		}
	}
}

// snapshot is every file under dir, by its path relative to it, with its
// bytes, sorted: the names and bytes a cut left.
func snapshot(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		fmt.Fprintf(&b, "%s=%q\n", rel, read(t, p))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// Under strict POSIX each kind of entry op (create, link, unlink, rename,
// and a rename across folders) is undone by a cut until the folders it
// names are synced, and survives once they are: a rename across folders
// needs both, the one it left and the one it entered.
func TestUnderPOSIXEachEntryOpIsUndoneUntilItsFoldersAreSynced(t *testing.T) {
	d, _ := mountForTest(t)
	for _, tc := range []struct {
		name   string
		op     func(dir string) error
		syncs  []string // the folders (relative to the run) synced after it
		before string   // what a cut that undoes it leaves
		after  string   // what a cut leaves once it is durable
	}{
		{"create", func(dir string) error { return os.WriteFile(filepath.Join(dir, "n"), []byte("new"), 0o644) }, []string{"."},
			"f=\"old\"\n", "f=\"old\"\nn=\"\"\n"},
		{"link", func(dir string) error { return os.Link(filepath.Join(dir, "f"), filepath.Join(dir, "n")) }, []string{"."},
			"f=\"old\"\n", "f=\"old\"\nn=\"old\"\n"},
		{"unlink", func(dir string) error { return os.Remove(filepath.Join(dir, "f")) }, []string{"."},
			"f=\"old\"\n", ""},
		{"rename", func(dir string) error { return os.Rename(filepath.Join(dir, "f"), filepath.Join(dir, "n")) }, []string{"."},
			"f=\"old\"\n", "n=\"old\"\n"},
		{"rename across folders", func(dir string) error { return os.Rename(filepath.Join(dir, "f"), filepath.Join(dir, "sub", "n")) },
			[]string{".", "sub"}, "f=\"old\"\n", "sub/n=\"old\"\n"},
	} {
		// Synced: none of its folders, each alone (when it names two), all.
		sets := [][]string{nil, tc.syncs}
		if len(tc.syncs) > 1 {
			for _, dir := range tc.syncs {
				sets = append(sets, []string{dir})
			}
		}
		for i, synced := range sets {
			run := filepath.Join(d.Dir, fmt.Sprintf("%s-%d", strings.ReplaceAll(tc.name, " ", "-"), i))
			if err := os.Mkdir(run, 0o755); err != nil {
				t.Fatal(err)
			}
			setModel(t, d, run, EntriesPOSIX)
			if tc.name == "rename across folders" {
				os.Mkdir(filepath.Join(run, "sub"), 0o755) // folders are durable at once
			}
			writeSynced(t, filepath.Join(run, "f"), "old")
			syncDir(t, run)
			if err := tc.op(run); err != nil {
				t.Fatal(err)
			}
			for _, dir := range synced {
				syncDir(t, filepath.Join(run, dir))
			}
			c := cut(t, d, run, nil)
			durable := len(synced) == len(tc.syncs)
			want := tc.before
			if durable {
				want = tc.after
			}
			if got := snapshot(t, run); got != want {
				t.Errorf("%s, folders %q of %q synced: after the cut (which undid %q) the folder holds\n%swant\n%s", tc.name, synced, tc.syncs, c.Undone, got, want)
			}
			if durable != (len(c.Undone) == 0) {
				t.Errorf("%s, folders %q of %q synced: the cut undid %q", tc.name, synced, tc.syncs, c.Undone)
			}
		}
	}
}

// A power cut at a sync draws what it keeps from its seed, the entry ops
// kept as well as the writes: the same ops and the same seed leave the
// same names and bytes, in two folders alike; the prefix kept is the one
// drawn after the fates from the seed's stream; and the seeds do not all
// leave the same state.
func TestAPowerCutAtASyncKeepsTheSameNamesAndBytesForTheSameSeed(t *testing.T) {
	d, _ := mountForTest(t)
	ops := func(dir string) *os.File {
		t.Helper()
		setModel(t, d, dir, EntriesPOSIX)
		wal, err := os.Create(filepath.Join(dir, "wal"))
		if err != nil {
			t.Fatal(err)
		}
		for i, name := range []string{"a", "b", "c", "d"} {
			os.WriteFile(filepath.Join(dir, name+".tmp"), []byte(strings.Repeat(name, 600)), 0o644)
			os.Rename(filepath.Join(dir, name+".tmp"), filepath.Join(dir, name))
			fmt.Fprintf(wal, "record %d ", i)
		}
		return wal
	}
	states := map[string]bool{}
	for seed := uint64(1); seed <= 12; seed++ {
		var got [2]string
		for i := range got {
			dir := filepath.Join(d.Dir, fmt.Sprintf("seed-%d-%d", seed, i))
			os.Mkdir(dir, 0o755)
			wal := ops(dir)
			pending, _ := d.Entries(dir)
			unsynced, _ := d.Unsynced(dir)
			if err := d.CrashAtSync(dir, "wal", 1, seed, nil); err != nil {
				t.Fatal(err)
			}
			if err := wal.Sync(); !errors.Is(err, syscall.EIO) {
				t.Fatalf("seed %d: the sync answered %v, want EIO", seed, err)
			}
			wal.Close()
			c, _, struck, err := d.Struck(dir)
			if err != nil || !struck {
				t.Fatalf("seed %d: struck %v %v", seed, struck, err)
			}
			r := rand.New(rand.NewPCG(seed, fatesStream))
			DrawFates(r, unsynced, nil)
			if keep := drawKeepEntries(r, len(pending)); !slices.Equal(c.Undone, pending[keep:]) {
				t.Errorf("seed %d: the cut undid %q of %q, want all but the first %d", seed, c.Undone, pending, keep)
			}
			d.Thaw(dir)
			got[i] = snapshot(t, dir)
		}
		if got[0] != got[1] {
			t.Errorf("seed %d left two states:\n%s\nand\n%s", seed, got[0], got[1])
		}
		states[got[0]] = true
	}
	if len(states) < 3 {
		t.Errorf("12 seeds left %d states: the seed does not draw them", len(states))
	}
}

// SQLite's own files are not exposed (spec.PowerLossModel): in WAL mode it
// syncs its folder after it creates the WAL (sqlite.org/atomiccommit.html;
// os_unix.c's UNIXFILE_DIRSYNC), so under strict POSIX no entry op of its
// is pending once a commit returns, the database file's own creation
// included. In DELETE mode the unlink of the journal that commits a
// transaction would stay pending under synchronous=FULL (SQLite's
// synchronous pragma: only EXTRA syncs the directory after it), but the
// model makes it durable at once (sqliteJournal: the seeds' Durable is
// read as FULL), so nothing is pending there either.
func TestUnderPOSIXSQLiteLeavesOnlyWhatItDocumentsPending(t *testing.T) {
	d, _ := mountForTest(t)
	for _, tc := range []struct {
		journal, synchronous string
		pending              []string
	}{
		{"WAL", "FULL", nil},
		{"DELETE", "FULL", nil},
		{"DELETE", "EXTRA", nil},
	} {
		dir := filepath.Join(d.Dir, tc.journal+"-"+tc.synchronous)
		os.Mkdir(dir, 0o755)
		setModel(t, d, dir, EntriesPOSIX)
		db, err := sql.Open("sqlite", "file:"+filepath.Join(dir, "s.db")+"?_pragma=journal_mode("+tc.journal+")&_pragma=synchronous("+tc.synchronous+")")
		if err != nil {
			t.Fatal(err)
		}
		for i, q := range []string{"CREATE TABLE kv (k INTEGER PRIMARY KEY, v TEXT)", "INSERT INTO kv VALUES (1, 'a')", "INSERT INTO kv VALUES (2, 'b')"} {
			if _, err := db.Exec(q); err != nil {
				t.Fatal(err)
			}
			if got, _ := d.Entries(dir); !reflect.DeepEqual(got, tc.pending) && (i > 0 || tc.pending == nil) {
				t.Errorf("journal_mode=%s synchronous=%s: after %q the entry ops pending are %q, want %q", tc.journal, tc.synchronous, q, got, tc.pending)
			}
		}
		db.Close()
	}
}
