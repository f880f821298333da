package model

// The session's execution lease.

import (
	"maps"

	"github.com/storecheck/storecheck/spec"
	r "github.com/storecheck/storecheck/spec/runtime"
)

// stepLease answers the operations on the session's execution lease; false: op is not one of them.
func (m Runtime) stepLease(s RuntimeState, op spec.Op, now int64) ([]Branch, bool) {
	switch o := op.(type) {
	case r.TryClaimSessionExecutionLease:
		cur, ok := s.leases[o.SessionID]
		expires := expiry(now, o.TTLMs)
		if ok && cur.Held && live(cur.ExpiresAt, now) {
			if cur.Owner != o.OwnerID {
				return One(s, OK((*r.SessionExecutionLease)(nil))), true
			}
			cur.ExpiresAt = expires
			return One(s.withLease(o.SessionID, cur).sealed(pLeases), OK(&r.SessionExecutionLease{SessionID: o.SessionID, OwnerID: o.OwnerID,
				LeaseToken: cur.Token, FencingToken: cur.Fence, ClaimedAtMs: cur.ClaimedAt, ExpiresAtMs: expires})), true
		}
		fence := cur.Fence + 1
		l := rtLease{Held: true, Owner: o.OwnerID, Token: r.LeaseToken(o.SessionID, o.OwnerID, now, fence), Fence: fence,
			ClaimedAt: now, ExpiresAt: expires}
		return One(s.withLease(o.SessionID, l).sealed(pLeases), OK(&r.SessionExecutionLease{SessionID: o.SessionID, OwnerID: o.OwnerID,
			LeaseToken: l.Token, FencingToken: fence, ClaimedAtMs: now, ExpiresAtMs: expires})), true

	case r.RenewSessionExecutionLease:
		f := o.Fence
		cur, ok := s.leaseIs(f.SessionID, f)
		if !ok || !live(cur.ExpiresAt, now) {
			return One(s, Fail(r.ErrSessionExecutionLeaseExpired)), true
		}
		cur.ExpiresAt = expiry(now, o.TTLMs)
		return One(s.withLease(f.SessionID, cur).sealed(pLeases), OK(r.SessionExecutionLease{SessionID: f.SessionID, OwnerID: f.OwnerID,
			LeaseToken: f.LeaseToken, FencingToken: f.FencingToken, ClaimedAtMs: cur.ClaimedAt, ExpiresAtMs: cur.ExpiresAt})), true

	case r.ReleaseSessionExecutionLease:
		if next, ok := s.released(o.Completion); ok {
			return One(next.sealed(pLeases), OK(nil)), true
		}
		return One(s, OK(nil)), true
	}
	return nil, false
}

// leaseIs says whether f is the session's lease (owner, token and fence);
// liveness apart.
func (s RuntimeState) leaseIs(session string, f r.SessionExecutionLeaseFence) (rtLease, bool) {
	l, ok := s.leases[session]
	return l, ok && l.Held && l.Owner == f.OwnerID && l.Token == f.LeaseToken && l.Fence == f.FencingToken
}

// liveLease is ensure_lease: f is the session's live lease.
func (s RuntimeState) liveLease(session string, f r.SessionExecutionLeaseFence, now int64) bool {
	if f.SessionID != session {
		return false
	}
	l, ok := s.leaseIs(session, f)
	return ok && live(l.ExpiresAt, now)
}

func (s RuntimeState) withLease(session string, l rtLease) RuntimeState {
	s.leases = maps.Clone(s.leases)
	if s.leases == nil {
		s.leases = map[string]rtLease{}
	}
	s.leases[session] = l
	return s
}

// released clears the lease c names when owner, token and fence match.
func (s RuntimeState) released(c r.SessionExecutionLeaseCompletion) (RuntimeState, bool) {
	l, ok := s.leaseIs(c.SessionID, c)
	if !ok {
		return s, false
	}
	return s.withLease(c.SessionID, rtLease{Fence: l.Fence}), true
}
