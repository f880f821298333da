package suite

import (
	"context"
	"database/sql"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	c "github.com/storecheck/storecheck/spec/continuity"
	_ "modernc.org/sqlite" // the kit's own connection, to lock a backend's file
)

// The continuity contract's rules, one Describe per operation (see
// spec/continuity for the rules as the contract states them).
func continuitySpecs(h Harness) {
	const (
		id      c.Identity  = "triage:main"
		other   c.Identity  = "triage:other"
		session c.SessionID = "session-a"
		second  c.SessionID = "session-b"
	)
	var (
		f *fresh
		s c.Store
	)

	// open opens a store on path and closes it when the spec ends.
	open := func(path string) c.Store {
		st, err := h.Continuity(f.ctx, Options{Path: path, Clock: f.clock})
		Expect(err).NotTo(HaveOccurred(), "open the continuity store")
		closed := false
		DeferCleanup(func() {
			if !closed {
				closed = true
				Expect(st.Close()).To(Succeed())
			}
		})
		return &closeOnce{Store: st, closed: &closed}
	}
	rec := func(identity c.Identity, sess c.SessionID, gen c.Generation, version c.CheckpointVersion) c.Record {
		return c.Record{Identity: identity, AgentRuntimeID: "rt-1", SessionID: sess, Generation: gen, CheckpointVersion: version}
	}
	upsert := func(r c.Record, fence c.FencingToken) {
		GinkgoHelper()
		Expect(s.UpsertContinuityRecord(f.ctx, r, fence)).To(Succeed(), "upsert_continuity_record %+v fence %d", r, fence)
	}
	write := func(identity c.Identity, sess c.SessionID, gen c.Generation, version c.CheckpointVersion, fence c.FencingToken, data string) c.SnapshotWrite {
		return c.SnapshotWrite{Identity: identity, SessionID: sess, Generation: gen, CheckpointVersion: version, FencingToken: fence, Data: []byte(data)}
	}
	save := func(w c.SnapshotWrite) {
		GinkgoHelper()
		Expect(s.SaveSessionSnapshot(f.ctx, w)).To(Succeed(), "save_session_snapshot %+v", w)
	}
	// resolved is the identity's record, or nil when it is uninitialized.
	resolved := func(identity c.Identity) *c.Record {
		GinkgoHelper()
		m, err := s.ResolveMany(f.ctx, []c.Identity{identity})
		Expect(err).NotTo(HaveOccurred())
		Expect(m).To(HaveKey(identity))
		if m[identity].State == c.Uninitialized {
			Expect(m[identity].Record).To(BeNil(), "an uninitialized identity has no record")
			return nil
		}
		Expect(m[identity].State).To(Equal(c.Ready))
		Expect(m[identity].Record).NotTo(BeNil(), "a ready identity has its record")
		return m[identity].Record
	}
	// loaded is the session's snapshot bytes, or nil when there is none.
	loaded := func(sess c.SessionID) []byte {
		GinkgoHelper()
		snap, err := s.LoadSessionSnapshot(f.ctx, sess)
		Expect(err).NotTo(HaveOccurred())
		if snap == nil {
			return nil
		}
		if snap.Data == nil {
			return []byte{}
		}
		return snap.Data
	}
	maxFence := func() c.FencingToken {
		GinkgoHelper()
		m, err := s.MaxFencingToken(f.ctx)
		Expect(err).NotTo(HaveOccurred())
		return m
	}
	// state is everything the specs can observe about two identities and
	// two sessions, to show that a failed operation changed nothing.
	type observed struct {
		Records   []*c.Record
		Snapshots [][]byte
		MaxFence  c.FencingToken
	}
	state := func() observed {
		GinkgoHelper()
		return observed{
			Records:   []*c.Record{resolved(id), resolved(other)},
			Snapshots: [][]byte{loaded(session), loaded(second)},
			MaxFence:  maxFence(),
		}
	}
	// refused checks that err has the kind and that nothing changed.
	refused := func(before observed, err error, kind error) {
		GinkgoHelper()
		Expect(err).To(MatchError(kind))
		Expect(state()).To(Equal(before), "a failed operation changes nothing")
	}

	BeforeEach(func() {
		if h.Continuity == nil {
			Skip("backend does not implement the continuity store")
		}
		f = newFresh(h, "continuity.db")
		s = open(f.path)
	})

	Describe("upsert_continuity_record", func() {
		It("creates the record that resolve_many then answers", func() {
			upsert(rec(id, session, 0, 3), 1)
			Expect(resolved(id)).To(Equal(&c.Record{Identity: id, AgentRuntimeID: "rt-1", SessionID: session, CheckpointVersion: 3}))
		})
		It("accepts the stored fence again and a newer one", func() {
			upsert(rec(id, session, 0, 0), 4)
			upsert(rec(id, second, 0, 0), 4)
			upsert(rec(id, session, 0, 0), 5)
			Expect(resolved(id).SessionID).To(Equal(session))
		})
		It("rejects a fence lower than the stored one with stale_fencing_token", func() {
			upsert(rec(id, session, 0, 0), 5)
			before := state()
			refused(before, s.UpsertContinuityRecord(f.ctx, rec(id, second, 0, 0), 4), c.ErrStaleFencingToken)
		})
		It("makes the presented fence the stored one", func() {
			upsert(rec(id, session, 0, 0), 3)
			upsert(rec(id, session, 0, 0), 9)
			Expect(maxFence()).To(Equal(c.FencingToken(9)))
			refused(state(), s.UpsertContinuityRecord(f.ctx, rec(id, session, 0, 0), 8), c.ErrStaleFencingToken)
		})
		It("rejects a lower generation with stale_continuity_generation, even with a newer fence", func() {
			upsert(rec(id, session, 1, 0), 2)
			refused(state(), s.UpsertContinuityRecord(f.ctx, rec(id, session, 0, 0), 3), c.ErrStaleContinuityGeneration)
		})
		It("checks the fence before the generation", func() {
			upsert(rec(id, session, 1, 0), 5)
			refused(state(), s.UpsertContinuityRecord(f.ctx, rec(id, session, 0, 0), 4), c.ErrStaleFencingToken)
		})
		It("accepts a higher generation", func() {
			upsert(rec(id, session, 0, 0), 1)
			upsert(rec(id, second, 2, 0), 2)
			Expect(resolved(id).Generation).To(Equal(c.Generation(2)))
		})
		It("keeps the stored checkpoint version within one generation when a lower one is presented (session rebind)", func() {
			upsert(rec(id, session, 0, 10), 1)
			save(write(id, session, 0, 11, 2, "eleven"))
			upsert(rec(id, second, 0, 10), 3)
			r := resolved(id)
			Expect(r.SessionID).To(Equal(second))
			Expect(r.CheckpointVersion).To(Equal(c.CheckpointVersion(11)))
		})
		It("takes a higher checkpoint version within one generation", func() {
			upsert(rec(id, session, 0, 2), 1)
			upsert(rec(id, session, 0, 7), 1)
			Expect(resolved(id).CheckpointVersion).To(Equal(c.CheckpointVersion(7)))
		})
		It("takes the presented checkpoint version in a new generation, even a lower one", func() {
			upsert(rec(id, session, 0, 9), 1)
			upsert(rec(id, session, 1, 2), 2)
			Expect(resolved(id).CheckpointVersion).To(Equal(c.CheckpointVersion(2)))
		})
	})

	Describe("save_session_snapshot", func() {
		It("saves the snapshot and moves the record's checkpoint version and fence with it", func() {
			upsert(rec(id, session, 0, 0), 1)
			save(write(id, session, 0, 1, 3, "one"))
			Expect(loaded(session)).To(Equal([]byte("one")))
			Expect(resolved(id).CheckpointVersion).To(Equal(c.CheckpointVersion(1)))
			Expect(maxFence()).To(Equal(c.FencingToken(3)))
			refused(state(), s.UpsertContinuityRecord(f.ctx, rec(id, session, 0, 1), 2), c.ErrStaleFencingToken)
		})
		It("accepts the record's own fence", func() {
			upsert(rec(id, session, 0, 0), 4)
			save(write(id, session, 0, 1, 4, "one"))
			Expect(loaded(session)).To(Equal([]byte("one")))
		})
		It("rejects another session than the record's with not_found", func() {
			upsert(rec(id, session, 0, 0), 1)
			refused(state(), s.SaveSessionSnapshot(f.ctx, write(id, second, 0, 1, 1, "x")), c.ErrNotFound)
		})
		It("rejects another generation than the record's with not_found", func() {
			upsert(rec(id, session, 1, 0), 1)
			refused(state(), s.SaveSessionSnapshot(f.ctx, write(id, session, 0, 1, 1, "x")), c.ErrNotFound)
			refused(state(), s.SaveSessionSnapshot(f.ctx, write(id, session, 2, 1, 1, "x")), c.ErrNotFound)
		})
		It("rejects a fence lower than the record's with stale_fencing_token", func() {
			upsert(rec(id, session, 0, 0), 5)
			refused(state(), s.SaveSessionSnapshot(f.ctx, write(id, session, 0, 1, 4, "x")), c.ErrStaleFencingToken)
		})
		It("rejects a checkpoint version not above the record's with stale_checkpoint_version", func() {
			upsert(rec(id, session, 0, 3), 1)
			refused(state(), s.SaveSessionSnapshot(f.ctx, write(id, session, 0, 3, 1, "equal")), c.ErrStaleCheckpointVersion)
			refused(state(), s.SaveSessionSnapshot(f.ctx, write(id, session, 0, 2, 1, "lower")), c.ErrStaleCheckpointVersion)
			save(write(id, session, 0, 4, 1, "higher"))
		})
		It("rejects a snapshot row owned by another identity with corruption, keeping the old bytes", func() {
			upsert(rec(id, session, 0, 0), 1)
			save(write(id, session, 0, 1, 1, "first owner"))
			upsert(rec(other, session, 0, 0), 2)
			refused(state(), s.SaveSessionSnapshot(f.ctx, write(other, session, 0, 1, 2, "second owner")), c.ErrCorruption)
			Expect(loaded(session)).To(Equal([]byte("first owner")))
		})
		It("rejects a snapshot row owned by another generation of the identity with corruption, keeping the old bytes", func() {
			upsert(rec(id, session, 0, 0), 1)
			save(write(id, session, 0, 1, 1, "generation 0"))
			upsert(rec(id, session, 1, 0), 2)
			refused(state(), s.SaveSessionSnapshot(f.ctx, write(id, session, 1, 1, 2, "generation 1")), c.ErrCorruption)
			Expect(loaded(session)).To(Equal([]byte("generation 0")))
			Expect(resolved(id).CheckpointVersion).To(Equal(c.CheckpointVersion(0)))
		})
		It("saves the snapshot when the identity has no record, and creates none", func() {
			save(write(id, session, 0, 1, 7, "restored first"))
			Expect(loaded(session)).To(Equal([]byte("restored first")))
			Expect(resolved(id)).To(BeNil())
		})
		It("keeps each session's snapshot apart", func() {
			save(write(id, session, 0, 1, 1, "a"))
			save(write(other, second, 0, 1, 1, "b"))
			Expect(loaded(session)).To(Equal([]byte("a")))
			Expect(loaded(second)).To(Equal([]byte("b")))
		})
	})

	Describe("load_session_snapshot", func() {
		It("returns none for a session never saved", func() {
			Expect(loaded(session)).To(BeNil())
		})
		It("returns the bytes of the latest save, exactly", func() {
			upsert(rec(id, session, 0, 0), 1)
			save(write(id, session, 0, 1, 1, "first"))
			save(write(id, session, 0, 2, 1, "\x00second\xff"))
			Expect(loaded(session)).To(Equal([]byte("\x00second\xff")))
		})
		It("returns an empty snapshot as empty bytes, not as none", func() {
			save(write(id, session, 0, 1, 1, ""))
			Expect(loaded(session)).To(Equal([]byte{}))
		})
	})

	Describe("resolve_many", func() {
		It("answers ready with the record or uninitialized, once per distinct identity asked", func() {
			upsert(rec(id, session, 2, 5), 1)
			m, err := s.ResolveMany(f.ctx, []c.Identity{id, other, id})
			Expect(err).NotTo(HaveOccurred())
			Expect(m).To(Equal(map[c.Identity]c.Resolution{
				id:    {State: c.Ready, Record: &c.Record{Identity: id, AgentRuntimeID: "rt-1", SessionID: session, Generation: 2, CheckpointVersion: 5}},
				other: {State: c.Uninitialized},
			}))
		})
		It("answers nothing when asked nothing", func() {
			m, err := s.ResolveMany(f.ctx, nil)
			Expect(err).NotTo(HaveOccurred())
			Expect(m).To(BeEmpty())
		})
	})

	Describe("session_snapshot_matches_current", func() {
		var cand c.MatchCandidate
		matches := func(m c.MatchCandidate) bool {
			GinkgoHelper()
			ok, err := s.SessionSnapshotMatchesCurrent(f.ctx, m)
			Expect(err).NotTo(HaveOccurred())
			return ok
		}
		BeforeEach(func() {
			upsert(rec(id, session, 0, 0), 1)
			cand = write(id, session, 0, 1, 1, "bytes")
			save(cand)
		})
		It("is true for the whole provenance tuple, the bytes and the record's current fence", func() {
			Expect(matches(cand)).To(BeTrue())
		})
		It("is false when any part of the tuple or the bytes differ", func() {
			for _, m := range []func(*c.MatchCandidate){
				func(m *c.MatchCandidate) { m.Identity = other },
				func(m *c.MatchCandidate) { m.SessionID = second },
				func(m *c.MatchCandidate) { m.Generation = 1 },
				func(m *c.MatchCandidate) { m.CheckpointVersion = 2 },
				func(m *c.MatchCandidate) { m.Data = []byte("other bytes") },
				func(m *c.MatchCandidate) { m.FencingToken = 2 },
			} {
				changed := cand
				m(&changed)
				Expect(matches(changed)).To(BeFalse(), "candidate %+v", changed)
			}
		})
		It("is false for a stale fence once the record's fence moved, and true for the new one", func() {
			upsert(rec(id, session, 0, 1), 2)
			Expect(matches(cand)).To(BeFalse())
			cand.FencingToken = 2
			Expect(matches(cand)).To(BeTrue(), "the snapshot's own fence is provenance and may precede the current one")
		})
		It("is false when the snapshot's fence is above the record's", func() {
			save(write(other, second, 0, 1, 7, "ahead"))
			upsert(rec(other, second, 0, 1), 3)
			Expect(matches(write(other, second, 0, 1, 3, "ahead"))).To(BeFalse())
			Expect(matches(write(other, second, 0, 1, 7, "ahead"))).To(BeFalse())
		})
		It("is false when the record moved to another checkpoint version", func() {
			save(write(id, session, 0, 2, 1, "bytes"))
			Expect(matches(cand)).To(BeFalse())
		})
		It("is false for a snapshot with no record", func() {
			save(write(other, second, 0, 1, 1, "orphan"))
			Expect(matches(write(other, second, 0, 1, 1, "orphan"))).To(BeFalse())
		})
	})

	Describe("delete_session_snapshot_if_current_revision", func() {
		BeforeEach(func() { save(write(id, session, 0, 1, 1, "current")) })
		It("deletes when the revision is the lowercase hex SHA-256 of the stored bytes, and says so", func() {
			ok, err := s.DeleteSessionSnapshotIfCurrentRevision(f.ctx, session, c.SnapshotRevision([]byte("current")))
			Expect(err).NotTo(HaveOccurred())
			Expect(ok).To(BeTrue())
			Expect(loaded(session)).To(BeNil())
		})
		It("keeps the snapshot and answers false for any other revision", func() {
			before := state()
			for _, rev := range []string{c.SnapshotRevision([]byte("stale")), "", "CURRENT"} {
				ok, err := s.DeleteSessionSnapshotIfCurrentRevision(f.ctx, session, rev)
				Expect(err).NotTo(HaveOccurred())
				Expect(ok).To(BeFalse(), "revision %q", rev)
			}
			Expect(state()).To(Equal(before))
		})
		It("answers false when the session has no snapshot", func() {
			ok, err := s.DeleteSessionSnapshotIfCurrentRevision(f.ctx, second, c.SnapshotRevision([]byte("current")))
			Expect(err).NotTo(HaveOccurred())
			Expect(ok).To(BeFalse())
		})
	})

	Describe("rollback_continuity_record", func() {
		var previous, attempt c.Record
		BeforeEach(func() {
			previous = rec(id, session, 0, 0)
			upsert(previous, 1)
			save(write(id, session, 0, 1, 1, "previous"))
			previous.CheckpointVersion = 1
			attempt = c.Record{Identity: id, AgentRuntimeID: "rt-attempt", SessionID: second, Generation: 1}
			upsert(attempt, 2)
			save(write(id, second, 1, 1, 2, "attempt"))
		})
		It("restores the previous record and removes only the attempt generation's snapshots", func() {
			Expect(s.RollbackContinuityRecord(f.ctx, attempt, &previous, 2)).To(Succeed())
			Expect(resolved(id)).To(Equal(&previous))
			Expect(loaded(session)).To(Equal([]byte("previous")))
			Expect(loaded(second)).To(BeNil())
		})
		It("deletes the record and the attempt's snapshots when there was no previous record", func() {
			Expect(s.RollbackContinuityRecord(f.ctx, attempt, nil, 2)).To(Succeed())
			Expect(resolved(id)).To(BeNil())
			Expect(loaded(second)).To(BeNil())
			Expect(loaded(session)).To(Equal([]byte("previous")), "an older generation's snapshot is not the attempt's")
		})
		It("never clobbers a newer attempt: stale_fencing_token", func() {
			upsert(c.Record{Identity: id, AgentRuntimeID: "rt-newer", SessionID: "session-c", Generation: 2}, 3)
			refused(state(), s.RollbackContinuityRecord(f.ctx, attempt, &previous, 2), c.ErrStaleFencingToken)
		})
		It("compares the fence exactly: a higher fence fails stale_fencing_token too", func() {
			refused(state(), s.RollbackContinuityRecord(f.ctx, attempt, &previous, 3), c.ErrStaleFencingToken)
		})
		It("rejects an attempt whose runtime, session or generation is not current with stale_continuity_generation", func() {
			for _, m := range []func(*c.Record){
				func(r *c.Record) { r.AgentRuntimeID = "rt-other" },
				func(r *c.Record) { r.SessionID = session },
				func(r *c.Record) { r.Generation = 0 },
			} {
				changed := attempt
				m(&changed)
				refused(state(), s.RollbackContinuityRecord(f.ctx, changed, &previous, 2), c.ErrStaleContinuityGeneration)
			}
		})
		It("does not compare the attempt's checkpoint version", func() {
			advanced := attempt
			advanced.CheckpointVersion = 40
			Expect(s.RollbackContinuityRecord(f.ctx, advanced, &previous, 2)).To(Succeed())
			Expect(resolved(id)).To(Equal(&previous))
		})
		It("rejects a previous record of another identity with corruption", func() {
			wrong := previous
			wrong.Identity = other
			refused(state(), s.RollbackContinuityRecord(f.ctx, attempt, &wrong, 2), c.ErrCorruption)
		})
		It("fails not_found when the identity has no record", func() {
			orphan := c.Record{Identity: other, AgentRuntimeID: "rt-1", SessionID: "session-c"}
			refused(state(), s.RollbackContinuityRecord(f.ctx, orphan, nil, 2), c.ErrNotFound)
		})
	})

	Describe("delete_continuity_record", func() {
		BeforeEach(func() {
			upsert(rec(id, session, 0, 0), 1)
			save(write(id, session, 0, 1, 1, "gen 0"))
			upsert(rec(id, second, 1, 0), 5)
			save(write(id, second, 1, 1, 5, "gen 1"))
			upsert(rec(other, "session-c", 0, 0), 9)
		})
		It("deletes the record and every snapshot of the identity, at the stored fence or a newer one", func() {
			Expect(s.DeleteContinuityRecord(f.ctx, id, 5)).To(Succeed())
			Expect(resolved(id)).To(BeNil())
			Expect(loaded(session)).To(BeNil())
			Expect(loaded(second)).To(BeNil())
			Expect(resolved(other)).NotTo(BeNil(), "other identities stay")
			Expect(s.DeleteContinuityRecord(f.ctx, other, 10)).To(Succeed())
			Expect(resolved(other)).To(BeNil())
		})
		It("rejects a fence lower than the stored one with stale_fencing_token and keeps everything", func() {
			refused(state(), s.DeleteContinuityRecord(f.ctx, id, 4), c.ErrStaleFencingToken)
		})
	})

	Describe("max_fencing_token", func() {
		It("is 0 for an empty store", func() {
			Expect(maxFence()).To(BeZero())
		})
		It("is the maximum over records and snapshots", func() {
			upsert(rec(id, session, 0, 0), 1)
			save(write(id, session, 0, 1, 1, "x"))
			upsert(rec(id, session, 0, 1), 15)
			Expect(maxFence()).To(Equal(c.FencingToken(15)), "a record ahead of its snapshots")
			save(write(other, second, 0, 1, 21, "snapshot only"))
			Expect(maxFence()).To(Equal(c.FencingToken(21)), "a snapshot ahead of every record")
		})
		It("is the same after the store is closed and opened again", func() {
			need(h.Capabilities.Files, "files", "survival across reopen")
			upsert(rec(id, session, 0, 0), 15)
			save(write(other, second, 0, 1, 3, "x"))
			Expect(s.Close()).To(Succeed())
			s = open(f.path)
			Expect(maxFence()).To(Equal(c.FencingToken(15)))
			Expect(resolved(id)).NotTo(BeNil())
			Expect(loaded(second)).To(Equal([]byte("x")))
		})
	})

	Describe("two handles on one database", func() {
		It("keep the fencing rules across handles, as two processes would", func() {
			need(h.Capabilities.SharedFiles, "shared-files", "two handles on one file")
			t := open(f.path)
			upsert(rec(id, session, 0, 0), 5)
			Expect(t.UpsertContinuityRecord(f.ctx, rec(id, second, 0, 0), 4)).To(MatchError(c.ErrStaleFencingToken))
			Expect(t.UpsertContinuityRecord(f.ctx, rec(id, second, 0, 0), 6)).To(Succeed())
			Expect(resolved(id).SessionID).To(Equal(second), "the first handle sees the second's write")
			Expect(s.UpsertContinuityRecord(f.ctx, rec(id, session, 0, 0), 5)).To(MatchError(c.ErrStaleFencingToken))
		})
	})

	Describe("open", func() {
		It("waits for a database another connection holds write-locked, no longer than the caller's deadline", func() {
			waitsForALockedDatabase(h, f, h.Continuity, func(st c.Store) {
				Expect(st.UpsertContinuityRecord(f.ctx, rec(id, session, 0, 0), 1)).To(Succeed())
			})
		})
	})
}

