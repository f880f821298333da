package model

// Queued work: batches, claims, and the initial claim fencing token.

import (
	"maps"
	"slices"
	"strconv"

	"github.com/storecheck/storecheck/spec"
	r "github.com/storecheck/storecheck/spec/runtime"
)

// stepQueue answers the operations on queued work; false: op is not one of them.
func (m Runtime) stepQueue(s RuntimeState, op spec.Op, now int64) ([]Branch, bool) {
	switch o := op.(type) {
	case r.EnqueueQueuedWork:
		return s.enqueue(o.Draft, now), true

	case r.ClaimReadyQueuedWork:
		return s.claim(o, now), true

	case r.RenewQueuedWorkClaim:
		return s.renewClaim(o.Claim, o.TTLMs, now), true

	case r.AbandonQueuedWorkClaim:
		c := o.Claim
		changed := false
		batches := slices.Clone(s.batches)
		for i := range batches {
			if q := &batches[i]; q.holds(c.SessionID, c.ClaimID, c.LeaseToken) {
				*q = rtBatch{B: q.B}
				changed = true
			}
		}
		if !changed {
			return One(s, OK(nil)), true
		}
		s.batches = batches
		return One(s.sealed(pQueue), OK(nil)), true

	case r.CancelQueuedWorkBatch:
		i, ok := s.batch(o.SessionID, o.BatchID)
		if !ok || !s.batches[i].free(now) {
			return One(s, OK((*r.QueuedWorkBatch)(nil))), true
		}
		b := s.batchOut(s.batches[i])
		s.batches = slices.Delete(slices.Clone(s.batches), i, i+1)
		return One(s.sealed(pQueue), OK(&b)), true

	case r.ListQueuedWork:
		return One(s, OK(s.sessionBatches(o.SessionID, nil))), true

	case r.ListPendingQueuedWork:
		return One(s, OK(s.sessionBatches(o.SessionID, func(q rtBatch) bool { return q.free(now) }))), true
	}
	return nil, false
}

func (s RuntimeState) batch(session, id string) (int, bool) {
	for i, q := range s.batches {
		if q.B.SessionID == session && q.B.BatchID == id {
			return i, true
		}
	}
	return -1, false
}

func (q rtBatch) free(now int64) bool { return !q.Claimed || q.ClaimExpires <= now }

// heldBy says whether this claim (id and token) holds the batch, and
// whether it is still live.
func (s RuntimeState) heldBy(session, batchID, claimID, token string, now int64) (held, isLive bool) {
	i, ok := s.batch(session, batchID)
	if !ok {
		return false, false
	}
	q := s.batches[i]
	held = q.Claimed && q.ClaimID == claimID && q.ClaimTok == token
	return held, held && live(q.ClaimExpires, now)
}

// holds says whether the claim (session, id and token) holds q.
func (q rtBatch) holds(session, claimID, token string) bool {
	return q.B.SessionID == session && q.Claimed && q.ClaimID == claimID && q.ClaimTok == token
}

func (s RuntimeState) sessionBatches(session string, keep func(rtBatch) bool) []r.QueuedWorkBatch {
	out := []r.QueuedWorkBatch{}
	for _, q := range s.batches {
		if q.B.SessionID == session && (keep == nil || keep(q)) {
			out = append(out, s.batchOut(q))
		}
	}
	return out
}

// fence0Hole is the hole of the initial claim fencing token, while no
// answer has shown it.
var fence0Hole = Hole("initial_claim_fence", 0)

// learnFence0 lets b, computed while the initial claim fence is unknown (as
// if it were 0), match an answer with any initial fence: the batches it
// shows fix it, for every batch from then on
// (runtime.enqueue_queued_work.initial_claim_fence).
func learnFence0(b Branch) Branch {
	if b.Match != nil || b.Outcome.Kind != "" || len(batchesOf(b.Outcome.Result)) == 0 {
		return b
	}
	want := b
	if b.Rule == "" {
		b.Rule = ruleInitialFence
	}
	b.Match = func(got Outcome) (map[string]string, bool) {
		gb, eb := batchesOf(got.Result), batchesOf(want.Outcome.Result)
		if got.Kind != "" || len(gb) != len(eb) || gb[0].ClaimFencingToken < eb[0].ClaimFencingToken {
			return nil, false
		}
		d := gb[0].ClaimFencingToken - eb[0].ClaimFencingToken
		shifted := Branch{Outcome: OK(shiftFences(want.Outcome.Result, d)), Next: want.Next, Distinct: want.Distinct}
		values, ok := shifted.Allows(got)
		if !ok {
			return nil, false
		}
		values = maps.Clone(values)
		if values == nil {
			values = map[string]string{}
		}
		values[fence0Hole] = strconv.FormatUint(d, 10)
		return values, true
	}
	return b
}

