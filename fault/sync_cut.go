package fault

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/storecheck/storecheck/fault/lossyfs"
)

// SyncCut is SyncCrash with the cut's outcome given instead of drawn: at
// the Nth sync (1 when 0) of File, from now, the power goes, keeping of
// the unsynced writes those Kept names (lossyfs.Fates) and of the entry ops
// not yet durable the first KeepEntries. The simulator's exhaustive mode
// names it, once for each crash state of a cut at a sync; no seed draws
// it. It needs the database on a file system that forgets, and an Env
// that arms it (SyncKeeper: the simulator's).
type SyncCut struct {
	File        string
	Nth         int
	Kept        lossyfs.Fates
	KeepEntries int
}

// SyncKeeper is an Env that can cut the power at a sync with the cut's
// outcome given.
type SyncKeeper interface {
	CutPowerAtSyncKeeping(ctx context.Context, file string, nth int, kept lossyfs.Fates, keepEntries int) error
}

func (f SyncCut) Inject(ctx context.Context, env Env) error {
	k, ok := env.(SyncKeeper)
	if !ok {
		return fmt.Errorf("fault sync_cut: this run cannot cut the power at a sync with its outcome given")
	}
	return k.CutPowerAtSyncKeeping(ctx, f.File, max(f.Nth, 1), f.Kept, f.KeepEntries)
}

func (f SyncCut) String() string {
	kept := "every unsynced write lost"
	if len(f.Kept) > 0 {
		s := make([]string, len(f.Kept))
		for i, k := range f.Kept {
			s[i] = k.String()
		}
		kept = "of the unsynced writes only these survive: " + strings.Join(s, ", ")
	}
	if f.KeepEntries > 0 {
		kept += fmt.Sprintf("; the first %d entry ops not yet durable survive", f.KeepEntries)
	}
	return fmt.Sprintf("cut the power at sync %d of %s (%s)", max(f.Nth, 1), f.File, kept)
}

type syncCutJSON struct {
	File        string        `json:"file,omitempty"`
	Nth         int           `json:"nth,omitempty"`
	Kept        lossyfs.Fates `json:"kept,omitempty"`
	KeepEntries int           `json:"keep_entries,omitempty"`
}

// Never drawn (Draw nil), it takes no part in any seed's draws; it shrinks
// as a power cut's fates do: kept entry ops halve, torn writes go, kept
// writes halve.
var _ = Register(Def[SyncCut, syncCutJSON]{
	Name: "sync_cut",
	Rank: 97,
	Wire: func(f SyncCut) syncCutJSON {
		return syncCutJSON{File: f.File, Nth: f.Nth, Kept: f.Kept, KeepEntries: f.KeepEntries}
	},
	Unwire: func(j syncCutJSON) (SyncCut, error) {
		if j.File == "" || j.Nth < 0 {
			return SyncCut{}, fmt.Errorf("fault sync_cut needs a file, and nth is never negative (got %q, %d)", j.File, j.Nth)
		}
		cut, err := unwirePowerCut(powerCutJSON{Kept: j.Kept, KeepEntries: j.KeepEntries})
		if err != nil {
			return SyncCut{}, fmt.Errorf("fault sync_cut: %w", err)
		}
		return SyncCut{File: j.File, Nth: j.Nth, Kept: cut.Kept, KeepEntries: cut.KeepEntries}, nil
	},
	ForgetfulDisk: true,
	Shrink: func(f SyncCut) (SyncCut, bool) {
		switch {
		case f.KeepEntries > 0:
			return SyncCut{File: f.File, Nth: f.Nth, Kept: f.Kept, KeepEntries: f.KeepEntries / 2}, true
		case len(f.Kept) == 0:
			return f, false
		}
		for i := len(f.Kept) - 1; i >= 0; i-- {
			if len(f.Kept[i].Sectors) > 0 {
				return SyncCut{File: f.File, Nth: f.Nth, Kept: slices.Delete(slices.Clone(f.Kept), i, i+1)}, true
			}
		}
		return SyncCut{File: f.File, Nth: f.Nth, Kept: slices.Clone(f.Kept[:len(f.Kept)/2])}, true
	},
})
