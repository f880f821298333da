package suite

import (
	"context"
	"errors"
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/storecheck/storecheck/fault"
	"github.com/storecheck/storecheck/fault/lossyfs"
	"github.com/storecheck/storecheck/spec"
)

// powerCutFile is a database path for a power-loss spec of c's store, on a
// forgetful file system (fault/lossyfs) mounted for the spec, and cut,
// which cuts its power (fault.PowerCut, as the simulator's): what the
// backend never synced is lost, close (the store's) runs while the power is
// off, as a process that died with the machine would leave its handles, its
// error the power's, and the power comes back. The spec is skipped, with the reason, where no FUSE mount can
// be made, and for a backend that declares it keeps its writes across
// process crashes only where the seed allows it.
func powerCutFile(h Harness, c spec.Contract) (path string, cut func(close func() error)) {
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
	return filepath.Join(dir, c.Name+".db"), func(close func() error) {
		GinkgoHelper()
		env := &fault.Parts{Disk: d, Dir: dir, Down: close}
		Expect(fault.PowerCut{}.Inject(context.Background(), env)).To(Succeed(), "cut the power and give it back")
	}
}
