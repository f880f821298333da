package conformance

import (
	"context"

	"github.com/storecheck/storecheck/reports"
	"github.com/storecheck/storecheck/spec"
	"github.com/storecheck/storecheck/spec/suite"
)

// What a Go author writes a store and its harness with, re-exported here
// (the contracts themselves are in contracts.go). The types live where the
// kit uses them; these are the same types, not copies. The capabilities
// and an opener's options are not re-exported: they keep their one name,
// spec.Capabilities and spec.OpenOptions, which the wire side uses too.

// Harness is how the kit opens a Go backend's stores (suite.Harness): its
// name, capabilities, declared crash points and an opener per store. Its
// doc there lists every requirement a spec places on a store.
type Harness = suite.Harness

// Error is a failed operation: its kind and a message (spec.Error).
type Error = spec.Error

// Kind names a class of error of a contract (spec.Kind): the ErrContinuity*,
// ErrRuntime* and ErrClient* constants.
type Kind = spec.Kind

// Errorf is an *Error of kind k; a %w verb in format sets its cause.
func Errorf(k Kind, format string, args ...any) error { return spec.Errorf(k, format, args...) }

// KindOf is the kind err carries, or "" (spec.KindOf).
func KindOf(err error) Kind { return spec.KindOf(err) }

// Yield reaches the yield point at place inside the operation ctx runs: a
// place where the store holds no lock (before a transaction begins, after
// it commits), where the simulator may let another process move. place is
// the place alone ("before_tx"; the kit puts the operation's name in ctx,
// so the point is "<operation>/before_tx") or a full name. It does nothing
// when no check is running; an error must end the operation at once
// (spec.Yield).
func Yield(ctx context.Context, place string) error { return spec.Yield(ctx, place) }

// CrashPoint reaches the crash point at place inside the operation ctx
// runs: between two writes of a transaction, or after its commit, where
// the simulator may crash the store. place is the place alone
// ("after_commit", completed with the operation's name as Yield's is) or a
// full name, and the full name must be among the harness's CrashPoints for
// the store (else the operation fails naming it). An error must end the
// operation at once, committing nothing more (spec.CrashPoint).
func CrashPoint(ctx context.Context, place string) error { return spec.CrashPoint(ctx, place) }

// WithOperation is ctx naming the operation it runs, as the kit names it
// for each operation it applies (spec.WithOperation): for a store's own
// tests, which call its methods directly, so that its hooks reach the
// points the kit's runs reach.
func WithOperation(ctx context.Context, name string) context.Context {
	return spec.WithOperation(ctx, name)
}

// SetCrashHook makes every crash point reached in this process call fn
// with the point's full name (nil removes it): for a store's own test of
// its declared points (spec.SetCrashHook; Serve sets one while it serves).
func SetCrashHook(fn func(point string)) { spec.SetCrashHook(fn) }

// Report is what Run answers: the run's checks, notes and coverage
// (reports.Run).
type Report = reports.Run

// Check is one check of a Report (reports.Check).
type Check = reports.Check

// Outcome is a check's verdict (reports.Outcome).
type Outcome = reports.Outcome

// The verdicts of a check (reports.Passed, ...).
const (
	Passed       = reports.Passed
	Failed       = reports.Failed
	Skipped      = reports.Skipped
	Inconclusive = reports.Inconclusive
	NotRun       = reports.NotRun
)
