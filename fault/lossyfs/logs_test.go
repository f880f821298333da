package lossyfs

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A folder's logs are each file's durable image (its last sync's, with
// what a failed sync dropped never in it) and its unsynced changes with
// their bytes, numbered as fates number them: applying the changes a cut
// keeps to the durable image gives what the cut leaves.
func TestLogsAreTheDurableImageAndTheChangesSince(t *testing.T) {
	d, run := mountForTest(t)
	a := filepath.Join(run, "a")
	writeSynced(t, a, strings.Repeat("s", 1000))
	f, err := os.OpenFile(a, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt([]byte("dropped"), 0); err != nil {
		t.Fatal(err)
	}
	if err := d.FailSync(run, "a", 1); err != nil {
		t.Fatal(err)
	}
	if f.Sync() == nil {
		t.Fatal("the failing sync succeeded")
	}
	if _, err := f.WriteAt([]byte("later"), 600); err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(700); err != nil {
		t.Fatal(err)
	}
	logs, err := d.Logs(run)
	if err != nil {
		t.Fatal(err)
	}
	lg, ok := logs["a"]
	if !ok {
		t.Fatalf("no log of a: %v", logs)
	}
	if string(lg.Durable) != strings.Repeat("s", 1000) {
		t.Errorf("the durable image is %.20q... (%d bytes), want the 1000 synced", lg.Durable, len(lg.Durable))
	}
	u, err := d.Unsynced(run)
	if err != nil {
		t.Fatal(err)
	}
	if len(lg.Changes) != len(u["a"]) || len(lg.Changes) != 3 {
		t.Fatalf("the log has %d changes, Unsynced %v, want 3 (dropped, write, truncation)", len(lg.Changes), u["a"])
	}
	for i, c := range lg.Changes {
		if c.Sectors() != u["a"][i] {
			t.Errorf("change %d covers %d sectors, Unsynced says %d", i+1, c.Sectors(), u["a"][i])
		}
	}
	if !lg.Changes[0].Dropped || string(lg.Changes[1].Data) != "later" || lg.Changes[1].Off != 600 || !lg.Changes[2].Trunc || lg.Changes[2].Off != 700 {
		t.Errorf("the changes are %+v", lg.Changes)
	}
	want := bytes.Clone(lg.Durable)
	copy(want[600:], "later")
	cut(t, d, run, Fates{{File: "a", N: 1}, {File: "a", N: 2}})
	if got := read(t, a); got != string(want) {
		t.Errorf("a cut keeping the dropped write and the later one leaves %d bytes, want the durable image with the later write", len(got))
	}
}
