package sqlitedb

import (
	"context"
	"sync/atomic"

	"github.com/storecheck/storecheck/spec"
)

// Crash points are named places inside the reference stores' write
// transactions where a crash would leave a half-done operation if the
// transaction were not atomic: after the first of two writes, after the
// commit. A store reaches one by calling Point; Write reaches
// "<op>/after_commit" after every commit. Points are named
// "<operation>/<place>", and each store lists its own (its CrashPoints
// variable), which the wire protocol's handshake declares.
//
// A point does nothing unless a hook is set: "storecheck serve" sets one that
// ends the process, without closing anything, the Nth time an armed point is
// reached, so that the kit can crash a backend for real inside a transaction.

var hook atomic.Pointer[func(point string)]

// SetCrashHook makes every crash point reached call fn (nil removes it). The
// hook is process-wide: crash points are about the process, not one store.
func SetCrashHook(fn func(point string)) {
	if fn == nil {
		hook.Store(nil)
		return
	}
	hook.Store(&fn)
}

type armedKey struct{}

// ArmCrash returns a context whose operation crashes at point: when the
// store reaches it, Point returns a spec.ErrCrashed error, so the
// transaction ends uncommitted (or, after the commit, the answer is lost),
// as a process killed there would leave it. The in-process simulator uses
// it to crash one operation of one store without ending this process.
func ArmCrash(ctx context.Context, point string) context.Context {
	return context.WithValue(ctx, armedKey{}, point)
}

// Point reaches the crash point named point. It returns an error only when
// ctx armed this point; the store must return it at once.
func Point(ctx context.Context, point string) error {
	if fn := hook.Load(); fn != nil {
		(*fn)(point)
	}
	if armed, _ := ctx.Value(armedKey{}).(string); armed == point {
		return spec.Errorf(spec.ErrCrashed, "crashed at %s", point)
	}
	return nil
}
