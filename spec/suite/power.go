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
	p := powerCutDisk(h, c)
	return p.path, func(close func() error) {
		GinkgoHelper()
		p.cut(close, nil)
	}
}

// powerDisk is a power-loss spec's forgetful file system (powerCutDisk).
type powerDisk struct {
	d         *lossyfs.Disk
	dir, path string
	doom      func()
	end       func() error
}

// cut cuts the power as powerCutFile's does, keeping the unsynced writes
// kept names (nil: none).
func (p *powerDisk) cut(close func() error, kept lossyfs.Fates) {
	GinkgoHelper()
	p.cutKeeping(close, kept, 0)
}

// cutKeeping is cut keeping the first keepEntries of the folder's entry
// ops not yet durable too.
func (p *powerDisk) cutKeeping(close func() error, kept lossyfs.Fates, keepEntries int) {
	GinkgoHelper()
	p.doom()
	env := &fault.Parts{Disk: p.d, Dir: p.dir, Down: func() error { close(); return p.end() }}
	Expect(fault.PowerCut{Kept: kept, KeepEntries: keepEntries}.Inject(context.Background(), env)).To(Succeed(), "cut the power and give it back")
}

// openFiles are the files the store holds open (but SQLite's -shm, which
// it never syncs), sorted: those a sync fault may name.
func (p *powerDisk) openFiles() []string {
	GinkgoHelper()
	open, err := p.d.Unsynced(p.dir)
	Expect(err).NotTo(HaveOccurred(), "list the files open")
	return fault.FatedFiles(open)
}

// powerCutDisk is powerCutFile's disk, for a spec that also fails syncs
// or keeps some unsynced writes.
func powerCutDisk(h *Harness, c spec.Contract) *powerDisk {
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
	return &powerDisk{d: d, dir: dir, path: filepath.Join(dir, c.Name+".db"), doom: doom, end: end}
}
