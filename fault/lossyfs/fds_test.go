package lossyfs

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// The server holds no descriptor of a removed folder's files: a file
// unlinked while open, with unsynced changes, and closed while its unlink
// is not yet durable is kept (its stash link keeps it, for a cut to bring
// it back), and once the folder is removed nothing can; the simulator removes a folder a run, and
// a sweep of thousands ran the server out of descriptors (open failed:
// "unable to open database file").
func TestARemovedFolderLeavesNoDescriptorInTheServer(t *testing.T) {
	d, _ := mountForTest(t)
	fds := func() int {
		e, err := os.ReadDir("/proc/" + strconv.Itoa(d.cmd.Process.Pid) + "/fd")
		if err != nil {
			t.Fatal(err)
		}
		return len(e)
	}
	before := fds()
	const runs = 40
	for i := range runs {
		run := filepath.Join(d.Dir, "r"+strconv.Itoa(i))
		if err := os.Mkdir(run, 0o755); err != nil {
			t.Fatal(err)
		}
		setModel(t, d, run, EntriesPOSIX)
		// As SQLite deletes its WAL at its last close: unlinked while
		// open, with writes never synced, then closed.
		p := filepath.Join(run, "f")
		f, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		f.WriteString("never synced")
		if err := os.Remove(p); err != nil {
			t.Fatal(err)
		}
		f.Close()
		time.Sleep(5 * time.Millisecond) // the close's release reaches the server (it is asynchronous)
		if err := os.RemoveAll(run); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(20 * time.Millisecond)
	if after := fds(); after-before > runs/4 {
		t.Errorf("the server holds %d descriptors after %d folders came and went, %d before", after, runs, before)
	}
}
