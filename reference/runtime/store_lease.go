package runtime

// The session's execution lease.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/storecheck/storecheck/reference/sqlitedb"

	"github.com/storecheck/storecheck/spec"
	r "github.com/storecheck/storecheck/spec/runtime"
)

// lease is a session_execution_leases row.
type lease struct {
	owner, token         sql.NullString
	fence                uint64
	claimedAt, expiresAt int64
}

func loadLease(ctx context.Context, tx *sqlitedb.Tx, session string) (*lease, error) {
	var l lease
	err := tx.QueryRowContext(ctx, `SELECT owner_id, lease_token, fencing_token, claimed_at_ms, expires_at_ms
		FROM session_execution_leases WHERE session_id = ?`, session).Scan(&l.owner, &l.token, &l.fence, &l.claimedAt, &l.expiresAt)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &l, nil
}

// row is l as Rules see it (nil: no row).
func (l *lease) row() *Lease {
	if l == nil {
		return nil
	}
	return &Lease{OwnerID: l.owner.String, Token: l.token.String, Held: l.token.Valid, Fence: l.fence,
		ClaimedAtMs: l.claimedAt, ExpiresAtMs: l.expiresAt}
}

// matches says whether the row is the lease the fence names.
func (l *lease) matches(f r.SessionExecutionLeaseFence) bool {
	return l != nil && l.token.Valid && l.owner.String == f.OwnerID && l.token.String == f.LeaseToken && l.fence == f.FencingToken
}

// ensureLease checks that fence is the session's live lease.
func (s *Store) ensureLease(ctx context.Context, tx *sqlitedb.Tx, session string, f r.SessionExecutionLeaseFence, now int64) error {
	if f.SessionID != session {
		return spec.Errorf(r.ErrSessionExecutionLeaseExpired, "a lease of session %s presented for session %s", f.SessionID, session)
	}
	l, err := loadLease(ctx, tx, session)
	if err != nil {
		return err
	}
	if !l.matches(f) || !s.rules.live(l.expiresAt, now) {
		return spec.Errorf(r.ErrSessionExecutionLeaseExpired, "session %s: the lease of %s (fence %d) is not the live lease",
			session, f.OwnerID, f.FencingToken)
	}
	return nil
}

func (s *Store) releaseLease(ctx context.Context, tx *sqlitedb.Tx, c r.SessionExecutionLeaseCompletion) error {
	match := s.rules.Releases(c)
	_, err := tx.ExecContext(ctx, `UPDATE session_execution_leases SET owner_id = NULL, lease_token = NULL,
		claimed_at_ms = 0, expires_at_ms = 0
		WHERE session_id = ? AND `+match.SQL, append([]any{c.SessionID}, match.Args...)...)
	if err != nil {
		return fmt.Errorf("release lease: %w", err)
	}
	return nil
}

// StoredLease reads the session's lease row (nil: none), in a read
// transaction of its own: what a lease claim decides on.
func (s *Store) StoredLease(ctx context.Context, session string) (*Lease, error) {
	var cur *lease
	err := s.db.Read(ctx, "stored_lease", func(tx *sqlitedb.Tx) (err error) {
		cur, err = loadLease(ctx, tx, session)
		return err
	})
	return cur.row(), err
}

// TryClaimSessionExecutionLease reads the lease row, decides
// (Rules.TryClaim) and writes, in one transaction.
func (s *Store) TryClaimSessionExecutionLease(ctx context.Context, session, owner string, ttl uint64) (*r.SessionExecutionLease, error) {
	now := s.now()
	var out *r.SessionExecutionLease
	err := s.db.Write(ctx, "try_claim_session_execution_lease", func(tx *sqlitedb.Tx) error {
		cur, err := loadLease(ctx, tx, session)
		if err != nil {
			return err
		}
		l, granted := s.rules.TryClaim(session, cur.row(), owner, now, ttl)
		if l == nil {
			return nil
		}
		if granted {
			_, err = tx.ExecContext(ctx, `INSERT INTO session_execution_leases (session_id, owner_id, lease_token,
				fencing_token, claimed_at_ms, expires_at_ms) VALUES (?, ?, ?, ?, ?, ?)
				ON CONFLICT(session_id) DO UPDATE SET owner_id = excluded.owner_id, lease_token = excluded.lease_token,
					fencing_token = excluded.fencing_token, claimed_at_ms = excluded.claimed_at_ms,
					expires_at_ms = excluded.expires_at_ms`, session, l.OwnerID, l.Token, l.Fence, l.ClaimedAtMs, l.ExpiresAtMs)
		} else {
			_, err = tx.ExecContext(ctx, `UPDATE session_execution_leases SET expires_at_ms = ? WHERE session_id = ?`,
				l.ExpiresAtMs, session)
		}
		if err != nil {
			return err
		}
		out = &r.SessionExecutionLease{SessionID: session, OwnerID: l.OwnerID, LeaseToken: l.Token, FencingToken: l.Fence,
			ClaimedAtMs: l.ClaimedAtMs, ExpiresAtMs: l.ExpiresAtMs}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (s *Store) RenewSessionExecutionLease(ctx context.Context, f r.SessionExecutionLeaseFence, ttl uint64) (r.SessionExecutionLease, error) {
	now := s.now()
	var out r.SessionExecutionLease
	err := s.db.Write(ctx, "renew_session_execution_lease", func(tx *sqlitedb.Tx) error {
		cur, err := loadLease(ctx, tx, f.SessionID)
		if err != nil {
			return err
		}
		if !cur.matches(f) || !s.rules.Renewable(cur.expiresAt, now) {
			return spec.Errorf(r.ErrSessionExecutionLeaseExpired, "session %s: the lease of %s (fence %d) is not the live lease",
				f.SessionID, f.OwnerID, f.FencingToken)
		}
		expires := expiry(now, ttl)
		if _, err := tx.ExecContext(ctx, `UPDATE session_execution_leases SET expires_at_ms = ? WHERE session_id = ?`,
			expires, f.SessionID); err != nil {
			return err
		}
		out = r.SessionExecutionLease{SessionID: f.SessionID, OwnerID: f.OwnerID, LeaseToken: f.LeaseToken,
			FencingToken: f.FencingToken, ClaimedAtMs: cur.claimedAt, ExpiresAtMs: expires}
		return nil
	})
	if err != nil {
		return r.SessionExecutionLease{}, err
	}
	return out, nil
}

func (s *Store) ReleaseSessionExecutionLease(ctx context.Context, c r.SessionExecutionLeaseCompletion) error {
	return s.db.Write(ctx, "release_session_execution_lease", func(tx *sqlitedb.Tx) error {
		return s.releaseLease(ctx, tx, c)
	})
}
