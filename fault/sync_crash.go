package fault

import (
	"context"
	"fmt"

	"github.com/storecheck/storecheck/fault/lossyfs"
)

// SyncCrash cuts the power at a sync, as SQLite's crash VFS does (src/
// test6.c: the crash comes at the Nth xSync of a named file): the Nth sync
// (fsync or fdatasync, 1 when 0) of File, from now, never returns; the
// power goes instead, and each write unsynced then has a fate drawn from
// Fates (lossyfs.DrawFates; 0: every one lost), the synced file's too.
// Every process dies, the operations in flight are indefinite, and the
// processes start again on what was durable, as after a PowerCut. A cut
// before it disarms it. It needs the database on a file system that
// forgets (package fault/lossyfs); File names a file of the run's folder.
type SyncCrash struct {
	File  string
	Nth   int
	Fates uint64
}

func (f SyncCrash) Inject(ctx context.Context, env Env) error {
	return env.CutPowerAtSync(ctx, f.File, max(f.Nth, 1), f.Fates)
}

func (f SyncCrash) String() string {
	fates := "every unsynced write lost"
	if f.Fates != 0 {
		fates = fmt.Sprintf("each unsynced write's fate drawn from %d", f.Fates)
	}
	return fmt.Sprintf("cut the power at sync %d of %s (%s)", max(f.Nth, 1), f.File, fates)
}

type syncCrashJSON struct {
	File  string `json:"file,omitempty"`
	Nth   int    `json:"nth,omitempty"`
	Fates uint64 `json:"fates,omitempty"`
}

// NoFate are the suffixes of the files a power cut gives no fate to (their
// unsynced writes are lost): SQLite's -shm, whose mmap'd pages the kernel
// writes back when it likes, so that what it holds unsynced is not the
// schedule's to say (SQLite rebuilds it after a crash).
var NoFate = []string{"-shm"}

// FatedFiles are the files of unsynced a power cut gives fates to, sorted
// (lossyfs.FatedFiles with NoFate).
func FatedFiles(unsynced map[string][]int) []string { return lossyfs.FatedFiles(unsynced, NoFate) }

// A power cut at a sync is drawn from a stream of its own, in a quarter of
// the seeds, about once in the default run's 600 decisions (rare, as a
// failing sync is, for the oracle's sake), on a file the run has open, at
// one of its next three syncs; half the time every unsynced write is lost,
// else each has a fate drawn from a seed. It shrinks to every write lost,
// then to the sooner sync.
var _ = Register(Def[SyncCrash, syncCrashJSON]{
	Name: "sync_crash",
	Rank: 96,
	Wire: func(f SyncCrash) syncCrashJSON { return syncCrashJSON{File: f.File, Nth: f.Nth, Fates: f.Fates} },
	Unwire: func(j syncCrashJSON) (SyncCrash, error) {
		if j.File == "" || j.Nth < 0 {
			return SyncCrash{}, fmt.Errorf("fault sync_crash needs a file, and nth is never negative (got %q, %d)", j.File, j.Nth)
		}
		return SyncCrash{File: j.File, Nth: j.Nth, Fates: j.Fates}, nil
	},
	ForgetfulDisk: true,
	Draw: &Draw{Rates: []float64{0, 0, 0, 0.0015}, Stream: 0x5c7a54, Make: func(d *Drawing) (Fault, int) {
		f := SyncCrash{File: syncedFile(d), Nth: 1 + d.R.IntN(3)}
		if d.R.IntN(2) == 1 {
			f.Fates = d.R.Uint64() | 1
		}
		return f, 0
	}},
	Shrink: func(f SyncCrash) (SyncCrash, bool) {
		switch {
		case f.Fates != 0:
			return SyncCrash{File: f.File, Nth: f.Nth}, true
		case f.Nth > 1:
			return SyncCrash{File: f.File, Nth: f.Nth - 1}, true
		}
		return f, false
	},
})

// syncedFile draws a file the run has open for a sync fault to name, never
// one NoFate names (SQLite never syncs its -shm); "(none)", which no sync
// matches, when none is (SQLite keeps its files open, so a run on it
// always has one).
func syncedFile(d *Drawing) string {
	unsynced, err := d.Unsynced()
	if err != nil {
		return "(none)"
	}
	files := FatedFiles(unsynced)
	if len(files) == 0 {
		return "(none)"
	}
	return files[d.R.IntN(len(files))]
}
