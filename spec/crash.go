package spec

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
)

// A crash point is a named place inside an operation's transaction where a
// crash would leave the operation half done if the transaction were not
// atomic: between two of its writes, and just after its commit (where the
// answer is lost). A store reaches one by calling CrashPoint from its own
// transaction helper, naming the place (the operation's name comes from the
// context: PointName); points are named "<operation>/<place>"
// ("save_session_snapshot/after_snapshot_upsert", ".../after_commit"), and a
// backend declares the ones of each store it implements (a Go harness in
// suite.Harness.CrashPoints, a program in its hello's crash_points), so the
// kit never guesses one. With no check running, CrashPoint does nothing.
//
// The kit crashes a store at a point in one of two ways:
//
//   - in this process (a Go harness, the embedded reference): the operation
//     runs with a context armed at the point (ArmCrash). When the store
//     reaches it, CrashPoint cancels that context and returns an ErrCrashed
//     error, which the store returns at once: its transaction ends
//     uncommitted (a transaction begun with the context can no longer
//     commit, even if the store went on), or, after the commit, the answer
//     is lost. The simulator then drops the handle, as a killed process
//     would, and opens the store again on the same file.
//   - over the wire (a program): a process-wide hook (SetCrashHook) ends the
//     process on the spot the Nth time an armed point is reached, without
//     closing anything: what "storecheck serve" and conformance.Serve do.

// CrashPoint reaches the crash point at point: a place ("after_commit"),
// which the operation's name in ctx completes ("<operation>/after_commit",
// PointName), or a full name. It returns an error when
// ctx was armed at this point (ArmCrash), and when the kit runs the
// operation and the backend did not declare the point (DeclareCrashPoints):
// a point the kit does not know of is one it can never crash at, so the
// silence would hide a transaction it never tests. The store must return
// the error at once, committing nothing more.
func CrashPoint(ctx context.Context, point string) error {
	point = PointName(ctx, point)
	if d, _ := ctx.Value(declaredKey{}).(declared); d.set && !slices.Contains(d.points, point) {
		return Errorf(ErrBadRequest, "crash point %q reached but not declared, so it is never crashed at: declare it with the others of its store (a Go harness's CrashPoints, a program's hello crash_points; declared: %s)",
			point, declaredList(d.points))
	}
	if fn := crashHook.Load(); fn != nil {
		(*fn)(point)
	}
	a, _ := ctx.Value(armedKey{}).(*armed)
	if a == nil || a.point != point {
		return nil
	}
	err := Errorf(ErrCrashed, "crashed at %s", point)
	a.cancel(err)
	return err
}

type armedKey struct{}

type declaredKey struct{}

// declared are the crash points a backend declared for the store an
// operation runs on; set tells an empty declaration from none at all.
type declared struct {
	points []string
	set    bool
}

// DeclareCrashPoints returns a context in which reaching a crash point not
// among points fails the operation, naming the point: the kit runs every
// operation of a store with the points its backend declared for it, so a
// declaration cannot silently disagree with the calls.
func DeclareCrashPoints(ctx context.Context, points []string) context.Context {
	return context.WithValue(ctx, declaredKey{}, declared{points: points, set: true})
}

func declaredList(points []string) string {
	if len(points) == 0 {
		return "none"
	}
	return strings.Join(points, ", ")
}

// armed is the crash point an operation's context is armed at, and how to
// end the context when the point is reached.
type armed struct {
	point  string
	cancel context.CancelCauseFunc
}

// ArmCrash returns a context whose operation crashes at point: when the
// store reaches it, CrashPoint cancels the context (its cause the
// ErrCrashed error) and returns that error. The caller calls release when
// the operation has returned.
func ArmCrash(ctx context.Context, point string) (armedCtx context.Context, release func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	return context.WithValue(ctx, armedKey{}, &armed{point: point, cancel: cancel}), func() { cancel(nil) }
}

var crashHook atomic.Pointer[func(point string)]

// SetCrashHook makes every crash point reached call fn (nil removes it). The
// hook is process-wide: a crash point is about the process, not one store.
// A program serving a Go store over the wire sets one that exits the
// process at an armed point (conformance.Serve does).
func SetCrashHook(fn func(point string)) {
	if fn == nil {
		crashHook.Store(nil)
		return
	}
	crashHook.Store(&fn)
}
