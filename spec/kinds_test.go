package spec

import (
	"context"
	"errors"
	"fmt"
	"testing"
)

// One table decides definiteness: a contract's rule kinds are definite, io
// and the kit's own kinds of a lost answer are not, bad_request is, and a
// kind outside the contract is not.
func TestDefinite(t *testing.T) {
	c := Contract{Name: "toy", Kinds: []Kind{"stale_fencing_token", "not_found", ErrIO}}
	for err, want := range map[error]bool{
		nil:                                                 true,
		Errorf("stale_fencing_token", "x"):                  true,
		Errorf("not_found", "x"):                            true,
		Errorf(ErrIO, "commit: disk full"):                  false,
		Errorf(ErrBadRequest, "bad args"):                   true,
		Errorf(ErrTimeout, "no reply"):                      false,
		Errorf(ErrCrashed, "killed"):                        false,
		Errorf(ErrBackendFailure, "not JSON"):               false,
		Errorf(ErrCanceled, "gave up"):                      false,
		Errorf("made_up", "x"):                              false,
		errors.New("no kind"):                               false,
		context.DeadlineExceeded:                            false,
		fmt.Errorf("wrapped: %w", Errorf("not_found", "x")): true,
		NotSent(Errorf(ErrIO, "injected busy")):             true,
	} {
		if got := c.Definite(err); got != want {
			t.Errorf("Definite(%v) = %v, want %v", err, got, want)
		}
	}
}

// A deadline with no kind counts as a timeout, the table's row for it;
// a kind the error carries wins over its cause.
func TestOutcomeKind(t *testing.T) {
	for err, want := range map[error]Kind{
		nil:                                    "",
		context.DeadlineExceeded:               ErrTimeout,
		fmt.Errorf("op: %w", context.Canceled): ErrCanceled,
		errors.New("plain"):                    ErrUnknown,
		Errorf(ErrIO, "begin: %w", context.DeadlineExceeded): ErrIO,
	} {
		if got := OutcomeKind(err); got != want {
			t.Errorf("OutcomeKind(%v) = %q, want %q", err, got, want)
		}
	}
	if k := KindOf(NotSent(Errorf(ErrIO, "x"))); k != ErrIO {
		t.Errorf("NotSent hides the kind: %q", k)
	}
}
