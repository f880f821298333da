package spec_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/storecheck/storecheck/spec"

	_ "modernc.org/sqlite"
)

// A crash point does nothing unless the operation's context is armed at
// it; armed, it fails with the crashed kind and ends the context, the
// crash as its cause; the process-wide hook sees every point reached.
func TestACrashPointFiresOnlyWhereArmed(t *testing.T) {
	ctx := context.Background()
	var reached []string
	spec.SetCrashHook(func(p string) { reached = append(reached, p) })
	defer spec.SetCrashHook(nil)
	if err := spec.CrashPoint(ctx, "op/a"); err != nil {
		t.Fatalf("unarmed: %v", err)
	}
	armed, release := spec.ArmCrash(ctx, "op/b")
	defer release()
	if err := spec.CrashPoint(armed, "op/a"); err != nil || armed.Err() != nil {
		t.Fatalf("another point: %v, context %v", err, armed.Err())
	}
	err := spec.CrashPoint(armed, "op/b")
	if !errors.Is(err, spec.ErrCrashed) || spec.KindOf(err) != spec.ErrCrashed {
		t.Fatalf("the armed point: %v, want kind crashed", err)
	}
	if armed.Err() == nil || !errors.Is(context.Cause(armed), spec.ErrCrashed) {
		t.Fatalf("the armed context goes on after the crash: %v (cause %v)", armed.Err(), context.Cause(armed))
	}
	if len(reached) != 3 {
		t.Errorf("the hook saw %v, want every point reached", reached)
	}
	spec.SetCrashHook(nil)
	if err := spec.CrashPoint(ctx, "op/a"); err != nil || len(reached) != 3 {
		t.Errorf("after the hook was removed: %v, %v", err, reached)
	}
}

// A store that goes on after its crash point (it drops the error) commits
// nothing more: its transaction began with the armed context, which the
// crash ended, so the commit fails and the write is not there.
func TestAStoreThatIgnoresItsCrashCommitsNothing(t *testing.T) {
	ctx := context.Background()
	db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "c.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, `CREATE TABLE t (v INTEGER)`); err != nil {
		t.Fatal(err)
	}
	armed, release := spec.ArmCrash(ctx, "write/between")
	defer release()
	tx, err := db.BeginTx(armed, nil)
	if err != nil {
		t.Fatal(err)
	}
	tx.ExecContext(armed, `INSERT INTO t VALUES (1)`)
	_ = spec.CrashPoint(armed, "write/between") // a careless store drops it
	tx.ExecContext(armed, `INSERT INTO t VALUES (2)`)
	if err := tx.Commit(); err == nil {
		t.Fatal("the transaction committed after its crash point")
	}
	var n int
	if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM t`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("%d rows after the crash (%v), want none", n, err)
	}
}

// A store's hooks may name only the place: the operation's name in the
// context completes it, so an armed point, a declared one and a yield are
// the full names; a full name still works as it is, and a bare place with
// no operation in the context stays bare (so it fails a declaration).
func TestHooksTakeTheOperationsNameFromTheContext(t *testing.T) {
	ctx := spec.WithOperation(context.Background(), "save")
	armed, release := spec.ArmCrash(ctx, "save/written")
	defer release()
	if err := spec.CrashPoint(armed, "written"); spec.KindOf(err) != spec.ErrCrashed {
		t.Fatalf("the place alone, armed as save/written: %v, want crashed", err)
	}
	declared := spec.DeclareCrashPoints(ctx, []string{"save/written", "save/after_commit"})
	if err := spec.CrashPoint(declared, "after_commit"); err != nil {
		t.Errorf("a declared point by its place: %v", err)
	}
	if err := spec.CrashPoint(declared, "save/after_commit"); err != nil {
		t.Errorf("a declared point by its full name: %v", err)
	}
	err := spec.CrashPoint(declared, "typo")
	if spec.KindOf(err) != spec.ErrBadRequest || !strings.Contains(err.Error(), `"save/typo" reached but not declared`) {
		t.Errorf("an undeclared place: %v, want bad_request naming save/typo", err)
	}
	bare := spec.DeclareCrashPoints(context.Background(), []string{"save/written"})
	if err := spec.CrashPoint(bare, "written"); !strings.Contains(fmt.Sprint(err), `"written" reached but not declared`) {
		t.Errorf("a place with no operation in the context: %v, want it undeclared as it is", err)
	}
	var yielded []string
	y := spec.WithYield(ctx, func(place string) error { yielded = append(yielded, place); return nil })
	spec.Yield(y, "before_tx")
	spec.Yield(y, "other/after_tx")
	if want := []string{"save/before_tx", "other/after_tx"}; !slices.Equal(yielded, want) {
		t.Errorf("the yielder saw %q, want %q", yielded, want)
	}
}
