package spec

import (
	"context"
	"errors"
)

// The kinds every store shares, and the kit's own. A contract's closed set
// names the rest (stale_fencing_token, not_found, ...), each one a rule the
// store checked and refused on.
const (
	// ErrIO: the store could not do its work (open, query, commit). Every
	// contract has it.
	ErrIO Kind = "io"
	// ErrBadRequest: the backend could not take the request (not JSON, an
	// unknown type, store, operation, handle or crash point, bad args).
	ErrBadRequest Kind = "bad_request"
	// ErrCanceled: the caller stopped waiting (its context ended) before
	// the answer came.
	ErrCanceled Kind = "canceled"
	// ErrTimeout: no answer within the per-operation timeout.
	ErrTimeout Kind = "timeout"
	// ErrBackendFailure: the backend broke the wire protocol; the kit
	// killed it.
	ErrBackendFailure Kind = "backend_failure"
	// ErrUnknown is the kind of an error that carries none (OutcomeKind).
	ErrUnknown Kind = "unknown_error"
)

// KindInfo is one row of the table of error kinds: what a failed
// operation's kind tells of its effect.
type KindInfo struct {
	Kind Kind
	// Definite: the operation is known not to have taken effect. An
	// indefinite one may or may not have: a checker allows both.
	Definite bool
	// SentBy is who makes the kind up: "backend" (a store, or a program's
	// reply) or "kit" (the exec adapter, when a backend does not answer as
	// the protocol says, or the caller's deadline).
	SentBy string
	// Means is what it says, and why it is (in)definite.
	Means string
}

// RuleKindInfo is the row every kind of a contract's closed set but io
// shares: the store checked one of the contract's rules and refused, and
// a refused operation changes nothing.
var RuleKindInfo = KindInfo{Definite: true, SentBy: "backend",
	Means: "a rule of the contract refused the operation (see the contract's kinds); it changed nothing"}

// KindTable is every kind whose definiteness is not RuleKindInfo's, in a
// fixed order. It is the one place definiteness is decided: Definite reads
// it, and so do the protocol page (docs/protocol.md), the fault injector,
// the checkers and the simulator, through Definite.
//
// io is indefinite, on the checkers' safe side: a store's io may come from
// a commit that failed after its write was durable (the disk said no to
// the last sync, the connection broke after COMMIT reached the file), so
// the kit cannot know that nothing happened. A fault the kit injects
// before the backend is reached is another matter: it is known to have
// changed nothing, and says so itself (NotSent), whatever its kind.
var KindTable = []KindInfo{
	{ErrIO, false, "backend", "the store could not do its work (open, query, commit); it may come from a commit that failed after its write was durable, so it may have taken effect"},
	{ErrBadRequest, true, "backend", "the request was malformed or named an unknown type, store, operation, handle or crash point; nothing happened"},
	{ErrCanceled, false, "kit", "the caller stopped waiting before the answer came"},
	{ErrTimeout, false, "kit", "no answer within the per-operation timeout (a deadline passed); over the wire the backend is killed"},
	{ErrCrashed, false, "kit", "the backend process exited with the request in flight"},
	{ErrBackendFailure, false, "kit", "the backend broke the protocol; it is killed"},
	{ErrUnknown, false, "kit", "the error carried no kind at all: nothing says what happened"},
}

// KindInfoOf is k's row of the table, and false when k is not in it (a
// contract's rule kind, or a kind nobody knows).
func KindInfoOf(k Kind) (KindInfo, bool) {
	for _, r := range KindTable {
		if r.Kind == k {
			return r, true
		}
	}
	return KindInfo{}, false
}

// OutcomeKind is the kind an operation's error counts as: the kind it
// carries; else, for a context's end, timeout (a deadline) or canceled;
// else ErrUnknown. A nil error has none ("").
func OutcomeKind(err error) Kind {
	if err == nil {
		return ""
	}
	if k := KindOf(err); k != "" {
		return k
	}
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return ErrTimeout
	case errors.Is(err, context.Canceled):
		return ErrCanceled
	}
	return ErrUnknown
}

// Definite reports whether an operation of this contract that answered err
// has a known outcome: it succeeded (nil), or it is known not to have taken
// effect. It reads KindTable: a kind there has its row's definiteness; any
// other kind of the contract's closed set is a rule's refusal, definite; a
// kind outside the closed set is indefinite. An error marked NotSent is
// definite whatever its kind.
func (c Contract) Definite(err error) bool {
	if err == nil || IsNotSent(err) {
		return true
	}
	k := OutcomeKind(err)
	if r, ok := KindInfoOf(k); ok {
		return r.Definite
	}
	return c.HasKind(k)
}

// notSent is an error the kit made up before the operation reached the
// backend.
type notSent struct{ error }

func (e notSent) Unwrap() error { return e.error }

// NotSent marks err as the answer to an operation the kit never sent to
// the backend (a fault injected at the adapter boundary): whatever its
// kind, the operation changed nothing, so it is definite. The kind is
// still err's: the caller sees the io a busy database would give.
func NotSent(err error) error {
	if err == nil {
		return nil
	}
	return notSent{err}
}

// IsNotSent reports whether err is marked NotSent.
func IsNotSent(err error) bool {
	var n notSent
	return errors.As(err, &n)
}
