package bugs

import (
	"context"
	"math"
	"sort"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/storecheck/storecheck/adapters"
	refclient "github.com/storecheck/storecheck/reference/client"
	"github.com/storecheck/storecheck/reference/sqlitedb"
	"github.com/storecheck/storecheck/spec"
	cli "github.com/storecheck/storecheck/spec/client"
)

// clientBug registers a bug of the client store: the reference opened with
// rules, then wrapped by wrap (nil: as it is).
func clientBug(name string, rules refclient.Rules, wrap func(*refclient.Store) cli.Store) Bug {
	return register(name, cli.StoreName, func(ctx context.Context, o spec.OpenOptions) (adapters.Target, error) {
		s, err := refclient.Open(ctx, refclient.Options{Path: o.Path, Clock: o.Clock, Rules: rules})
		if err != nil {
			return nil, err
		}
		var st cli.Store = s
		if wrap != nil {
			st = wrap(s)
		}
		return sqlitedb.Target(st, cli.Apply), nil
	})
}

// The client store's bugs, each traced to a rule of spec/client or a comment
// of the seed (seeds/002).
var (
	// ClientEnqueueOverwrites upserts an intent whose op_id is already
	// queued: a redelivery resets its attempt, state and times, and answers
	// true.
	ClientEnqueueOverwrites = clientBug("client_enqueue_overwrites", refclient.Rules{},
		func(s *refclient.Store) cli.Store { return enqueueOverwrites{s} })
	// ClientSettledIntentRevives lets bump_intent and defer_intent act on an
	// accepted or exhausted intent, which comes back as retrying.
	ClientSettledIntentRevives = clientBug("client_settled_intent_revives", refclient.Rules{Retryable: `1`}, nil)
	// ClientDeferConsumesAttempt counts a deferral (a transport failure)
	// against the intent's attempt budget.
	ClientDeferConsumesAttempt = clientBug("client_defer_consumes_attempt", refclient.Rules{},
		func(s *refclient.Store) cli.Store { return deferConsumesAttempt{s} })
	// ClientDueOrderWholeSeconds orders due intents by whole seconds of
	// their next attempt time, dropping the sub-second part.
	ClientDueOrderWholeSeconds = clientBug("client_due_order_whole_seconds",
		refclient.Rules{DueOrder: `next_attempt_at / 1000, created_at, rowid`}, nil)
	// ClientDueTimesAsText keeps the next attempt times as RFC 3339 text to
	// the millisecond with the trailing zeros cut (one form the seed's
	// rfc3339 helper, which it does not show, might write) and compares
	// them as text, both to tell what is due and to order it: a whole
	// second ("…:01Z") sorts after its fractional neighbours ("…:01.5Z"),
	// and ".1" after ".15". Only times that sort differently as text and as
	// instants show it (client.time_precision: they compare as instants,
	// "oldest deadline first").
	ClientDueTimesAsText = register("client_due_times_as_text", cli.StoreName, func(ctx context.Context, o spec.OpenOptions) (adapters.Target, error) {
		s, err := refclient.Open(ctx, refclient.Options{Path: o.Path, Clock: o.Clock})
		if err != nil {
			return nil, err
		}
		clock := o.Clock
		if clock == nil {
			clock = clockwork.NewRealClock()
		}
		return sqlitedb.Target(cli.Store(dueAsText{s, clock}), cli.Apply), nil
	})
	// ClientDueLimitUncapped reads as many due intents as asked, past the
	// cap of 500.
	ClientDueLimitUncapped = clientBug("client_due_limit_uncapped", refclient.Rules{DueLimit: uncapped}, nil)
	// ClientLastVerdictWins lets settle_task overwrite a terminal verdict
	// (the zombie session rewriting the answer it already gave).
	ClientLastVerdictWins = clientBug("client_last_verdict_wins", refclient.Rules{VerdictOpen: `1`}, nil)
	// ClientReopenLowersAttempt takes the presented attempt on re-opening a
	// task, so the count can run backwards.
	ClientReopenLowersAttempt = clientBug("client_reopen_lowers_attempt", refclient.Rules{ReopenAttempt: `?`}, nil)
	// ClientSessionGateAcceptsEqual writes a session tuple whose
	// (generation, seq) equals the stored pair.
	ClientSessionGateAcceptsEqual = clientBug("client_session_gate_accepts_equal", refclient.Rules{
		Newer: func(gen, seq, storedGen, storedSeq uint64) bool {
			return gen > storedGen || (gen == storedGen && seq >= storedSeq)
		}}, nil)
	// ClientSessionGateSeqOnly requires the seq to grow even across a newer
	// generation (the gate is not lexicographic).
	ClientSessionGateSeqOnly = clientBug("client_session_gate_seq_only", refclient.Rules{
		Newer: func(gen, seq, storedGen, storedSeq uint64) bool { return gen >= storedGen && seq > storedSeq }}, nil)
	// ClientRebindKeepsOldBinding opens a binding without closing the
	// session's other open binding.
	ClientRebindKeepsOldBinding = clientBug("client_rebind_keeps_old_binding", refclient.Rules{
		ClosedOnBind: func(string) (string, []any) { return `0`, nil }}, nil)
	// ClientActiveDropsSuspended leaves suspended sessions (resource closed,
	// agent ready or idle) out of active_sessions, so the server requeues
	// work they still owe.
	ClientActiveDropsSuspended = clientBug("client_active_drops_suspended", refclient.Rules{
		Active: `agent_state IN ('booting', 'ready', 'idle') AND resource_state <> 'closed'`}, nil)
	// ClientSchemaIgnoresVersion opens a file of the right marker and
	// another version.
	ClientSchemaIgnoresVersion = clientBug("client_schema_ignores_version", refclient.Rules{
		SchemaMatches: func(marker string, _ int64) bool { return marker == cli.SchemaMarker }}, nil)
	// ClientSettleCheckOutsideTx reads whether a task is settled in one
	// transaction and writes its verdict in another: two racing settles both
	// find it open, both answer true, and the second overwrites the first
	// verdict. Only concurrency exposes it.
	ClientSettleCheckOutsideTx = clientBug("client_settle_check_outside_tx", refclient.Rules{},
		func(s *refclient.Store) cli.Store {
			return racySettle{s, s.WithRules(refclient.Rules{VerdictOpen: `1`})}
		})
	// ClientDueExcludesNow compares the next attempt time with < where the
	// seed says <=: an intent whose deadline is now is not yet due.
	ClientDueExcludesNow = clientBug("client_due_excludes_now", refclient.Rules{Due: `next_attempt_at < ?`}, nil)
	// ClientDueZeroTakesAll reads a due scan's limit of 0 as no limit,
	// where the seed's sql_limit takes 100.
	ClientDueZeroTakesAll = clientBug("client_due_zero_takes_all", refclient.Rules{DueLimit: zeroTakesAll}, nil)
	// ClientFlushReadsWholeQueue takes every due intent in one flush pass:
	// the pass the seed's INTENT_FLUSH_BATCH_SIZE was made to stop, which
	// "starved every other caller".
	ClientFlushReadsWholeQueue = clientBug("client_flush_reads_whole_queue", refclient.Rules{FlushBatch: math.MaxInt32}, nil)
	// ClientOpenTasksZeroTakesAll reads open_tasks' limit of 0 as no limit.
	ClientOpenTasksZeroTakesAll = clientBug("client_open_tasks_zero_takes_all", refclient.Rules{OpenTasksLimit: zeroTakesAll}, nil)
	// ClientOpenTasksUncapped applies open_tasks' default of 100 to a
	// limit of 0, then answers as many open tasks as asked, past the cap of
	// 500.
	ClientOpenTasksUncapped = clientBug("client_open_tasks_uncapped", refclient.Rules{OpenTasksLimit: uncapped}, nil)
	// ClientEventsLimitIgnored answers every event after the number asked,
	// whatever the limit.
	ClientEventsLimitIgnored = clientBug("client_events_limit_ignored", refclient.Rules{EventsLimit: func(uint32) int { return math.MaxInt32 }}, nil)
	// ClientEventSeqFromClock numbers an event by the clock's millisecond
	// alone and puts it there (the latitude's "from a clock" without the
	// guard that keeps a number above the last): a second event of one
	// millisecond takes the first one's number and its place.
	ClientEventSeqFromClock = clientBug("client_event_seq_from_clock", refclient.Rules{
		WriteEvent: `INSERT OR REPLACE INTO events (seq, type, data_json, created_at) VALUES (?3, ?1, ?2, ?3)`}, nil)
	// ClientFaultIDFromTime keys a fault by its created_at (the caller's
	// unix time): a second fault of the same time takes the first one's id
	// and its place, and a fault of an earlier time an id below the last.
	ClientFaultIDFromTime = clientBug("client_fault_id_from_time", refclient.Rules{
		WriteFault: `INSERT OR REPLACE INTO faults (id, task_id, session_id, generation, seq, desired_json, observed_json,
			intent, attempt, backend_ref, kind, reason, state, created_at) VALUES (?13, ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)`}, nil)
	// ClientAttemptsEightBits keeps an intent's attempt count in 8 bits: the
	// 256th refusal reads back as attempt 0, and the retry budget starts
	// over. Only an intent bumped past spec.Counter8 shows it.
	ClientAttemptsEightBits = clientBug("client_attempts_eight_bits", refclient.Rules{},
		func(s *refclient.Store) cli.Store { return attempts[uint8]{s} })
	// ClientAttemptsSixteenBits keeps the attempt counts, an intent's and a
	// task's, in 16 bits: a task opened at attempt 65,536 reads back 0 (and
	// the 65,536th refusal of an intent as attempt 0). A task's attempt is
	// the caller's (open_task's causality, a u32), so one call shows it.
	ClientAttemptsSixteenBits = clientBug("client_attempts_sixteen_bits", refclient.Rules{},
		func(s *refclient.Store) cli.Store { return attempts16{attempts[uint16]{s}} })
)

