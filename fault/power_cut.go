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
// fsync or fdatasync) is lost, and the processes start again on what was
// durable. The operations in flight are indefinite. With File set the cut
// is torn: the first Keep of that file's unsynced writes and truncations
// survive, as on a disk that wrote some of them before it lost power. It
// needs the database on a file system that forgets (package fault/lossyfs),
// which the simulator mounts (and a spec, Parts.Disk); File names a file of
// the run's folder.
type PowerCut struct {
	File string
	Keep int
}

func (f PowerCut) Inject(ctx context.Context, env Env) error {
	return env.CutPower(ctx, lossyfs.Torn{File: f.File, Keep: f.Keep})
}

func (f PowerCut) String() string {
	if f.File == "" {
		return "cut the power (every unsynced write is lost)"
	}
	return fmt.Sprintf("cut the power, torn: the first %d unsynced writes of %s survive", f.Keep, f.File)
}

type powerCutJSON struct {
	File string `json:"file,omitempty"`
	Keep int    `json:"keep,omitempty"`
}

// Power cuts come from a stream of their own: half the seeds cut no power,
// the others a few times a run (about 2 or 6 of the default run's 600
// decisions). A cut loses all that was never synced, or (half the time,
// when a file has two or more unsynced writes) keeps a torn prefix of one
// file's. The -shm file of SQLite is never a torn one: the kernel writes
// its mmap'd pages back when it likes, so what it holds unsynced is not the
// schedule's to say. A torn cut shrinks to one that keeps half as much,
// then to one torn nowhere.
var _ = Register(Def[PowerCut, powerCutJSON]{
	Name: "power_cut",
	Rank: 90,
	Wire: func(f PowerCut) powerCutJSON { return powerCutJSON{File: f.File, Keep: f.Keep} },
	Unwire: func(j powerCutJSON) (PowerCut, error) {
		if j.Keep < 0 || (j.Keep > 0 && j.File == "") {
			return PowerCut{}, fmt.Errorf("fault power_cut: keep %d needs a file and is never negative", j.Keep)
		}
		return PowerCut{File: j.File, Keep: j.Keep}, nil
	},
	ForgetfulDisk: true,
	Draw: &Draw{Rates: []float64{0, 0, 0.003, 0.01}, Stream: 0x9077e2, Make: func(d *Drawing) (Fault, int) {
		if d.R.IntN(2) == 0 {
			return PowerCut{}, 0
		}
		unsynced, err := d.Unsynced()
		if err != nil {
			return PowerCut{}, 0
		}
		var files []string
		for f, n := range unsynced {
			if n >= 2 && !strings.HasSuffix(f, "-shm") && f != "(unlinked)" {
				files = append(files, f)
			}
		}
		if len(files) == 0 {
			return PowerCut{}, 0
		}
		slices.Sort(files)
		f := files[d.R.IntN(len(files))]
		return PowerCut{File: f, Keep: 1 + d.R.IntN(unsynced[f]-1)}, 0
	}},
	Shrink: func(f PowerCut) (PowerCut, bool) {
		if f.Keep > 1 {
			return PowerCut{File: f.File, Keep: f.Keep / 2}, true
		}
		return PowerCut{}, f.File != ""
	},
})
