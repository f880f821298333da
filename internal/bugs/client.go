package bugs

// The client store's bugs, each traced to a rule of spec/client or a comment
// of the seed (seeds/002).
var (
	// ClientEnqueueOverwrites upserts an intent whose op_id is already
	// queued: a redelivery resets its attempt, state and times, and answers
	// true.
	ClientEnqueueOverwrites = Bug{"client_enqueue_overwrites"}
	// ClientSettledIntentRevives lets bump_intent and defer_intent act on an
	// accepted or exhausted intent, which comes back as retrying.
	ClientSettledIntentRevives = Bug{"client_settled_intent_revives"}
	// ClientDeferConsumesAttempt counts a deferral (a transport failure)
	// against the intent's attempt budget.
	ClientDeferConsumesAttempt = Bug{"client_defer_consumes_attempt"}
	// ClientDueOrderWholeSeconds orders due intents by whole seconds of
	// their next attempt time, dropping the sub-second part.
	ClientDueOrderWholeSeconds = Bug{"client_due_order_whole_seconds"}
	// ClientDueLimitUncapped reads as many due intents as asked, past the
	// cap of 500.
	ClientDueLimitUncapped = Bug{"client_due_limit_uncapped"}
	// ClientLastVerdictWins lets settle_task overwrite a terminal verdict
	// (the zombie session rewriting the answer it already gave).
	ClientLastVerdictWins = Bug{"client_last_verdict_wins"}
	// ClientReopenLowersAttempt takes the presented attempt on re-opening a
	// task, so the count can run backwards.
	ClientReopenLowersAttempt = Bug{"client_reopen_lowers_attempt"}
	// ClientSessionGateAcceptsEqual writes a session tuple whose
	// (generation, seq) equals the stored pair.
	ClientSessionGateAcceptsEqual = Bug{"client_session_gate_accepts_equal"}
	// ClientSessionGateSeqOnly requires the seq to grow even across a newer
	// generation (the gate is not lexicographic).
	ClientSessionGateSeqOnly = Bug{"client_session_gate_seq_only"}
	// ClientRebindKeepsOldBinding opens a binding without closing the
	// session's other open binding.
	ClientRebindKeepsOldBinding = Bug{"client_rebind_keeps_old_binding"}
	// ClientActiveDropsSuspended leaves suspended sessions (resource closed,
	// agent ready or idle) out of active_sessions, so the server requeues
	// work they still owe.
	ClientActiveDropsSuspended = Bug{"client_active_drops_suspended"}
	// ClientSchemaIgnoresVersion opens a file of the right marker and
	// another version.
	ClientSchemaIgnoresVersion = Bug{"client_schema_ignores_version"}
	// ClientSettleCheckOutsideTx reads whether a task is settled in one
	// transaction and writes its verdict in another: two racing settles both
	// find it open, both answer true, and the second overwrites the first
	// verdict. Only concurrency exposes it.
	ClientSettleCheckOutsideTx = Bug{"client_settle_check_outside_tx"}
)

// Client lists the client store's bugs.
var Client = register(ClientEnqueueOverwrites, ClientSettledIntentRevives, ClientDeferConsumesAttempt,
	ClientDueOrderWholeSeconds, ClientDueLimitUncapped, ClientLastVerdictWins, ClientReopenLowersAttempt,
	ClientSessionGateAcceptsEqual, ClientSessionGateSeqOnly, ClientRebindKeepsOldBinding,
	ClientActiveDropsSuspended, ClientSchemaIgnoresVersion, ClientSettleCheckOutsideTx)
