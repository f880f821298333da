package model

// Sizes an implementation breaks at (spec.LookupChunk and the others): a
// workload's big draw (linearizability.Sizer) passes each; these events say
// it did, so that a sweep that missed one lists it as not explored.

import (
	"crypto/sha256"
	"fmt"
	"strconv"
	"sync"
	"unsafe"

	"github.com/storecheck/storecheck/spec"
	cli "github.com/storecheck/storecheck/spec/client"
	c "github.com/storecheck/storecheck/spec/continuity"
	r "github.com/storecheck/storecheck/spec/runtime"
)

// SizePrefix begins every size event's name.
const SizePrefix = "size: "

// The size events.
const (
	EventSizeResolveChunk  = "size: resolve_many > 50 identities"
	EventSizeResolveParams = "size: resolve_many > 32,766 identities"
	EventSizeSnapshot      = "size: snapshot of 4 MiB"
	EventSizeClaimPastScan = "size: claim behind 100 unclaimable batches"
	EventSizeAttachment    = "size: attachment of 4 MiB"
	EventSizeAttempts8     = "size: intent attempts > 255"
	EventSizeAttempts16    = "size: task attempt > 65,535"
	EventSizeDueDefault    = "size: due_intents of limit 0 over 100 due intents"
	EventSizeDueCap        = "size: due_intents of limit > 500 over 500 due intents"
	EventSizeFlushBatch    = "size: flush_order over 100 due intents"
	EventSizeOpenDefault   = "size: open_tasks of limit 0 over 100 open tasks"
	EventSizeOpenCap       = "size: open_tasks of limit > 500 over 500 open tasks"
)

// The size events of each store, in a fixed order.
var (
	ContinuitySizes = []string{EventSizeResolveChunk, EventSizeResolveParams, EventSizeSnapshot}
	RuntimeSizes    = []string{EventSizeClaimPastScan, EventSizeAttachment}
	ClientSizes     = []string{EventSizeAttempts8, EventSizeAttempts16, EventSizeDueDefault, EventSizeDueCap, EventSizeFlushBatch,
		EventSizeOpenDefault, EventSizeOpenCap}
)

// continuitySizes are the sizes op passed, answered out.
func continuitySizes(op any, out Outcome) []string {
	if out.Kind != "" {
		return nil
	}
	var ev []string
	switch o := op.(type) {
	case c.ResolveMany:
		n := len(distinct(o.Identities))
		if n > spec.LookupChunk {
			ev = append(ev, EventSizeResolveChunk)
		}
		if n > spec.MaxBoundParams {
			ev = append(ev, EventSizeResolveParams)
		}
	case c.SaveSessionSnapshot:
		if len(o.Write.Data) >= spec.BigValue {
			ev = append(ev, EventSizeSnapshot)
		}
	}
	return ev
}

// runtimeSizes are the sizes op passed from s at now, answered out.
func runtimeSizes(s RuntimeState, op any, now int64, out Outcome) []string {
	if out.Kind != "" {
		return nil
	}
	switch o := op.(type) {
	case r.ClaimReadyQueuedWork:
		// A claim that took work queued behind spec.ScanLimit batches it could
		// not take (not yet available, or held).
		got, _ := out.Result.(*r.QueuedWorkClaim)
		if got == nil || len(got.Batches) == 0 {
			break
		}
		ahead := 0
		for _, q := range s.batches {
			if q.B.SessionID != o.SessionID {
				continue
			}
			if q.B.BatchID == got.Batches[0].BatchID {
				break
			}
			if q.B.AvailableAtMs > now || !q.free(now) {
				ahead++
			}
		}
		if ahead >= spec.ScanLimit {
			return []string{EventSizeClaimPastScan}
		}
	case r.StageAttachment:
		if len(o.Data) >= spec.BigValue {
			return []string{EventSizeAttachment}
		}
	}
	return nil
}

// clientSizes are the sizes op passed from s at nowMS, answered out: an
// intent bumped past 8 bits, a task opened past 16, and a read of more rows than its limit's
// default or cap (cli.EffectiveLimit) or a flush pass takes.
func clientSizes(s ClientState, op any, nowMS int64, out Outcome) []string {
	if out.Kind != "" {
		return nil
	}
	past := func(n int, e string) []string {
		if n > 0 {
			return []string{e}
		}
		return nil
	}
	switch o := op.(type) {
	case cli.BumpIntent:
		if in, ok := s.intents.get(o.OpID); ok && out.Result == true && in.Attempt >= spec.Counter8 {
			return []string{EventSizeAttempts8}
		}
	case cli.OpenTask:
		if o.Causality.Attempt > spec.Counter16 && out.Result == true {
			return []string{EventSizeAttempts16}
		}
	case cli.DueIntents:
		switch {
		case o.Limit == 0:
			return past(s.dueCount(nsOf(o.Now))-cli.DefaultLimit, EventSizeDueDefault)
		case o.Limit > cli.MaxLimit:
			return past(s.dueCount(nsOf(o.Now))-cli.MaxLimit, EventSizeDueCap)
		}
	case cli.FlushOrder:
		return past(s.dueCount(msNS(nowMS))-cli.FlushBatchSize, EventSizeFlushBatch)
	case cli.OpenTasks:
		switch {
		case o.Limit == 0:
			return past(s.openCount()-cli.DefaultLimit, EventSizeOpenDefault)
		case o.Limit > cli.MaxLimit:
			return past(s.openCount()-cli.MaxLimit, EventSizeOpenCap)
		}
	}
	return nil
}

// dueCount is how many live intents are due at nowNS (s.due's count,
// without building them).
func (s ClientState) dueCount(nowNS int64) int {
	d := firstPrec(s.prec)
	n := 0
	for _, in := range s.intents.all() {
		if in.live() && cut(in.Next, d) <= cut(nowNS, d) {
			n++
		}
	}
	return n
}

// openCount is how many tasks are open (unsettled).
func (s ClientState) openCount() int {
	n := 0
	for _, t := range s.tasks.all() {
		if !t.IsSettled {
			n++
		}
	}
	return n
}

// distinct are ids without repeats, in their first order.
func distinct[T comparable](ids []T) []T {
	seen := make(map[T]bool, len(ids))
	out := make([]T, 0, len(ids))
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// valueText is a value as a state's canonical text has it: quoted, or,
// past a KiB, by its length and SHA-256, so that a big draw's value of
// several MiB is not quoted again at every step that seals its part.
func valueText(v []byte) string {
	if len(v) <= 1<<10 {
		return strconv.Quote(string(v))
	}
	lastText.Lock()
	defer lastText.Unlock()
	// The checker steps one operation in many configurations: the text
	// of the last big value is kept (operations are values, never
	// changed in place).
	if unsafe.SliceData(v) != lastText.at || len(v) != lastText.n {
		lastText.at, lastText.n = unsafe.SliceData(v), len(v)
		lastText.text = fmt.Sprintf("%d bytes sha256 %x", len(v), sha256.Sum256(v))
	}
	return lastText.text
}

var lastText struct {
	sync.Mutex
	at   *byte
	n    int
	text string
}
