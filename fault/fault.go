// Package fault holds what can go wrong, as values: kill the backend
// process, crash it at an armed point inside an operation, restart it on
// the same files, cut the power (losing what was never synced), jump the
// clock, make the database busy or fail with an
// I/O error at the adapter boundary, lose a reply, pause a client.
//
// Each kind of fault is defined whole in one place, a file of this package
// (kill.go, crash_at.go, ...): its value, and the Def it registers (its
// stable name, its fields as a schedule writes them, how the simulator
// draws it from a seed, how a failing schedule shrinks it). What it does is
// its value's Inject, a short program over the verbs of an Env: the
// simulator's runs and their replays, the specs and the tests each
// implement Env, and run that one Inject. After a crash or a lost reply the
// operation in flight is indefinite (spec.KindTable): it may or may not
// have taken effect, and every operation acknowledged before must still be
// there after a restart.
package fault

import (
	"context"
	"time"

	"github.com/storecheck/storecheck/fault/lossyfs"
)

// Fault is one thing that goes wrong.
type Fault interface {
	// Inject makes it go wrong in env.
	Inject(ctx context.Context, env Env) error
	String() string
}

// Env is what faults act on: the backend as one fault strikes it (the
// simulator's env is the process the step names; Parts is an env of the
// parts a spec or a test holds). Each verb is one thing a fault may do; an
// env that lacks the part a verb needs answers with an error saying so,
// rather than doing nothing.
type Env interface {
	// Kill ends the backend process at once, without closing anything;
	// an operation it has in flight is indefinite. The simulator starts
	// the process again on the same files.
	Kill(ctx context.Context) error
	// Restart closes the backend process and starts it again on the same
	// files. The simulator first runs the operation in flight to its end.
	Restart(ctx context.Context) error
	// ArmCrash makes the process exit, without closing anything, the nth
	// time it reaches the named crash point. The simulator arms it for
	// the process's next operation, which crashes the first time it
	// reaches the point.
	ArmCrash(ctx context.Context, point string, nth int) error
	// AdvanceClock moves the kit's clock forward by d.
	AdvanceClock(d time.Duration) error
	// Stall holds the next operation named op (any when "") for d before
	// it is sent. The simulator holds the process's next operation,
	// whatever its name, for d of the run's clock.
	Stall(op string, d time.Duration) error
	// Intercept plans p at the adapter boundary (Injector).
	Intercept(p Plan) error
	// CutPower cuts the power of the backend's folder on a forgetful file
	// system (package fault/lossyfs): everything never synced is lost but
	// for the writes kept names, what runs on the folder dies, and the
	// power comes back. The simulator then starts every process again.
	// The entry ops of the folder not yet durable (lossyfs.SetEntryModel)
	// are undone, but the first keepEntries.
	CutPower(ctx context.Context, kept lossyfs.Fates, keepEntries int) error
	// FailSync makes the nth sync (fsync or fdatasync) of file, in the
	// backend's folder on a forgetful file system, from now, answer EIO
	// and drop the file's dirty data as Linux does: never durable, though
	// the backend still reads it, and a later sync succeeds without it.
	FailSync(ctx context.Context, file string, nth int) error
	// CutPowerAtSync cuts the power at the nth sync of file from now,
	// instead of that sync, as CutPower does, with each write unsynced
	// then given a fate drawn from seed (lossyfs.DrawFates, the files
	// NoFate names given none; 0: every one lost). The simulator then
	// starts every process again.
	CutPowerAtSync(ctx context.Context, file string, nth int, seed uint64) error
}

func opOrAny(op string) string {
	if op == "" {
		return "any operation"
	}
	return op
}
