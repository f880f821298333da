package suite

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/storecheck/storecheck/fault"
	"github.com/storecheck/storecheck/fault/lossyfs"
	"github.com/storecheck/storecheck/spec"
)

// powerCutFile is a database path for a power-loss spec of c's store, on a
// forgetful file system (fault/lossyfs) mounted for the spec, and cut,
// which cuts its power (fault.PowerCut, as the simulator's): what the
// backend never synced is lost, and every file name its folder's sync
// never made durable (strict POSIX, lossyfs.EntriesPOSIX), close (the store's) runs while the power is
// off, as a process that died with the machine would leave its handles, its
// error the power's, and the power comes back. The spec is skipped, with the reason, where no FUSE mount can
// be made, and for a backend that declares it keeps its writes across
// process crashes only where the seed allows it.
//
// Where the harness can start a process of its own for the spec
// (Harness.OwnProcess), *h opens in that process until the cut, which
// dooms it first and ends it after, so that a death the cut causes is the
// cut's and no other spec loses its backend; *h is the spec's own harness
// again when the power comes back, and the spec reopens through it.
func powerCutFile(h *Harness, c spec.Contract) (path string, cut func(close func() error)) {
	GinkgoHelper()
	need(h.Capabilities.Files, spec.CapFiles, "survival of a power cut")
	if why := c.PowerLossExempt(h.Capabilities); why != "" {
		Skip("power loss not explored: " + why)
	}
	d, err := lossyfs.Mount(GinkgoT().TempDir())
	var u *lossyfs.Unavailable
	if errors.As(err, &u) {
		Skip("power loss not explored: " + u.Reason)
	}
	Expect(err).NotTo(HaveOccurred(), "mount a forgetful file system")
	DeferCleanup(d.Unmount)
	dir := filepath.Join(d.Dir, "spec")
	Expect(os.Mkdir(dir, 0o755)).To(Succeed())
	// Strict POSIX: a name never made durable by a sync of its folder is
	// lost with the data never synced (spec.PowerLossModel). SQLite syncs
	// its folder itself; a file a backend keeps beside its database is
	// the backend's to make durable.
	Expect(d.SetEntryModel(dir, lossyfs.EntriesPOSIX)).To(Succeed(), "follow strict POSIX's directory entries")
	doom, end := func() {}, func() error { return nil }
	if h.OwnProcess != nil {
		own, dm, en, err := h.OwnProcess(context.Background())
		Expect(err).NotTo(HaveOccurred(), "start a process of the backend's own for the power cut")
		saved := *h
		*h, doom, end = own, dm, en
		var once sync.Once
		end = func() error {
			once.Do(func() { en(); *h = saved })
			return nil
		}
		DeferCleanup(end)
	}
	return filepath.Join(dir, c.Name+".db"), func(close func() error) {
		GinkgoHelper()
		doom()
		env := &fault.Parts{Disk: d, Dir: dir, Down: func() error { close(); return end() }}
		Expect(fault.PowerCut{}.Inject(context.Background(), env)).To(Succeed(), "cut the power and give it back")
	}
}
