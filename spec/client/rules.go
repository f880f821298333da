package client

import "github.com/storecheck/storecheck/spec"

// Seed is the seed file the client contract comes from (seeds/).
const Seed = "002_5e2281c7c755b9d2.txt"

func quoted(at, quote string) spec.Source   { return spec.Quoted(Seed, at, quote) }
func silent(at, silence string) spec.Source { return spec.Silent(Seed, at, silence) }

// The IDs of the rules the model names on its branches (every other rule is
// named by the specs alone).
const (
	RuleOneTransaction     = "client.one_transaction"
	RuleTimePrecision      = "client.time_precision"
	RuleUnixSeconds        = "client.unix_seconds"
	RulePayloadJSON        = "client.payload_json"
	RuleRefusalOrder       = "client.refusal_order"
	RuleEnvelopeTask       = "client.envelope_task"
	RuleEventSeq           = "client.append_event.seq_increasing"
	RuleEventHead          = "client.event_head.last"
	RuleEventsSince        = "client.events_since.after_seq"
	RuleEventsLimit        = "client.events_since.limit"
	RuleHeadPreview        = "client.put_out_head.preview"
	RuleSessionID          = "client.upsert_session.session_id"
	RuleBindingChoice      = "client.get_session.binding_choice"
	RuleBindTwoStatements  = "client.bind_task.two_statements"
	RuleOpenTaskRefresh    = "client.open_task.refresh"
	RuleOpenTaskKinds      = "client.open_task.kind_words"
	RuleSettleVerdictWords = "client.settle_task.verdict_words"
	RuleKnownTwoStatements = "client.task_is_known.two_statements"
	RuleFaultID            = "client.insert_fault.id_increasing"
	RuleOpenTasksLimit     = "client.open_tasks.limit"
)

// sqlLimitBounds are the two bounds of the seed's sql_limit on a read of
// rows: what a limit of 0 takes, and the cap.
func sqlLimitBounds(rows string) []spec.Bound {
	return []spec.Bound{{
		Name: "default", Value: "100", Of: "the " + rows + ", read with a limit of 0",
		Below: "99: all 99", At: "100: all 100", Above: "101: the first 100",
		Source: quoted("DEFAULT_LIMIT", "const DEFAULT_LIMIT: i64 = 100;"),
	}, {
		Name: "cap", Value: "500", Of: "the limit asked, of 501 " + rows,
		Below: "499: the first 499", At: "500: the first 500", Above: "501: the first 500 (a larger limit is cut to 500, not refused)",
		Source: quoted("sql_limit", "i64::from(limit.min(500))"),
	}}
}

// counterBound is the bound of a number the store picks that never runs
// backwards: no spec can present one below or at the last, so a spec
// checks each answer against the last where it could stand still.
func counterBound(of, above string, src spec.Source, latitude string) spec.Bound {
	return spec.Bound{
		Name: "last", Value: "the last number answered", Of: of, Above: above,
		Missing: map[spec.Side]string{
			spec.Below: "the store picks the number, so no spec can present one below the last",
			spec.At:    "the store picks the number, so no spec can present the last again",
		},
		Source: src, Latitude: latitude,
	}
}