// attempts answers every attempt count as a store keeping it in T would.
type attempts[T uint8 | uint16] struct{ *refclient.Store }

func (a attempts[T]) keep(ins []cli.Intent) []cli.Intent {
	for i := range ins {
		ins[i].Attempt = int64(T(ins[i].Attempt))
	}
	return ins
}

func (a attempts[T]) Intent(ctx context.Context, opID string) (*cli.Intent, error) {
	in, err := a.Store.Intent(ctx, opID)
	if in != nil {
		in.Attempt = int64(T(in.Attempt))
	}
	return in, err
}

func (a attempts[T]) DueIntents(ctx context.Context, now time.Time, limit uint32) ([]cli.Intent, error) {
	ins, err := a.Store.DueIntents(ctx, now, limit)
	return a.keep(ins), err
}

func (a attempts[T]) FlushOrder(ctx context.Context) ([]cli.Intent, error) {
	ins, err := a.Store.FlushOrder(ctx)
	return a.keep(ins), err
}

func (a attempts[T]) TaskAttempt(ctx context.Context, taskID string) (int64, error) {
	n, err := a.Store.TaskAttempt(ctx, taskID)
	return int64(T(n)), err
}

// attempts16 keeps a task's attempt in 16 bits too, as a store whose
// attempt columns are all 16 bits would.
type attempts16 struct{ attempts[uint16] }

