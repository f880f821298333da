package fault

import (
	"context"
	"errors"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/storecheck/storecheck/fault/lossyfs"
)

// Process is a backend process the kit can crash and start again:
// *adapters.Exec is one.
type Process interface {
	// Kill ends the process with SIGKILL, between operations.
	Kill() error
	// Restart starts the program again on the same files.
	Restart(ctx context.Context) error
	// ArmCrash makes the process exit, without closing anything, the nth
	// time it reaches the named crash point.
	ArmCrash(ctx context.Context, point string, nth int) error
}

// Parts is an Env of the parts a spec or a test holds; a fault whose part
// is missing fails to inject, with the reason.
type Parts struct {
	// Process is the backend process (nil for a backend in this process).
	Process Process
	// Clock is the clock the kit gives the backend.
	Clock *clockwork.FakeClock
	// Boundary is the Target wrapper the adapter-boundary faults go
	// through.
	Boundary *Injector
	// Disk is the forgetful file system the backend's folder Dir is on,
	// whose power a cut cuts; Down, when set, is what dies with the power
	// (a handle's close, a process's kill), run while the power is off,
	// its error the power's.
	Disk *lossyfs.Disk
	Dir  string
	Down func() error
}

var errNoProcess = errors.New("the backend runs in this process: there is no process to crash")

func (p *Parts) Kill(ctx context.Context) error {
	if p.Process == nil {
		return errNoProcess
	}
	return p.Process.Kill()
}

func (p *Parts) Restart(ctx context.Context) error {
	if p.Process == nil {
		return errNoProcess
	}
	return p.Process.Restart(ctx)
}

func (p *Parts) ArmCrash(ctx context.Context, point string, nth int) error {
	if p.Process == nil {
		return errNoProcess
	}
	return p.Process.ArmCrash(ctx, point, nth)
}

func (p *Parts) AdvanceClock(d time.Duration) error {
	if p.Clock == nil {
		return errors.New("clock jump: the env has no fake clock")
	}
	p.Clock.Advance(d)
	return nil
}

// Stall pauses the operation at the adapter boundary, for d of real time.
func (p *Parts) Stall(op string, d time.Duration) error {
	return p.Intercept(Plan{Op: op, Times: 1, Pause: d})
}

func (p *Parts) Intercept(plan Plan) error {
	if p.Boundary == nil {
		return errors.New("the env has no Injector at the adapter boundary")
	}
	p.Boundary.Plan(plan)
	return nil
}

// FailSync arms the disk: the nth sync of file fails.
func (p *Parts) FailSync(ctx context.Context, file string, nth int) error {
	if p.Disk == nil {
		return errors.New("failing sync: it needs the database on a forgetful file system (fault/lossyfs); the env has none")
	}
	return p.Disk.FailSync(p.Dir, file, nth)
}

// CutPowerAtSync arms the disk: the power goes at the nth sync of file.
// The spec that holds the parts sees it go when its backend makes that
// sync (it fails, as does every change after it); Disk.Struck says so,
// and the spec ends what runs on the folder and thaws it (Disk.Thaw).
func (p *Parts) CutPowerAtSync(ctx context.Context, file string, nth int, seed uint64) error {
	if p.Disk == nil {
		return errors.New("power cut at a sync: it needs the database on a forgetful file system (fault/lossyfs); the env has none")
	}
	return p.Disk.CrashAtSync(p.Dir, file, nth, seed, NoFate)
}

func (p *Parts) CutPower(ctx context.Context, kept lossyfs.Fates, keepEntries int) error {
	if p.Disk == nil {
		return errors.New("power cut: a power cut needs the database on a forgetful file system (fault/lossyfs); the env has none")
	}
	if _, err := p.Disk.CutEntries(p.Dir, kept, keepEntries); err != nil {
		return err
	}
	if p.Down != nil {
		p.Down()
	}
	return p.Disk.Thaw(p.Dir)
}
