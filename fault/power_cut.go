package fault

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/storecheck/storecheck/fault/lossyfs"
)

// PowerCut cuts the power of the machine the backend runs on: every process
// on the database dies at once, everything the backend never synced (with
// fsync or fdatasync) is lost but for the writes Kept names, and the
// processes start again on what was durable. The operations in flight are
// indefinite. Each unsynced write has a fate of its own (lossyfs.Fates):
// kept whole, torn (some of its sectors kept), or lost, so the writes
// between two syncs may survive in any subset, across files, as on a disk
// that reorders its writes and lost power with some of them done. It needs
// the database on a file system that forgets (package fault/lossyfs), which
// the simulator mounts (and a spec, Parts.Disk); Kept names files of the
// run's folder.
//
// Under the run's directory-entry model (lossyfs.SetEntryModel) the cut
// also undoes the entry ops (create, rename, unlink, link) not yet durable
// but the first KeepEntries of them.
type PowerCut struct {
	Kept        lossyfs.Fates
	KeepEntries int
}

func (f PowerCut) Inject(ctx context.Context, env Env) error {
	return env.CutPower(ctx, f.Kept, f.KeepEntries)
}

func (f PowerCut) String() string {
	entries := ""
	if f.KeepEntries > 0 {
		entries = fmt.Sprintf("; the first %d entry ops not yet durable survive", f.KeepEntries)
	}
	if len(f.Kept) == 0 {
		return "cut the power (every unsynced write is lost" + entries + ")"
	}
	s := make([]string, len(f.Kept))
	for i, k := range f.Kept {
		s[i] = k.String()
	}
	return "cut the power; of the unsynced writes only these survive: " + strings.Join(s, ", ") + entries
}

// powerCutJSON is a cut's fates; File and Keep are what a schedule saved
// before writes had fates of their own wrote (the first Keep unsynced
// writes of File survive), read and never written.
type powerCutJSON struct {
	Kept        lossyfs.Fates `json:"kept,omitempty"`
	KeepEntries int           `json:"keep_entries,omitempty"`
	File        string        `json:"file,omitempty"`
	Keep        int           `json:"keep,omitempty"`
}

func unwirePowerCut(j powerCutJSON) (PowerCut, error) {
	if j.Keep < 0 || (j.Keep > 0) != (j.File != "") {
		return PowerCut{}, fmt.Errorf("fault power_cut: keep %d needs a file, a file needs keep, and keep is never negative", j.Keep)
	}
	if j.File != "" && len(j.Kept) > 0 {
		return PowerCut{}, fmt.Errorf("fault power_cut: file and keep (a torn prefix) or kept, not both")
	}
	if j.KeepEntries < 0 {
		return PowerCut{}, fmt.Errorf("fault power_cut: keep_entries %d is negative", j.KeepEntries)
	}
	kept := j.Kept
	for n := 1; n <= j.Keep; n++ {
		kept = append(kept, lossyfs.Kept{File: j.File, N: n})
	}
	type write struct {
		file string
		n    int
	}
	seen := map[write]bool{}
	for _, k := range kept {
		id := write{k.File, k.N}
		switch {
		case k.File == "" || k.N < 1:
			return PowerCut{}, fmt.Errorf("fault power_cut: kept %s: each kept write needs a file and a number from 1", k)
		case seen[id]:
			return PowerCut{}, fmt.Errorf("fault power_cut: kept %s#%d twice", k.File, k.N)
		case !slices.IsSorted(k.Sectors) || len(slices.Compact(slices.Clone(k.Sectors))) != len(k.Sectors) || (len(k.Sectors) > 0 && k.Sectors[0] < 0):
			return PowerCut{}, fmt.Errorf("fault power_cut: kept %s: a torn write's sectors are distinct, in order, from 0", k)
		}
		seen[id] = true
	}
	return PowerCut{Kept: kept, KeepEntries: j.KeepEntries}, nil
}

