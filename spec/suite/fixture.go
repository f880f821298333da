package suite

import (
	"context"
	"database/sql"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/storecheck/storecheck/spec"

	_ "modernc.org/sqlite" // the kit's own connection, to lock a backend's file
)

// What every store's fixture shares.

// closeOnce lets a spec close its store early (to reopen the file) without
// the cleanup closing it a second time.
type closeOnce struct {
	close  func() error
	closed bool
}

func (o *closeOnce) Close() error {
	if o.closed {
		return nil
	}
	o.closed = true
	return o.close()
}

// openForSpec opens a store on path and closes it when the spec ends. wrap
// gives back the store with once's Close in place of its own: Go cannot
// embed a type parameter, so each store has its own wrapper type.
func openForSpec[S interface{ Close() error }](f *fresh, open func(context.Context, spec.OpenOptions) (S, error), path, what string, wrap func(S, *closeOnce) S) S {
	GinkgoHelper()
	st, err := open(f.ctx, spec.OpenOptions{Path: path, Clock: f.clock})
	Expect(err).NotTo(HaveOccurred(), "open the "+what+" store")
	once := &closeOnce{close: st.Close}
	DeferCleanup(func() { Expect(once.Close()).To(Succeed()) })
	return wrap(st, once)
}

// refusedUnchanged checks that err has the kind and that state finds
// nothing changed since before.
func refusedUnchanged[O any](state func() O, before O, err, kind error) {
	GinkgoHelper()
	Expect(err).To(MatchError(kind))
	Expect(state()).To(Equal(before), "a failed operation changes nothing")
}

// LockedOpenTimeout is the open timeout (timeout_ms on the wire) the
// locked-open spec gives: the store must give up waiting for the lock by
// then, and answer within spec.LockedOpenSlack more.
const LockedOpenTimeout = 400 * time.Millisecond

// lockedOpenEarly is how much sooner than LockedOpenTimeout the open may
// give up and still count as having waited (a busy handler's clock is not
// the kit's).
const lockedOpenEarly = 50 * time.Millisecond

// waitsForALockedDatabase is the rule for opening a SQLite database another
// connection holds write-locked, the same for every store: the open waits
// for the lock (it does not fail at once), gives up by the open's timeout
// (spec.OpenOptions.Timeout; timeout_ms on the wire) and answers within
// spec.LockedOpenSlack more, and succeeds once the lock is released; use
// then works the store.
//
// The spec measures the store, not its own deadline: its context waits
// longer than the timeout and the slack together, so a store that ignores
// the timeout is seen to answer late (or not at all), and a handle a late
// answer opens is closed by the adapter. Both bounds are measured from
// just before the open, which a store's own wait can only follow: load on
// the machine makes a store later, never earlier.
func waitsForALockedDatabase[S interface{ Close() error }](h Harness, f *fresh, open func(context.Context, spec.OpenOptions) (S, error), use func(S)) {
	GinkgoHelper()
	need(h.Capabilities.SQLiteLocking, spec.CapSQLiteLocking, "opening a locked database")
	path := filepath.Join(GinkgoT().TempDir(), "locked.db")
	release := lockSQLite(path)
	ctx, cancel := context.WithTimeout(f.ctx, LockedOpenTimeout+spec.LockedOpenSlack+time.Second)
	defer cancel()
	start := time.Now()
	st, err := open(ctx, spec.OpenOptions{Path: path, Clock: f.clock, Timeout: LockedOpenTimeout})
	took := time.Since(start)
	if err == nil {
		st.Close()
	}
	Expect(took).To(BeNumerically("<", LockedOpenTimeout+spec.LockedOpenSlack),
		"the open gave up by its timeout (timeout_ms %d) plus a slack of %v: it answered after %v (%v)",
		LockedOpenTimeout.Milliseconds(), spec.LockedOpenSlack, took.Round(time.Millisecond), err)
	Expect(err).To(HaveOccurred(), "the open cannot finish while the lock is held")
	Expect(took).To(BeNumerically(">=", LockedOpenTimeout-lockedOpenEarly),
		"the open waited for the lock (its timeout, timeout_ms %d) rather than failing at once", LockedOpenTimeout.Milliseconds())
	release()
	st, err = open(f.ctx, spec.OpenOptions{Path: path, Clock: f.clock})
	Expect(err).NotTo(HaveOccurred(), "the open succeeds once the lock is released")
	use(st)
	Expect(st.Close()).To(Succeed())
}

// lockSQLite creates a SQLite database in WAL mode at path and holds its
// write lock until the returned function is called.
func lockSQLite(path string) (release func()) {
	GinkgoHelper()
	db, err := sql.Open("sqlite", "file:"+path)
	Expect(err).NotTo(HaveOccurred())
	conn, err := db.Conn(context.Background())
	Expect(err).NotTo(HaveOccurred())
	_, err = conn.ExecContext(context.Background(), "PRAGMA journal_mode=WAL")
	Expect(err).NotTo(HaveOccurred())
	_, err = conn.ExecContext(context.Background(), "BEGIN IMMEDIATE")
	Expect(err).NotTo(HaveOccurred())
	released := false
	release = func() {
		if !released {
			released = true
			conn.ExecContext(context.Background(), "ROLLBACK")
			conn.Close()
			db.Close()
		}
	}
	DeferCleanup(release)
	return release
}
