package main

import "github.com/storecheck/storecheck/internal/bugs"

func init() {
	const twoHandles = "client two handles on one database keep the outbox, the session gate, the bindings and the first verdict across handles, as two processes would"
	for b, specs := range map[bugs.Bug][]string{
		bugs.ClientEnqueueOverwrites: {
			"client enqueue_intent leaves an existing op_id exactly as it was (attempt, state, times) and answers false",
			twoHandles,
		},
		bugs.ClientSettledIntentRevives: {
			"client bump_intent acts on no settled intent: an accepted or exhausted intent never comes back to life",
			"client defer_intent acts on no settled intent: an accepted or exhausted intent never comes back to life",
			twoHandles,
		},
		bugs.ClientDeferConsumesAttempt: {
			"client defer_intent moves the next attempt time and error without consuming an attempt",
		},
		bugs.ClientDueOrderWholeSeconds: {
			"client due_intents orders times by their sub-second part when the store keeps one, and within a whole second by creation and enqueue order when it does not",
		},
		bugs.ClientDueTimesAsText: {
			"client due_intents orders times by their sub-second part when the store keeps one, and within a whole second by creation and enqueue order when it does not",
		},
		bugs.ClientDueLimitUncapped: {
			"client due_intents takes 100 rows for a limit of 0 (of 99, 100 and 101 due), and at most 500 for any limit (499, 500 and 501 asked of 501 due)",
		},
		bugs.ClientLastVerdictWins: {
			"client settle_task lets the first terminal verdict win: a later one answers false and changes nothing",
			"client settle_task creates the record of a task never opened: no kind, no parent, opened and settled now",
			twoHandles,
		},
		bugs.ClientReopenLowersAttempt: {
			"client open_task re-opening refreshes the chain, keeps state and opening time, never lowers the attempt, and answers true",
		},
		bugs.ClientSessionGateAcceptsEqual: {
			"client upsert_session writes only a strictly newer (generation, seq): an equal or older pair changes nothing and answers false",
			"client upsert_session opens no binding when the gate refuses the write",
			"client bump_session_version refuses an equal or older pair under the same gate, and takes a newer generation whatever its seq",
			twoHandles,
		},
		bugs.ClientSessionGateSeqOnly: {
			"client upsert_session lets a newer generation win whatever its seq",
			"client bump_session_version refuses an equal or older pair under the same gate, and takes a newer generation whatever its seq",
		},
		bugs.ClientRebindKeepsOldBinding: {
			"client bind_task opens a binding and closes the session's other open binding",
			"client upsert_session moves the session to the task it is written for, closing its other open binding",
		},
		bugs.ClientActiveDropsSuspended: {
			"client active_sessions claims booting, ready and idle sessions whose resource is open, and reports closed ready or idle ones suspended",
			"client active_sessions never claims a session once it has exited",
		},
		bugs.ClientSchemaIgnoresVersion: {
			"client open refuses a file of another version of its marker with schema_mismatch, and changes nothing in it",
		},
		// The bounds' bugs (internal/bugs/bounds.go): each fails the specs
		// at its bound.
		bugs.ClientDueExcludesNow: {
			"client due_intents returns a live intent once its next attempt time has come: not just before, at it and after",
		},
		bugs.ClientDueZeroTakesAll: {"client due_intents takes 100 rows for a limit of 0 (of 99, 100 and 101 due), and at most 500 for any limit (499, 500 and 501 asked of 501 due)"},
		bugs.ClientFlushReadsWholeQueue: {
			"client flush_order takes every due row of 99 or 100, and the oldest 100 of 101",
		},
		bugs.ClientOpenTasksZeroTakesAll: {"client open_tasks reads 100 tasks for a limit of 0 (of 99, 100 and 101 open), and at most 500 for any limit (499, 500 and 501 asked of 501 open)"},
		bugs.ClientOpenTasksUncapped:     {"client open_tasks reads 100 tasks for a limit of 0 (of 99, 100 and 101 open), and at most 500 for any limit (499, 500 and 501 asked of 501 open)"},
		bugs.ClientEventsLimitIgnored: {
			"client events_since takes exactly limit events for a limit from 1 to 100 (99 and 100 asked of 102), and a prefix of at least 100 for one above (101) or any above 100, or for 0",
		},
		bugs.ClientEventSeqFromClock: {
			"client append_event returns positive sequence numbers, each greater than every earlier one, whatever the numbering",
			"client open finds everything it acknowledged after it is closed and opened again",
		},
		// The sizes' bugs (spec/sizes.go).
		bugs.ClientAttemptsEightBits: {
			"client bump_intent counts refusals past what 8 bits keep: the 256th reads attempt 256",
		},
		bugs.ClientAttemptsSixteenBits: {
			"client open_task keeps an attempt past what 16 bits keep: 65,537 reads 65,537",
		},
		bugs.ClientFaultIDFromTime: {
			"client insert_fault returns increasing ids, and list_faults returns the task's faults in insertion order",
		},
	} {
		expectedFailures[b] = specs
	}
}