// Power cuts come from a stream of their own: half the seeds cut no power,
// the others a few times a run (about 2 or 6 of the default run's 600
// decisions). Half the cuts lose all that was never synced; the others give
// each unsynced write a fate: half of those keep a prefix of one file's
// writes (the writes persisted in order, as far as the disk got), the other
// half draw each write's fate on its own, across files (kept 4 in 8, lost
// 3 in 8, torn 1 in 8 when it covers two sectors or more: each of its
// sectors kept or not, some kept and some not). The -shm file of SQLite is
// never given a fate (its unsynced writes are lost): the kernel writes its
// mmap'd pages back when it likes, so what it holds unsynced is not the
// schedule's to say. Under the run's entry model a cut that gives fates
// also keeps a drawn prefix of the entry ops not yet durable (a cut that
// loses every write undoes every one). A cut shrinks toward the simplest,
// every write lost and every such entry op undone: first its kept entry
// ops halve; then its torn writes are lost, the last first; then its kept
// writes halve, the later half lost.
var _ = Register(Def[PowerCut, powerCutJSON]{
	Name:          "power_cut",
	Rank:          90,
	Wire:          func(f PowerCut) powerCutJSON { return powerCutJSON{Kept: f.Kept, KeepEntries: f.KeepEntries} },
	Unwire:        unwirePowerCut,
	ForgetfulDisk: true,
	Draw: &Draw{Rates: []float64{0, 0, 0.003, 0.01}, Stream: 0x9077e2, Make: func(d *Drawing) (Fault, int) {
		if d.R.IntN(2) == 0 {
			return PowerCut{}, 0
		}
		unsynced, err := d.Unsynced()
		if err != nil {
			return PowerCut{}, 0
		}
		files := FatedFiles(unsynced)
		var f PowerCut
		if d.R.IntN(2) == 0 {
			f = tornPrefix(d, files, unsynced)
		} else {
			f = PowerCut{Kept: lossyfs.DrawFates(d.R, unsynced, NoFate)}
		}
		f.KeepEntries = keepEntries(d)
		return f, 0
	}},
	Shrink: func(f PowerCut) (PowerCut, bool) {
		if f.KeepEntries > 0 {
			return PowerCut{Kept: f.Kept, KeepEntries: f.KeepEntries / 2}, true
		}
		for i := len(f.Kept) - 1; i >= 0; i-- {
			if len(f.Kept[i].Sectors) > 0 {
				return PowerCut{Kept: slices.Delete(slices.Clone(f.Kept), i, i+1)}, true
			}
		}
		if len(f.Kept) == 0 {
			return PowerCut{}, false
		}
		return PowerCut{Kept: slices.Clone(f.Kept[:len(f.Kept)/2])}, true
	},
})

// keepEntries draws how many of the run's entry ops not yet durable a cut
// that gives fates keeps, a prefix, from none to all; with none pending it
// draws nothing, so that a run with no entry model is the run it was.
func keepEntries(d *Drawing) int {
	if d.Entries == nil {
		return 0
	}
	pending, err := d.Entries()
	if err != nil || len(pending) == 0 {
		return 0
	}
	return d.R.IntN(len(pending) + 1)
}

// tornPrefix keeps the first writes of one file (one with two or more),
// some but not all of them.
func tornPrefix(d *Drawing, files []string, unsynced map[string][]int) PowerCut {
	// A file whose dirty data a failed sync dropped (-1: no fate) is kept
	// in no prefix: it has none a disk could write.
	files = slices.DeleteFunc(slices.Clone(files), func(f string) bool { return len(unsynced[f]) < 2 || slices.Contains(unsynced[f], -1) })
	if len(files) == 0 {
		return PowerCut{}
	}
	f := files[d.R.IntN(len(files))]
	var kept lossyfs.Fates
	for n, keep := 1, 1+d.R.IntN(len(unsynced[f])-1); n <= keep; n++ {
		kept = append(kept, lossyfs.Kept{File: f, N: n})
	}
	return PowerCut{Kept: kept}
}