// closeOnce lets a spec close its store early (to reopen the file) without
// the cleanup closing it a second time.
type closeOnce struct {
	c.Store
	closed *bool
}

func (s *closeOnce) Close() error {
	if *s.closed {
		return nil
	}
	*s.closed = true
	return s.Store.Close()
}

// waitsForALockedDatabase is the rule for opening a SQLite database another
// connection holds write-locked, the same for every store: the open waits
// for the lock (it does not fail at once), gives up by the caller's
// deadline, and succeeds once the lock is released; use then works the
// store.
func waitsForALockedDatabase[S interface{ Close() error }](h Harness, f *fresh, open func(context.Context, Options) (S, error), use func(S)) {
	GinkgoHelper()
	need(h.Capabilities.SQLiteLocking, "sqlite-locking", "opening a locked database")
	path := filepath.Join(GinkgoT().TempDir(), "locked.db")
	release := lockSQLite(path)
	ctx, cancel := context.WithTimeout(f.ctx, 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	st, err := open(ctx, Options{Path: path, Clock: f.clock})
	took := time.Since(start)
	if err == nil {
		st.Close()
	}
	Expect(err).To(HaveOccurred(), "the open cannot finish while the lock is held")
	Expect(took).To(BeNumerically(">=", 250*time.Millisecond), "the open waited for the lock rather than failing at once")
	Expect(took).To(BeNumerically("<", 3*time.Second), "the open gave up at the caller's deadline")
	release()
	st, err = open(f.ctx, Options{Path: path, Clock: f.clock})
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
