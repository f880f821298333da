package lossyfs

import (
	"os"
	"path/filepath"
	"reflect"
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
	if err := d.SetEntryModel(run, "journal"); err == nil {
		t.Errorf("an unknown model was taken")
	}
}