func (a attempts16) Task(ctx context.Context, taskID string) (*cli.Task, error) {
	t, err := a.Store.Task(ctx, taskID)
	if t != nil {
		t.Attempt = int64(uint16(t.Attempt))
	}
	return t, err
}

func (a attempts16) OpenTasks(ctx context.Context, limit uint32) ([]cli.Task, error) {
	ts, err := a.Store.OpenTasks(ctx, limit)
	for i := range ts {
		ts[i].Attempt = int64(uint16(ts[i].Attempt))
	}
	return ts, err
}

// uncapped is a read limit with the default of 0 and no cap.
func uncapped(asked uint32) int {
	if asked > 0 {
		return int(asked)
	}
	return cli.EffectiveLimit(asked)
}

// zeroTakesAll is a read limit whose 0 is no limit, with the cap.
func zeroTakesAll(asked uint32) int {
	if asked == 0 {
		return math.MaxInt32
	}
	return cli.EffectiveLimit(asked)
}

// Client lists the client store's bugs.
var Client = Of(cli.StoreName)

// enqueueOverwrites enqueues a redelivered op_id afresh: the queued intent
// is deleted and enqueued again.
type enqueueOverwrites struct{ *refclient.Store }

func (e enqueueOverwrites) EnqueueIntent(ctx context.Context, opID string, env spec.RawJSON) (bool, error) {
	added, err := e.Store.EnqueueIntent(ctx, opID, env)
	if err != nil || added {
		return added, err
	}
	if _, err := e.Store.DeleteIntent(ctx, opID); err != nil {
		return false, err
	}
	return e.Store.EnqueueIntent(ctx, opID, env)
}

