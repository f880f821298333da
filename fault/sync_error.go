package fault

import (
	"context"
	"fmt"
)

// SyncError makes a sync fail: the Nth sync (fsync or fdatasync, 1 when 0)
// of File, from now, answers EIO, and the file's dirty data is dropped as
// Linux drops it (the PostgreSQL fsync bug of 2018): the pages are marked
// clean, so the backend still reads them but they are never written, and a
// later sync succeeds without them; a later power cut loses them. A
// backend that retries the sync and trusts it has lost its writes. It
// needs the database on a file system that forgets (package fault/lossyfs);
// File names a file of the run's folder.
type SyncError struct {
	File string
	Nth  int
}

func (f SyncError) Inject(ctx context.Context, env Env) error {
	return env.FailSync(ctx, f.File, max(f.Nth, 1))
}

func (f SyncError) String() string {
	return fmt.Sprintf("fail sync %d of %s (EIO; its dirty data dropped)", max(f.Nth, 1), f.File)
}

type syncErrorJSON struct {
	File string `json:"file,omitempty"`
	Nth  int    `json:"nth,omitempty"`
}

// A failing sync is drawn from a stream of its own, in a quarter of the
// seeds, about once in the default run's 600 decisions (kept rare: the
// operation it fails is indefinite, and every indefinite operation the
// oracle keeps costs it; measured, BenchmarkPowerLossDisk), on a file the
// run has open (never SQLite's -shm, which it does not sync), at one of its
// next two syncs; it shrinks to the sooner sync.
var _ = Register(Def[SyncError, syncErrorJSON]{
	Name: "sync_error",
	Rank: 93,
	Wire: func(f SyncError) syncErrorJSON { return syncErrorJSON{File: f.File, Nth: f.Nth} },
	Unwire: func(j syncErrorJSON) (SyncError, error) {
		if j.File == "" || j.Nth < 0 {
			return SyncError{}, fmt.Errorf("fault sync_error needs a file, and nth is never negative (got %q, %d)", j.File, j.Nth)
		}
		return SyncError{File: j.File, Nth: j.Nth}, nil
	},
	ForgetfulDisk: true,
	Draw: &Draw{Rates: []float64{0, 0, 0, 0.0015}, Stream: 0x5e770e, Make: func(d *Drawing) (Fault, int) {
		return SyncError{File: syncedFile(d), Nth: 1 + d.R.IntN(2)}, 0
	}},
	Shrink: func(f SyncError) (SyncError, bool) {
		if f.Nth > 1 {
			return SyncError{File: f.File, Nth: f.Nth - 1}, true
		}
		return f, false
	},
})