// batchesOf are the batches a runtime result shows.
func batchesOf(v any) []r.QueuedWorkBatch {
	switch x := v.(type) {
	case r.QueuedWorkBatch:
		return []r.QueuedWorkBatch{x}
	case *r.QueuedWorkBatch:
		if x != nil {
			return []r.QueuedWorkBatch{*x}
		}
	case []r.QueuedWorkBatch:
		return x
	case *r.QueuedWorkClaim:
		if x != nil {
			return x.Batches
		}
	}
	return nil
}

// shiftFences is a result with every claim fencing token d higher.
func shiftFences(v any, d uint64) any {
	shift := func(bs []r.QueuedWorkBatch) []r.QueuedWorkBatch {
		out := slices.Clone(bs)
		for i := range out {
			out[i].ClaimFencingToken += d
		}
		return out
	}
	switch x := v.(type) {
	case r.QueuedWorkBatch:
		x.ClaimFencingToken += d
		return x
	case *r.QueuedWorkBatch:
		if x != nil {
			c := *x
			c.ClaimFencingToken += d
			return &c
		}
	case []r.QueuedWorkBatch:
		return shift(x)
	case *r.QueuedWorkClaim:
		if x != nil {
			c := *x
			c.FencingToken += d
			c.Batches = shift(c.Batches)
			return &c
		}
	}
	return v
}

func (s RuntimeState) enqueue(d r.QueuedWorkBatchDraft, now int64) []Branch {
	invalid := d.DeliveryPolicy != r.DeliverNextTurn && d.DeliveryPolicy != r.DeliverInterrupt ||
		d.SlotPolicy != r.SlotExclusive && d.SlotPolicy != r.SlotMergeable
	var queued []Branch
	if d.SourceKey != "" {
		for _, q := range s.batches {
			if q.B.SessionID == d.SessionID && q.B.SourceKey == d.SourceKey {
				queued = One(s, OK(s.batchOut(q)))
				break
			}
		}
	}
	if invalid {
		// The reference checks the policies first.
		out := Refused(s, ruleInvalidAnyPoint, r.ErrInvalidArgument)
		for _, b := range queued {
			b.Rule = ruleInvalidAnyPoint
			out = append(out, b)
		}
		return out
	}
	if queued != nil {
		return queued
	}
	taken := make([][]string, len(s.batches))
	for i, q := range s.batches {
		taken[i] = []string{q.B.BatchID}
	}
	id := s.hole("batch")
	b := r.QueuedWorkBatch{BatchID: id, SessionID: d.SessionID, SourceKey: d.SourceKey, DeliveryPolicy: d.DeliveryPolicy,
		SlotPolicy: d.SlotPolicy, MergeKey: d.MergeKey, AvailableAtMs: d.AvailableAtMs, EnqueuedAtMs: now,
		Items: make([]r.QueuedWorkItem, len(d.Payloads))}
	for i, p := range d.Payloads {
		b.Items[i] = r.QueuedWorkItem{ItemID: r.ItemID(id, i), Payload: rawOut(string(p))}
	}
	s.batches = append(slices.Clip(s.batches), rtBatch{B: b})
	return []Branch{{Outcome: OK(s.batchOut(rtBatch{B: b})), Next: s.sealed(pQueue), Rule: ruleBatchID,
		Distinct: []Distinct{{Holes: []string{id}, Taken: taken}}}}
}

// claimable is the session's claimable batches in enqueue order (available,
// unclaimed or whose claim expired), at most max, and their indexes.
func (s RuntimeState) claimable(session string, now int64, max int) ([]r.QueuedWorkBatch, []int) {
	var out []r.QueuedWorkBatch
	var at []int
	for i, q := range s.batches {
		if len(out) == max {
			break
		}
		if q.B.SessionID == session && q.B.AvailableAtMs <= now && q.free(now) {
			out = append(out, s.batchOut(q))
			at = append(at, i)
		}
	}
	return out, at
}