// deferConsumesAttempt defers as a retry does: with the attempt counted.
type deferConsumesAttempt struct{ *refclient.Store }

func (d deferConsumesAttempt) DeferIntent(ctx context.Context, opID string, next time.Time, lastError string) (bool, error) {
	return d.Store.BumpIntent(ctx, opID, next, lastError)
}

// dueAsText answers the due scans as a store that keeps times as text and
// compares them as text would.
type dueAsText struct {
	*refclient.Store
	clock clockwork.Clock
}

// text is t as the store keeps it: RFC 3339 to the millisecond, trailing
// zeros cut.
func text(t time.Time) string { return t.UTC().Truncate(time.Millisecond).Format(time.RFC3339Nano) }

func (d dueAsText) DueIntents(ctx context.Context, now time.Time, limit uint32) ([]cli.Intent, error) {
	return d.due(ctx, now, cli.EffectiveLimit(limit))
}

func (d dueAsText) FlushOrder(ctx context.Context) ([]cli.Intent, error) {
	return d.due(ctx, d.clock.Now(), cli.FlushBatchSize)
}

func (d dueAsText) due(ctx context.Context, now time.Time, n int) ([]cli.Intent, error) {
	all, err := d.Store.DueIntents(ctx, time.Date(9999, 1, 1, 0, 0, 0, 0, time.UTC), cli.MaxLimit)
	if err != nil {
		return nil, err
	}
	var due []cli.Intent
	for _, in := range all {
		if text(in.NextAttemptAt) <= text(now) {
			due = append(due, in)
		}
	}
	sort.SliceStable(due, func(i, j int) bool {
		a, b := due[i], due[j]
		if x, y := text(a.NextAttemptAt), text(b.NextAttemptAt); x != y {
			return x < y
		}
		return text(a.CreatedAt) < text(b.CreatedAt)
	})
	if len(due) > n {
		due = due[:n]
	}
	return due, nil
}

// racySettle reads whether the task is settled in one transaction and
// writes the verdict in another, through a view that writes over any
// verdict.
type racySettle struct {
	*refclient.Store
	unguarded *refclient.Store
}

func (s racySettle) SettleTask(ctx context.Context, taskID string, state cli.TaskState) (bool, error) {
	t, err := s.Store.Task(ctx, taskID)
	if err != nil {
		return false, err
	}
	if t != nil && t.SettledAt != nil {
		return false, nil
	}
	return s.unguarded.SettleTask(ctx, taskID, state)
}