// Rules is the client contract's rule table: every rule the kit checks of
// the client store, with the seed line it comes from, or the seed's silence
// and the latitude a backend then has. docs/rules/client.md is rendered from
// it; every spec of spec/suite/client*.go names the rules it checks.
var Rules = []spec.Rule{
	// ----- the whole store -----
	{
		ID: RuleOneTransaction, Says: "Every operation is one step: a failed operation changes nothing, and two stores open on one file (as two processes) keep every rule between them.",
		Source:   quoted("ClientStore::delete_intent", "Like every write here it runs on the /// store's one connection, under the store's lock and its busy timeout: a /// caller that opened a second handle to the file to drop this row wrote /// around that serialization, and whether the row went depended on how that /// handle happened to treat a busy database."),
		Latitude: "Two reads the seed runs as separate statements (task_is_known) and a binding the seed opens outside a transaction (bind_task) are the exceptions; their own rules say how the kit checks them.",
	},
	{
		ID: "client.durable", Says: "A store closed and opened again on its file finds everything it acknowledged, and its event log goes on after its last sequence number.",
		Source: quoted("INTENT_FLUSH_BATCH_SIZE", "The queue is durable, so a client that stayed offline through a long outage /// can hold tens of thousands of pending rows."),
	},
	{
		ID: "client.survives_power_loss", Says: "Every write the store acknowledged survives a power cut: after the machine loses everything the backend never synced (fsync, fdatasync), the store opened again on its file finds every intent, event, session, task and fault it acknowledged. An operation in flight at the cut may or may not have taken effect, and none is half applied. " + spec.PowerLossModel,
		Source:   quoted("INTENT_FLUSH_BATCH_SIZE", "The queue is durable, so a client that stayed offline through a long outage /// can hold tens of thousands of pending rows."),
		Latitude: "The seed's open_connection, where the connection is set up, is not shown, so it does not say whether a commit is synced before it is acknowledged: the kit reads the durable queue as SQLite's default, synchronous=FULL, under which it is. A backend may declare hello's durability \"process_crash\" (its writes survive a process crash, not a power cut): it is then held to that, the simulator cuts no power for this store, the power-loss spec is skipped, and the report says power loss was not explored. " + spec.PowerLossAfterFailedSync,
	},
	{
		ID: "client.open_locked", Says: "Opening a file another connection holds write-locked waits for the lock (it does not fail at once), gives up by the open's timeout (the open request's timeout_ms), answering within a slack of 2 s more, and succeeds once the lock is released.",
		Source:   quoted("ClientStore::delete_intent", "it runs on the /// store's one connection, under the store's lock and its busy timeout"),
		Latitude: "How long a backend waits inside the deadline is its own; the kit checks only that it waits and that it stops by the deadline.",
	},
	{
		ID: RuleTimePrecision, Says: "A time the store keeps through its rfc3339 helper (an intent's next attempt, creation and update times, a prose cache time, a task's opening and settle times, an event's creation time) reads back as that instant cut to the backend's precision, the same precision for every such time, and compares and orders at that precision.",
		Source:   silent("rfc3339", "the seed keeps these times as TEXT written by rfc3339(...), a helper of crate::server it does not show: how many digits of the second it writes is not stated"),
		Latitude: "The precision is the backend's: whole seconds, milliseconds, microseconds or nanoseconds (a cut, never a rounding). The model learns it from the first time a backend reads back and holds it to it from then on; the specs accept any of them, and where an order depends on it (due_intents) they check the order at the precision the backend showed. A backend that keeps sub-second parts but orders by whole seconds keeps no precision consistently and fails. The form a backend keeps a time in is its own too (a number, or text of any width), but the times compare and order as the instants they are at that precision, since the seed's due_intents answers \"The rows due by `now`, oldest deadline first\": text compares so only when every time is written at one width with one zone mark, and a backend whose text sorts otherwise (\"…:01Z\" after \"…:01.5Z\", \".1Z\" after \".15Z\") fails.",
	},
	{
		ID: RuleUnixSeconds, Says: "A session tuple's updated_at and a fault's created_at are the caller's times: they read back as given, or cut to the whole second.",
		Source:   quoted("CLIENT_DDL", "When the tuple last moved. Both clocks are the kernel's unix seconds, -- encoded through this crate's own helper on every write."),
		Latitude: "The seed keeps these as unix seconds; a backend may keep them to the second or finer (to the millisecond, the microsecond or the nanosecond). The model learns the precision from the first such time read back; the specs accept any.",
	},
	{
		ID: RulePayloadJSON, Says: "An envelope, a receipt or an event's data that is not JSON is refused with invalid_argument, or kept verbatim (and then the operation acts as it would on JSON).",
		Source:   silent("ClientStore::enqueue_intent", "the seed takes these as serde_json::Value, so a value that is not JSON never reaches it"),
		Latitude: "Either, one way for each of the three (envelope, receipt, event data): the specs accept an invalid_argument that changed nothing, or the operation's effect with the text kept as given; the model learns a backend's way from the first answer that shows it and holds it to it. A JSON value always reads back JSON-equal to what was given.",
	},
	{
		ID: RuleRefusalOrder, Says: "An operation that presents a value the store may refuse (text that is not JSON, a verdict or kind outside the backend's words) and also finds nothing to act on (an intent already settled or gone, a task already settled) answers the refusal or the decline: invalid_argument or false, and changes nothing.",
		Source:   silent("ClientStore", "the seed cannot be handed such a value, so it fixes no order between the check of the value and the check of the row"),
		Latitude: "Either answer, each time (the model's branches name this rule).",
	},
	{
		ID: RuleEnvelopeTask, Says: "An intent names a task when its envelope's causality.task is a JSON string equal to the task id; an envelope that is not an object, a causality that is not an object, or a task that is not a string names none.",
		Source:   quoted("intent_task_matches", `value .get("causality") .and_then(|v| v.get("task")) .and_then(Value::as_str) == Some(task_id)`),
		Latitude: "An envelope that names causality or task twice may count by either occurrence (serde_json keeps the last, SQLite's json_extract reads the first); the kit's workloads never present one, and the spec accepts either.",
	},
	{
		ID: "client.schema_mismatch", Says: "Opening a file that carries another marker, or another version of the store's marker, fails with schema_mismatch (the kind; the message is free) and changes nothing in the file.",
		Source:   quoted("CLIENT_SCHEMA_VERSION", "so it stops at the door on the same string every /// other mismatch prints."),
		Latitude: "The message is the backend's: the kit compares the kind only. Where the marker lives is the backend's too (see client.schema_layout).",
	},
	{
		ID: "client.schema_new_file", Says: "A file with nothing in it is new: the store writes its schema, marker and version into it, and opens that file again.",
		Source: quoted("ClientStore::open", `let conn = open_connection( &path, "client", CLIENT_MARKER, CLIENT_DDL, CLIENT_SCHEMA_VERSION, )?;`),
	},
	{
		ID: "client.schema_unmarked", Says: "A SQLite file kept as spec/client lays it out (client_schema_table) that holds tables but no schema_meta row is refused as unmarked, with schema_mismatch.",
		Source:   silent("open_connection", "the seed's open_connection, which reads and writes the marker, is not shown"),
		Latitude: "Checked only of a backend that declares client_schema_table, that is, keeps its marker as the kit lays it out; a backend with its own layout is not asked what it does with a file that has none.",
	},
	{
		ID: "client.schema_layout", Says: "Where and how the marker and version are kept is the backend's own. The kit checks the gate either by asking the backend to write a file of another marker or version itself (capability client_schema_writer: request write_foreign_schema, harness function WriteClientSchema) or, for a backend that keeps the kit's layout, by writing the schema_meta table itself (capability client_schema_table).",
		Source:   silent("open_connection", "the seed's open_connection is not shown, so neither is the layout of its marker"),
		Latitude: "Any layout. A backend that declares neither capability has the gate's specs skipped, with the reason.",
	},

	// ----- the outbox -----
	{
		ID: "client.enqueue_intent.new", Op: "enqueue_intent", Says: "A new op_id is added pending, attempt 0, due now, created and updated now, with no receipt and no error, and the call answers true; its envelope reads back JSON-equal.",
		Source: quoted("ClientStore::enqueue_intent", "INSERT OR IGNORE INTO intents(op_id,env_json,attempt,state,next_attempt_at,receipt_json,last_error,created_at,updated_at) VALUES(?,?,0,'pending',?,NULL,NULL,?,?)"),
	},
	{
		ID: "client.enqueue_intent.existing_untouched", Op: "enqueue_intent", Says: "An op_id already in the outbox, in any state, is left exactly as it was (envelope, attempt, state, times) and the call answers false: a redelivered intent never resets its retry budget.",
		Source: quoted("ClientStore::enqueue_intent", "INSERT OR IGNORE INTO intents"),
	},
	{
		ID: "client.intent.read", Op: "intent", Says: "intent answers one outbox row, as due_intents answers rows, or nil for an op_id not in the outbox.",
		Source:   silent("ClientStore", "the seed reads rows only through due_intents and flush_order; intent is the kit's read of one row, so that every state is observable"),
		Latitude: "None beyond the row's own (times at the backend's precision, client.time_precision).",
	},
	{
		ID: "client.due_intents.due", Op: "due_intents", Says: "due_intents answers the pending and retrying intents whose next attempt time is at or before the given now; no accepted or exhausted one.",
		Source: quoted("ClientStore::due_intents", "WHERE state IN ('pending','retrying') AND next_attempt_at<=?"),
		Bounds: []spec.Bound{{
			Name: "deadline", Value: "the intent's next attempt time", Of: "the now asked",
			Below: "not due (a millisecond before a deadline on a whole second)", At: "due", Above: "due",
			Source: quoted("ClientStore::due_intents", "next_attempt_at<=?"),
		}},
	},
	{
		ID: "client.due_intents.order", Op: "due_intents", Says: "Due intents come ordered by next attempt time, then creation time, then enqueue order: the row that waited longest is first.",
		Source:   quoted("ClientStore::flush_order", "the deadline orders the batch, so the row /// that has waited longest is first and cannot be starved by later arrivals"),
		Latitude: "Times order at the backend's precision (client.time_precision): at whole seconds, two deadlines within one second tie and fall to creation time and enqueue order.",
	},
	{
		ID: "client.due_intents.limit", Op: "due_intents", Says: "A due scan takes at most limit rows; a limit of 0 takes 100, and no scan takes more than 500.",
		Source: quoted("sql_limit", "if limit == 0 { DEFAULT_LIMIT } else { i64::from(limit.min(500)) }"),
		Bounds: sqlLimitBounds("due intents"),
	},
	{
		ID: "client.bump_intent.refusal", Op: "bump_intent", Says: "bump_intent records a refusal: attempt + 1, state retrying, the given next attempt time and error, updated now; it answers true.",
		Source: quoted("ClientStore::bump_intent", "UPDATE intents SET state='retrying',attempt=attempt+1,next_attempt_at=?,last_error=?,updated_at=? WHERE op_id=? AND state IN ('pending','retrying')"),
	},
	{
		ID: "client.bump_intent.live_only", Op: "bump_intent", Says: "bump_intent acts only on a pending or retrying intent: on a settled (accepted, exhausted) or missing one it changes nothing and answers false, so a settled intent never comes back to life.",
		Source: quoted("ClientStore::bump_intent", "WHERE op_id=? AND state IN ('pending','retrying')"),
	},
	{
		ID: "client.defer_intent.keeps_attempt", Op: "defer_intent", Says: "defer_intent moves the intent to retrying with the given next attempt time and error, updated now, without consuming an attempt; it answers true.",
		Source: quoted("ClientStore::defer_intent", "Counting those against `intent.attempts` would drop a /// completion that was written while the link was down."),
	},
	{
		ID: "client.defer_intent.live_only", Op: "defer_intent", Says: "defer_intent acts only on a pending or retrying intent; otherwise it changes nothing and answers false.",
		Source: quoted("ClientStore::defer_intent", "UPDATE intents SET state='retrying',next_attempt_at=?,last_error=?,updated_at=? WHERE op_id=? AND state IN ('pending','retrying')"),
	},
	{
		ID: "client.accept_intent.settles", Op: "accept_intent", Says: "accept_intent settles a live intent as accepted with the server's receipt (reading back JSON-equal), updated now, attempt unchanged; it answers true.",
		Source: quoted("ClientStore::accept_intent", "UPDATE intents SET state='accepted',receipt_json=?,updated_at=? WHERE op_id=? AND state IN ('pending','retrying')"),
	},
	{
		ID: "client.accept_intent.live_only", Op: "accept_intent", Says: "accept_intent acts only on a pending or retrying intent: a second accept, or an accept after exhaust, answers false and changes nothing.",
		Source: quoted("ClientStore::accept_intent", "WHERE op_id=? AND state IN ('pending','retrying')"),
	},
	{
		ID: "client.exhaust_intent.settles", Op: "exhaust_intent", Says: "exhaust_intent settles a live intent as exhausted with its last error, attempt unchanged, updated now; it answers true.",
		Source: quoted("ClientStore::exhaust_intent", "UPDATE intents SET state='exhausted',last_error=?,updated_at=? WHERE op_id=? AND state IN ('pending','retrying')"),
	},
	{
		ID: "client.exhaust_intent.live_only", Op: "exhaust_intent", Says: "exhaust_intent acts only on a pending or retrying intent; otherwise it changes nothing and answers false.",
		Source: quoted("ClientStore::exhaust_intent", "WHERE op_id=? AND state IN ('pending','retrying')"),
	},
	{
		ID: "client.delete_intent.removes", Op: "delete_intent", Says: "delete_intent removes an intent in any state and answers whether there was one; a deleted op_id can be enqueued again, as new.",
		Source: quoted("ClientStore::delete_intent", `Ok(conn.execute("DELETE FROM intents WHERE op_id=?", params![op_id])? == 1)`),
	},
	{
		ID: "client.pending_intent_count.live", Op: "pending_intent_count", Says: "pending_intent_count counts the pending and retrying intents, due or not, and no settled one.",
		Source: quoted("ClientStore::pending_intent_count", "SELECT COUNT(*) FROM intents WHERE state IN ('pending','retrying')"),
	},
	{
		ID: "client.flush_order.now_and_batch", Op: "flush_order", Says: "flush_order is due_intents at the store's own now with a limit of 100.",
		Source: quoted("ClientStore::flush_order", "self.due_intents(Utc::now(), INTENT_FLUSH_BATCH_SIZE)"),
		Bounds: []spec.Bound{{
			Name: "batch", Value: "100", Of: "the intents due at the store's own now",
			Below: "99 due: all 99", At: "100 due: all 100", Above: "101 due: the first 100, the one that waited least left for the next pass",
			Source: quoted("INTENT_FLUSH_BATCH_SIZE", "A pass that read them all held /// the store's single connection for the length of the queue and starved every /// other caller of the same database, so one pass takes this many due rows and /// the next pass takes the rest. pub const INTENT_FLUSH_BATCH_SIZE: u32 = 100;"),
		}},
	},

	// ----- the event log -----
	{
		ID: RuleEventSeq, Op: "append_event", Says: "append_event keeps the event (its type, its data, created now) and answers its sequence number: a positive number greater than every earlier one.",
		Source:   silent("append_event_conn", "the seed's append_event_conn, which numbers the event, is not shown; the events table keys it by seq INTEGER PRIMARY KEY"),
		Latitude: "Any increasing numbering: the first need not be 1 and the steps need not be 1 (a backend may number by tens, or from a clock). A number that goes back or repeats fails. The model learns each number from the answer (a lost answer leaves the event's number open, bounded by its neighbours, until a read shows it); workloads never present a number they did not read.",
		Bounds: []spec.Bound{counterBound("the event's number", "every event is numbered above the last: five in one millisecond, and one after the store is closed and opened again",
			silent("append_event_conn", "how the events table's seq INTEGER PRIMARY KEY is given is not shown"),
			"Any increasing numbering (the rule's latitude): the spec checks only that each number is above the last.")},
	},
	{
		ID: RuleEventsSince, Op: "events_since", Says: "events_since answers the events whose sequence number is strictly greater than the given one, in sequence order, each with its type, data and creation time.",
		Source:   silent("events_since_conn", "the seed's events_since_conn is not shown; its name and its seq argument are what the seed states"),
		Latitude: "None beyond the numbering (client.append_event.seq_increasing) and the precision of the creation time (client.time_precision).",
	},
	{
		ID: RuleEventsLimit, Op: "events_since", Says: "events_since with a limit from 1 to 100 answers at most that many events, and no fewer when there are that many; with a limit of 0, or above 100, it answers a prefix of the events after the given number.",
		Source:   silent("events_since_conn", "the seed hands the limit to events_since_conn, which it does not show; sql_limit, which reads 0 as 100 and caps at 500, is the client module's own and is not applied to events"),
		Latitude: "A limit of 0 may read as no rows, as 100 or as no limit; a limit above 100 may be capped at any number of 100 or more. The kit checks an exact count only for limits from 1 to 100.",
		Bounds: []spec.Bound{{
			Name: "exact", Value: "100", Of: "the limit asked, of 102 events after the number",
			Below: "99: exactly the first 99", At: "100: exactly the first 100", Above: "101: the first 100 or 101, as the latitude allows",
			Source:   silent("events_since_conn", "the seed hands the limit to events_since_conn, which it does not show; the kit's exact range ends at 100, sql_limit's default"),
			Latitude: "A limit above 100 may be capped at any number of 100 or more, so one above the bound takes the first 100 or 101 events: that, and that they are the first, is all the spec checks there; at the bound and below it the count is exact.",
		}},
	},
	{
		ID: RuleEventHead, Op: "event_head", Says: "event_head is the last event's sequence number, and 0 while the log is empty.",
		Source:   silent("event_head_conn", "the seed's event_head_conn is not shown"),
		Latitude: "The number is the backend's (client.append_event.seq_increasing); an empty log answers 0, which is why a sequence number is positive.",
	},

	// ----- caches -----
	{
		ID: RuleHeadPreview, Op: "put_out_head", Says: "put_out_head keeps head_preview(head), a function of the head alone: the same head always reads back as the same out-head.",
		Source:   silent("crate::server::head_preview", "put_out_head stores crate::server::head_preview(head), a helper the seed does not show"),
		Latitude: "The preview is the backend's: the whole head, a cut of it with or without a mark, any text. The model learns it from the first read of each head and holds the backend to it; the specs check only that it is a function of the head. The reference keeps the first 200 code points and adds \"…\" (client.HeadPreview), which is its reading, not the contract.",
	},
	{
		ID: "client.put_out_head.latest_wins", Op: "put_out_head", Says: "A put replaces the task's earlier out-head, and out_head answers nil for a task never put.",
		Source: quoted("ClientStore::put_out_head", "INSERT INTO out_head_cache(task_id,head) VALUES(?,?) ON CONFLICT(task_id) DO UPDATE SET head=excluded.head"),
	},
	{
		ID: "client.put_prose.latest_wins", Op: "put_prose", Says: "put_prose replaces the role's prose and spec hash, cached now; prose answers them, or nil for a role never put.",
		Source: quoted("ClientStore::put_prose", "INSERT INTO prose_cache(role,prose,spec_hash,cached_at) VALUES(?,?,?,?) ON CONFLICT(role) DO UPDATE SET prose=excluded.prose,spec_hash=excluded.spec_hash,cached_at=excluded.cached_at"),
	},
	{
		ID: "client.put_config.latest_wins", Op: "put_config", Says: "put_config replaces the key's value; config answers it, or nil for a key never put.",
		Source: quoted("ClientStore::put_config", "INSERT INTO config_cache(key,value) VALUES(?,?) ON CONFLICT(key) DO UPDATE SET value=excluded.value"),
	},

	// ----- sessions and bindings -----
	{
		ID: RuleSessionID, Op: "upsert_session", Says: "A tuple is filed under the session id its backend_ref names: the \"task_id\" member of backend_ref when backend_ref is a JSON object whose task_id is a string (the empty string too), else the task it was written for.",
		Source:   quoted("backend_parts", `let session_id = parsed .as_ref() .and_then(|v| v.get("task_id")) .and_then(Value::as_str) .unwrap_or(task_id) .to_string();`),
		Latitude: "A backend_ref that names task_id twice may count by either occurrence; the kit never presents one.",
	},
	{
		ID: "client.upsert_session.gate", Op: "upsert_session", Says: "upsert_session writes the tuple when the session has none yet, or when its (generation, seq) is strictly newer than the stored pair, compared lexicographically (a newer generation wins whatever its seq); an equal or older pair changes nothing and answers false.",
		Source: quoted("SessionLedger::upsert_session", "WHERE excluded.generation > sessions.generation OR (excluded.generation = sessions.generation AND excluded.seq > sessions.seq)"),
		Bounds: []spec.Bound{{
			Name: "pair", Value: "the stored (generation, seq)", Of: "the (generation, seq) a write presents",
			Below: "a seq one less: nothing changes, false", At: "the same pair: nothing changes, false", Above: "a seq one more: written, true",
			Source: quoted("SessionLedger::upsert_session", "excluded.seq > sessions.seq"),
		}},
	},
	{
		ID: "client.upsert_session.binds", Op: "upsert_session", Says: "A tuple written also opens the binding of its session to the task, closing the session's other open binding, in the same step; a refused write opens nothing.",
		Source: quoted("SessionLedger::upsert_session", "if changed == 1 { crate::server::open_binding_conn(&tx, &session_id, task_id, version.updated_at)?; }"),
	},
	{
		ID: "client.upsert_session.tuple_kept", Op: "upsert_session", Says: "A tuple written reads back as given: its pair, its state words, its JSON texts, its backend_ref and its mismatch count (its updated_at by client.unix_seconds).",
		Source: quoted("SessionLedger::upsert_session", "ON CONFLICT(session_id) DO UPDATE SET generation=excluded.generation,seq=excluded.seq,agent_state=excluded.agent_state,delivery_state=excluded.delivery_state,resource_state=excluded.resource_state,recovery_substate=excluded.recovery_substate,observed_json=excluded.observed_json"),
	},
	{
		ID: "client.bump_session_version.pair_only", Op: "bump_session_version", Says: "bump_session_version moves only the (generation, seq) of the task's session and its updated_at to now, under the same gate as upsert_session; the rest of the tuple stays; it answers whether it moved, false for a task with no session.",
		Source:   quoted("ClientStore::bump_session_version", "UPDATE sessions SET generation=?,seq=?,updated_at=? WHERE session_id={SESSION_ID_FOR_TASK} AND (? > generation OR (? = generation AND ? > seq))"),
		Latitude: "Which session is the task's is client.get_session.binding_choice; the updated_at reads back by client.unix_seconds (the seed writes it with rfc3339(Utc::now()) and reads it back as unix seconds).",
	},
	{
		ID: "client.get_session.through_binding", Op: "get_session", Says: "get_session answers the tuple of the task's session, with task_id the task asked about, or nil when the task has no binding or its session has no tuple; a session that served one delivery and then another still answers for the first.",
		Source: quoted("SessionLedger::get_session", "a session that /// served one delivery and then another still answers for the first, which /// is what a caller holding that delivery's tuple asks for."),
	},
	{
		ID: RuleBindingChoice, Op: "get_session", Says: "When a task has bindings to several sessions, the task's session is the one of a binding chosen by the backend's reading of SESSION_ID_FOR_TASK, the same reading every time, for get_session and bump_session_version alike.",
		Source:   silent("SESSION_ID_FOR_TASK", "the seed reads the task's session through SESSION_ID_FOR_TASK, a query of crate::server it does not show; session_tasks keeps bound_at (the tuple's updated_at on upsert, now on bind) and released_at"),
		Latitude: "Four readings pass: the most recently opened binding, or the binding with the latest bound_at, each either preferring open bindings to released ones or not. bound_at is kept to the second in the seed, so bindings whose bound_at falls in one second tie, and any of them may answer. The model keeps every reading the answers so far allow (a bump_session_version that moves the pair through one reading forks the state until a read tells them apart); the specs accept any reading.",
	},
	{
		ID: "client.bind_task.opens", Op: "bind_task", Says: "bind_task opens the pair's binding now and closes the session's other open binding, so a session has at most one open binding; it answers true when a binding opened (a released pair opens again), false for a pair already open (and then nothing changes). Other sessions' bindings to the task are not touched.",
		Source: quoted("ClientStore::bind_task", "Opening a pair also closes the session's other open binding, so the /// session is on one delivery at a time either way. The count is how many /// rows the insert moved — zero for a pair already open."),
	},
	{
		ID: RuleBindTwoStatements, Op: "bind_task", Says: "bind_task may take effect in two steps (the other binding closed, then the pair opened), and a concurrent read may see the session between them, with no open binding.",
		Source:   silent("ClientStore::bind_task", "bind_task hands open_binding_conn the connection, not a transaction, and open_binding_conn is not shown"),
		Latitude: "One step or two: the linearizability check lets the close take effect on its own anywhere inside the call.",
	},
	{
		ID: "client.release_binding.once", Op: "release_binding", Says: "release_binding releases the pair's binding when it is open and answers true; a released or missing binding changes nothing and answers false. A released binding still answers for its task in get_session.",
		Source: quoted("ClientStore::release_binding", "Only an open /// binding is released, so the first call is the one the row keeps and a /// second changes nothing; the count is how many rows moved."),
	},
	{
		ID: "client.active_sessions.claimed", Op: "active_sessions", Says: "active_sessions answers, ordered by session id, the sessions whose agent is booting, ready or idle and whose resource is not closed, and those whose resource is closed while their agent is ready or idle, reported suspended; never a working, exited (gone) or booting-and-closed session.",
		Source: quoted("ClientStore::active_sessions", `WHERE agent_state IN ('booting', 'ready', 'idle') \ AND (resource_state != 'closed' OR agent_state IN ('ready', 'idle')) \ ORDER BY session_id`),
	},
	{
		ID: "client.active_sessions.open_task", Op: "active_sessions", Says: "A claimed session's task_id is the task of its open binding, \"\" when it has none: a released binding is not claimed for.",
		Source:   quoted("ClientStore::release_binding", "a session that goes idle with /// no next delivery keeps answering `OPEN_BINDING_TASK` with a task that is /// over, and `hello` then claims it for work nobody owes."),
		Latitude: "OPEN_BINDING_TASK is not shown; a session has at most one open binding (client.bind_task.opens), so which one is not a choice. No open binding is answered \"\".",
	},

	// ----- tasks -----
	{
		ID: "client.open_task.new", Op: "open_task", Says: "open_task of a task with no record opens it pending, now, with the chain given (kind, parent, hop, attempt), and answers true.",
		Source: quoted("ClientStore::open_task", "INSERT INTO task(task_id,kind,parent_task,hop,attempt,task_state,opened_at,settled_at) VALUES(?,?,?,?,?,'pending',?,NULL)"),
	},
	{
		ID: RuleOpenTaskRefresh, Op: "open_task", Says: "open_task of a task that has a record refreshes the chain (kind, parent, hop) and takes the larger attempt, so the count never runs backwards; the state, the opening time, the settle time and the verdict stay; it answers true.",
		Source: quoted("ClientStore::open_task", "Answers true when /// the record was written, which covers both the fresh open and a chain /// refresh on a task that is already there."),
		Bounds: []spec.Bound{{
			Name: "attempt", Value: "the stored attempt", Of: "the attempt a re-open presents",
			Below: "the stored attempt stays", At: "the stored attempt stays", Above: "the presented attempt is taken",
			Source: quoted("ClientStore::open_task", "attempt=MAX(excluded.attempt,task.attempt)"),
		}},
	},
	{
		ID: RuleOpenTaskKinds, Op: "open_task", Says: "The kinds root and relay are accepted; another kind is accepted (kept as given) or refused with invalid_argument, the same way for the same word every time.",
		Source:   silent("ClientStore::open_task", "the seed names root and relay (\"`kind` is how the delivery reached this role — `root` or `relay`\") and binds kind as given, without a check"),
		Latitude: "Either, per word: the model learns from the first answer for a word whether the backend takes it; the specs accept either.",
	},
	{
		ID: "client.settle_task.first_wins", Op: "settle_task", Says: "settle_task records the task's verdict, settled now, and answers true; a task already settled keeps its record and the call answers false (a zombie session cannot rewrite the answer).",
		Source: quoted("ClientStore::settle_task", "ON CONFLICT(task_id) DO UPDATE SET task_state=excluded.task_state,settled_at=excluded.settled_at WHERE task.settled_at IS NULL"),
	},
	{
		ID: "client.settle_task.never_opened", Op: "settle_task", Says: "A task never opened gets its record from its verdict: no kind, no parent, hop and attempt 0, opened and settled now.",
		Source: quoted("ClientStore::settle_task", "INSERT INTO task(task_id,kind,parent_task,hop,attempt,task_state,opened_at,settled_at) VALUES(?,NULL,NULL,0,0,?,?,?)"),
	},
	{
		ID: RuleSettleVerdictWords, Op: "settle_task", Says: "The verdicts completed, failed and cancelled are accepted; another word (pending, an unknown word, the empty word) is accepted (kept as given) or refused with invalid_argument, the same way for the same word every time.",
		Source:   silent("TaskState", "the verdict is onlyne_proto's TaskState, a closed enum whose words (\"TaskState's own snake_case tag from onlyne-proto's lifecycle vocabulary\") the seed does not list"),
		Latitude: "The three words are the contract's wire vocabulary, which a backend maps onto its own; any other word, either, per word: the model learns from the first answer for a word whether the backend takes it; the specs accept either.",
	},
	{
		ID: "client.task.read", Op: "task", Says: "task answers the task's record, or nil when it was never opened nor settled.",
		Source: quoted("TaskRow", "`None` from [`ClientStore::task`] /// means this role never opened the task, not that it is in flight."),
	},
	{
		ID: "client.open_tasks.order", Op: "open_tasks", Says: "open_tasks answers the tasks not settled, oldest opening first, then in the order their records were made.",
		Source:   quoted("ClientStore::open_tasks", "WHERE settled_at IS NULL ORDER BY opened_at,rowid LIMIT ?"),
		Latitude: "Opening times order at the backend's precision (client.time_precision).",
	},
	{
		ID: RuleOpenTasksLimit, Op: "open_tasks", Says: "open_tasks takes at most limit tasks; a limit of 0 takes 100, and none takes more than 500.",
		Source: quoted("ClientStore::open_tasks", ".query_map(params![sql_limit(limit)], task_row)"),
		Bounds: sqlLimitBounds("open tasks"),
	},
	{
		ID: "client.task_is_known.binding_or_intent", Op: "task_is_known", Says: "task_is_known is true when the task has or had a binding (released ones count), or when an intent's envelope names it (client.envelope_task), in any state.",
		Source: quoted("SessionLedger::task_is_known", "The binding is the record of a delivery having become a session here, // which is exactly what this asks."),
	},
	{
		ID: RuleKnownTwoStatements, Op: "task_is_known", Says: "task_is_known reads the bindings and the intents in two statements: a false answer is two reads, each at its own moment inside the call.",
		Source:   quoted("SessionLedger::task_is_known", "if session_count > 0 { return Ok(true); } Ok(intent_stats(&conn, task_id)?.is_some())"),
		Latitude: "A backend may read both at once; the checkers let the two reads take effect at two points of the call, the bindings' first. One that reads them in one statement or transaction may declare it (capability atomic_reads) and is held to one moment.",
	},
	{
		ID: "client.task_attempt.max", Op: "task_attempt", Says: "task_attempt is the highest attempt among the intents whose envelope names the task (client.envelope_task), in any state, and 0 when none does.",
		Source: quoted("SessionLedger::task_attempt", "Ok(intent_stats(&conn, task_id)?.unwrap_or(0))"),
	},

	// ----- faults -----
	{
		ID: RuleFaultID, Op: "insert_fault", Says: "insert_fault keeps the fault (the id it was handed ignored) and answers its id: a number greater than every earlier one.",
		Source:   quoted("SessionLedger::insert_fault", "Ok(conn.last_insert_rowid())"),
		Latitude: "The seed's id is id INTEGER PRIMARY KEY AUTOINCREMENT, which only grows; its first value and its steps are the backend's. The model learns each id from the answer; a lost answer leaves it open until list_faults shows it.",
		Bounds: []spec.Bound{counterBound("the fault's id", "every fault's id is above the last: three faults of one time, of two tasks",
			quoted("CLIENT_DDL", "id INTEGER PRIMARY KEY AUTOINCREMENT,"),
			"Its first value and its steps are the backend's: the spec checks only that each id is above the last.")},
	},
	{
		ID: "client.list_faults.order", Op: "list_faults", Says: "list_faults answers the task's faults in id order, each as it was inserted, with its id (its created_at by client.unix_seconds).",
		Source: quoted("SessionLedger::list_faults", "FROM faults WHERE task_id=? ORDER BY id"),
	},
}