func (s RuntimeState) claim(o r.ClaimReadyQueuedWork, now int64) []Branch {
	none := OK((*r.QueuedWorkClaim)(nil))
	invalid := o.Boundary != r.BoundaryTurn && o.Boundary != r.BoundaryStep
	if o.MaxBatches <= 0 {
		// The answer is max_zero's alone: nothing else is checked, so a
		// backend that answers otherwise broke that rule, whatever else
		// (a lease it went on to check) it then refused with.
		return s.orInvalid(invalid, []Branch{{Outcome: none, Next: s, Rule: ruleMaxZero}})
	}
	live := s.liveLease(o.SessionID, o.Lease, now)
	candidates, at := s.claimable(o.SessionID, now, o.MaxBatches)
	if invalid {
		// The reference checks the boundary before the lease.
		out := Refused(s, ruleInvalidAnyPoint, r.ErrInvalidArgument)
		switch {
		case !live:
			out = append(out, Refused(s, ruleInvalidAnyPoint, r.ErrSessionExecutionLeaseExpired)...)
		case len(candidates) == 0:
			out = append(out, Branch{Outcome: none, Next: s, Rule: ruleInvalidAnyPoint})
		}
		return out
	}
	if !live {
		return One(s, Fail(r.ErrSessionExecutionLeaseExpired))
	}
	var lengths []int
	for _, reading := range r.MergeReadings {
		if n := r.SelectClaimPrefixAs(reading, candidates, o.Boundary, o.MaxBatches); !slices.Contains(lengths, n) {
			lengths = append(lengths, n)
		}
	}
	rule := ""
	if len(lengths) > 1 {
		rule = rulePrefixReading
	}
	var out []Branch
	for _, n := range lengths {
		if n == 0 {
			out = append(out, Branch{Outcome: none, Next: s, Rule: rule})
			continue
		}
		out = append(out, s.claimOf(o, now, at[:n], rule)...)
	}
	return out
}

// claimOf is the claim of the batches at these indexes: its id and token
// the store's, not a live claim's of the session; its fencing token the
// first batch's after the claim's increment (the reference's) or before.
func (s RuntimeState) claimOf(o r.ClaimReadyQueuedWork, now int64, at []int, rule string) []Branch {
	var taken [][]string
	for _, q := range s.batches {
		if q.B.SessionID == o.SessionID && q.Claimed && live(q.ClaimExpires, now) {
			taken = append(taken, []string{q.ClaimID, q.ClaimTok})
		}
	}
	id, token := s.hole("claim"), s.hole("claim_token")
	claim := r.QueuedWorkClaim{SessionID: o.SessionID, ClaimID: id, OwnerID: o.OwnerID, LeaseToken: token, ClaimedAtMs: now,
		ExpiresAtMs: expiry(now, o.TTLMs)}
	s.batches = slices.Clone(s.batches)
	for _, i := range at {
		q := &s.batches[i]
		q.B.ClaimFencingToken++
		q.Claimed, q.ClaimID, q.ClaimOwner, q.ClaimTok = true, id, o.OwnerID, token
		q.ClaimedAt, q.ClaimExpires = now, claim.ExpiresAtMs
		claim.Batches = append(claim.Batches, s.batchOut(*q))
	}
	next := s.sealed(pQueue)
	distinct := []Distinct{{Holes: []string{id, token}, Taken: taken}}
	// The batches the claim answers show their counts after the claim's
	// increment (the reference's), or as the candidate rows were read
	// before it (runtime.claim_ready_queued_work.answered_batches); the
	// claim's own fencing token is its first batch's after or before
	// (claim_fence).
	read := slices.Clone(claim.Batches)
	for i := range read {
		read[i].ClaimFencingToken--
	}
	fence := claim.Batches[0].ClaimFencingToken
	if rule == "" {
		rule = ruleClaimLease
	}
	var out []Branch
	for _, v := range []struct {
		batches []r.QueuedWorkBatch
		fence   uint64
		rule    string
	}{{claim.Batches, fence, rule}, {claim.Batches, fence - 1, ruleClaimFence},
		{read, fence, ruleAnsweredBatches}, {read, fence - 1, ruleAnsweredBatches}} {
		c := claim
		c.Batches, c.FencingToken = v.batches, v.fence
		out = append(out, Branch{Outcome: OK(&c), Next: next, Rule: v.rule, Distinct: distinct})
	}
	return out
}

// renewClaim is the seed's renewal: one UPDATE of every batch the claim's id
// and token hold, live or expired, which stays whatever the answer; then the
// answer, by how many batches it changed (renewed_claim, not shown).
func (s RuntimeState) renewClaim(c r.QueuedWorkClaim, ttl uint64, now int64) []Branch {
	expires := expiry(now, ttl)
	changed := 0
	batches := slices.Clone(s.batches)
	for i := range batches {
		if q := &batches[i]; q.holds(c.SessionID, c.ClaimID, c.LeaseToken) {
			q.ClaimExpires = expires
			changed++
		}
	}
	if changed == 0 {
		return One(s, Fail(r.ErrQueuedWorkClaimExpired))
	}
	next := s
	next.batches = batches
	next = next.sealed(pQueue)
	renewed := c
	renewed.ExpiresAtMs = expires
	if changed == len(c.Batches) {
		return One(next, OK(renewed))
	}
	// Some of the claim's batches (or more rows than it names): the
	// reference refuses; renewed_claim may answer the claim.
	return []Branch{
		{Outcome: Fail(r.ErrQueuedWorkClaimExpired), Next: next, Rule: ruleRenewChanged},
		{Outcome: OK(renewed), Next: next, Rule: ruleRenewChanged},
	}
}
