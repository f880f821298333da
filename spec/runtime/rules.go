package runtime

import "github.com/storecheck/storecheck/spec"

// Seed is the seed file the runtime contract is taken from: the lash sqlite
// store's persistence.rs (RuntimePersistence for Store).
const Seed = "000_5151fc9937bf8be5.txt"

func quoted(at, quote string) spec.Source   { return spec.Quoted(Seed, at, quote) }
func silent(at, silence string) spec.Source { return spec.Silent(Seed, at, silence) }

// stepBound is the bound of a count the store moves one up: no spec can
// present it, so a spec checks each answer is the last one up.
func stepBound(of, above string, src spec.Source) spec.Bound {
	return spec.Bound{
		Name: "step", Value: "the last count", Of: of, Above: above,
		Missing: map[spec.Side]string{
			spec.Below: "the store moves the count, so no spec can present one below the last",
			spec.At:    "the store moves the count, so no spec can present the last again",
		},
		Source: src,
	}
}

// Rules is every rule the kit checks of the runtime store, with the seed
// line it comes from or, where the seed is silent, the latitude a backend
// has. The specs of spec/suite name them; the model's branches name the
// ones that decide an answer.
var Rules = []spec.Rule{
	// The whole store.
	{ID: "runtime.expiry", Says: "A session lease or a queued work claim is live while now < its expiry: one whose expiry equals now has expired. now is the store's injected clock, in Unix milliseconds.",
		Source: quoted("ensure_session_execution_lease_conn", `&& current.fencing_token == fence.fencing_token
        && current.expires_at_ms > now`),
		Bounds: []spec.Bound{{Name: "expiry", Value: "a lease's or a claim's expiry", Of: "now",
			Below: "live (a millisecond before)", At: "expired (an expiry equal to now)", Above: "expired",
			Source: quoted("ensure_session_execution_lease_conn", `&& current.expires_at_ms > now`)}}},
	{ID: "runtime.failure_leaves_no_trace", Says: "An operation that fails changes nothing: its checks and writes are one transaction, rolled back on an error (renew_queued_work_claim, which judges after its write commits, aside).",
		Source: quoted("commit_runtime_state", `// Roll back on a `+"`StoreError`"+` so a failure after the first
                // write (e.g. a head-revision conflict surfaced mid-commit, or a
                // backend write error) does not leave the partial transaction
                // committed`)},
	{ID: "runtime.write_lock", Says: "Read-then-write operations hold the database's write lock from their first read to their commit, so handles on one file (processes) serialize: one never wins a lease or a claim another holds, and each sees the others' commits.",
		Source: quoted("module comment", "(`BEGIN IMMEDIATE`, commit on `Ok`, rollback on `Err`) — this is the\n//!   cross-process write-lock guard.")},
	{ID: "runtime.opaque_values", Says: "Values the kit does not interpret (node data, config, agent frames, session meta, queued payloads) read back as the JSON value written; checkpoint and attachment bytes read back byte for byte.",
		Source:   quoted("commit_runtime_state", `let node_json = encode_json(node);`),
		Latitude: "The seed stores JSON through serde, which may respace and reorder it: the kit compares JSON values, never their text."},
	{ID: "runtime.minted_ids", Says: "Batch ids, claim ids, claim tokens and checkpoint refs are the store's: a caller learns each from the answer that minted it and presents it back, and the store accepts it back. The kit compares them up to a consistent renaming (one id per thing, distinct things distinct), never by format.",
		Source:   silent("enqueue_queued_work, claim_ready_queued_work, commit_runtime_state", "derive_batch_id, QueuedWorkClaimLease::derive and put_checkpoint_conn are not shown"),
		Latitude: "Any non-empty text; the workloads present only ids they were answered, and the model holds each id as a hole bound to the backend's first answer of it. The lease token and item ids, whose formats the seed states, are checked by format."},
	{ID: "runtime.invalid_argument_at_any_point", Says: "An unknown graph delta kind, delivery policy, slot policy or claim boundary fails invalid_argument, changing nothing.",
		Source:   silent("commit_runtime_state, enqueue_queued_work, claim_ready_queued_work", "GraphCommitDelta, the delivery and slot policies and QueuedWorkClaimBoundary are Rust enums: an unknown value cannot reach the store, so the seed never says when a backend notices one"),
		Latitude: "A backend may notice the unknown value at any point of the operation's order of checks: invalid_argument is accepted instead of, or before, any later check; the answer of every check before that point is accepted too (a lease refused, a max_batches of 0 answered none, a source key already queued answered its batch, a turn replay answered its first result, nothing claimable answered none)."},

	{ID: "runtime.survives_power_loss", Says: "Every write the store acknowledged survives a power cut: after the machine loses everything the backend never synced (fsync, fdatasync), the store opened again on its file finds every commit, lease, batch, meta and attachment it acknowledged. An operation in flight at the cut may or may not have taken effect, and none is half applied. " + spec.PowerLossModel,
		Source: quoted("durability_tier", `fn durability_tier(&self) -> DurabilityTier {
        DurabilityTier::Durable`),
		Latitude: "The seed's connection setup (conn.rs) is not shown, so it does not say whether a commit is synced before it is acknowledged: the kit reads Durable as SQLite's default, synchronous=FULL, under which it is. A backend may declare hello's durability \"process_crash\" (its writes survive a process crash, not a power cut): it is then held to that, the simulator cuts no power for this store, the power-loss spec is skipped, and the report says power loss was not explored. " + spec.PowerLossAfterFailedSync},

	// durability_tier
	{ID: "runtime.durability_tier.durable", Op: "durability_tier", Says: "A store on a file is durable: closed and opened again on its path, it finds every acknowledged commit, lease, batch and meta. (The reference answers ephemeral for a store it opens in memory; the kit does not judge that answer.)",
		Source: quoted("durability_tier", `fn durability_tier(&self) -> DurabilityTier {
        DurabilityTier::Durable`)},

	// load_session
	{ID: "runtime.load_session.none_before_first_commit", Op: "load_session", Says: "load_session answers none before the first commit, for either scope.",
		Source: quoted("load_session", `let Some(meta) = try_load_session_head_meta_from_conn(conn)? else {
                        return Ok(None);
                    };`)},
	{ID: "runtime.load_session.head", Op: "load_session", Says: "load_session answers the head the last commit wrote: the bound session, the head revision, config, agent frames, current frame, and the head's checkpoint ref and bytes.",
		Source: quoted("load_session", `session_id: meta.session_id,
                        head_revision: meta.head_revision,
                        config: meta.config,
                        agent_frames: meta.agent_frames,
                        current_agent_frame_id: meta.current_agent_frame_id,
                        graph,
                        checkpoint_ref: meta.checkpoint_ref,
                        checkpoint,`)},
	{ID: "runtime.load_session.leaf", Op: "load_session", Says: "The graph's leaf is the leaf the active-path scope names, else the head's.",
		Source: quoted("load_session", `leaf_node_id.clone().or_else(|| meta.leaf_node_id.clone())`)},
	{ID: "runtime.load_session.full_graph", Op: "load_session", Says: "The full graph holds every stored node that is not tombstoned, each as committed.",
		Source:   silent("load_session", "load_session_graph_from_conn is not shown; the kit reads it as load_node and the head's node count read the nodes (tombstoned = 0)"),
		Latitude: "The order of the nodes is the backend's: the kit compares them as a set."},
	{ID: "runtime.load_session.active_path", Op: "load_session", Says: "The active path holds the leaf and its ancestors by parent link; a node that is not stored ends the walk, so an unknown leaf gives no nodes.",
		Source:   silent("load_session", "load_active_path_session_graph_from_conn is not shown"),
		Latitude: "The order of the nodes is the backend's (compared as a set). At a tombstoned node the walk either ends (the reference's reading) or passes over it to its parent: both are accepted."},
	{ID: "runtime.load_session.token_ledger", Op: "load_session", Says: "The token ledger merges the usage deltas of every commit: one entry per (source, model), each count the sum of the deltas'.",
		Source:   silent("load_session", "merge_token_ledger_entries and load_usage_deltas_conn are not shown"),
		Latitude: "The order of the entries is the backend's: the kit compares them as a set."},
	{ID: "runtime.load_session.statements", Op: "load_session", Says: "load_session reads in statements of its own, outside any transaction, in the seed's order: the head, the graph (from the head's leaf, or the scope's), the head's checkpoint by its ref, the usage deltas. Each may see the store at its own moment of the call, at or after the one before it: a head of one commit with the token ledger of a later one, or the head's ref with no checkpoint bytes when a later commit moved the head and a collection took them.",
		Source: quoted("load_session", `self.conn
            .call(move |conn| {
                let outcome: Result<Option<PersistedSessionRead>, StoreError> = (|| {
                    let Some(meta) = try_load_session_head_meta_from_conn(conn)? else {`),
		Latitude: "The module comment says it of every pure read (\"Pure reads run through `self.conn.call(move |conn| { ... })`\"), and conn.call opens no transaction, unlike conn.write's BEGIN IMMEDIATE: across processes, a commit may land between two of the statements. A backend may read them in one transaction (the reference and the Python example do) and declare it (capability atomic_reads): the checkers then hold the whole answer to one moment. Without it they let each statement take effect at its own moment of the call, in the seed's order."},

	// load_node
	{ID: "runtime.load_node.live_only", Op: "load_node", Says: "load_node answers the node as committed, or none when it is unknown or tombstoned.",
		Source: quoted("load_node", `"SELECT node_json FROM graph_nodes WHERE node_id = ?1 AND tombstoned = 0",`)},

	// commit_runtime_state
	{ID: "runtime.commit_runtime_state.binding", Op: "commit_runtime_state", Says: "The store is bound to the session of its first commit: a commit of another session fails session_binding_mismatch, the first check.",
		Source: quoted("commit_runtime_state", `&& bound_session_id != commit.session_id
                    {
                        return Err(StoreError::SessionBindingMismatch {`)},
	{ID: "runtime.commit_runtime_state.turn_session", Op: "commit_runtime_state", Says: "A turn commit of another session than the commit's fails runtime_turn_commit_conflict.",
		Source: quoted("commit_runtime_state", `if completed.session_id != commit.session_id {
                            return Err(StoreError::RuntimeTurnCommitConflict {`)},
	{ID: "runtime.commit_runtime_state.turn_replay", Op: "commit_runtime_state", Says: "A turn already committed with the same hash answers its first result and writes nothing, no other rule checked, except that the lease is still released when the commit asks.",
		Source: quoted("commit_runtime_state", `if turn_commit_hash == completed.turn_commit_hash {`+"\n"+`let result: RuntimeCommitResult =
                                    serde_json::from_str(&result_json).map_err(|err| {
                                        StoreError::Backend(format!(
                                            "failed to decode runtime turn commit result: {err}"
                                        ))
                                    })?;
                                if let Some(completion) =
                                    commit.release_session_execution_lease.as_ref()
                                {
                                    release_session_execution_lease_conn(tx, completion)?;
                                }
                                return Ok(result);`)},
	{ID: "runtime.commit_runtime_state.turn_other_hash", Op: "commit_runtime_state", Says: "A turn already committed with another hash fails runtime_turn_commit_conflict.",
		Source: quoted("commit_runtime_state", `return Ok(result);
                            }
                            return Err(StoreError::RuntimeTurnCommitConflict {`)},
	{ID: "runtime.commit_runtime_state.lease_required", Op: "commit_runtime_state", Says: "A commit that presents no lease fails session_execution_lease_expired.",
		Source: quoted("commit_runtime_state", `let Some(session_execution_lease) = commit.session_execution_lease.as_ref()
                    else {
                        return Err(StoreError::SessionExecutionLeaseExpired {`)},
	{ID: "runtime.commit_runtime_state.lease_live", Op: "commit_runtime_state", Says: "The lease a commit presents must be the session's live lease (its session, owner, token and fencing token): any other fails session_execution_lease_expired.",
		Source: quoted("ensure_session_execution_lease_conn", `if current.owner_id.as_deref() == Some(fence.owner_id.as_str())
        && current.lease_token.as_deref() == Some(fence.lease_token.as_str())
        && current.fencing_token == fence.fencing_token
        && current.expires_at_ms > now`)},
	{ID: "runtime.commit_runtime_state.expected_revision", Op: "commit_runtime_state", Says: "An expected head revision, when set, must be the stored one (0 before the first commit): any other fails head_revision_conflict.",
		Source: quoted("commit_runtime_state", `let actual_revision = existing.as_ref().map_or(0, |meta| meta.head_revision);
                    if commit.expected_head_revision.is_some()
                        && commit.expected_head_revision != Some(actual_revision)`),
		Bounds: []spec.Bound{{Name: "stored", Value: "the stored head revision (0 before the first commit)", Of: "the expected head revision",
			Below: "head_revision_conflict, nothing written", At: "committed", Above: "head_revision_conflict, nothing written",
			Source: quoted("commit_runtime_state", `&& commit.expected_head_revision != Some(actual_revision)`)}}},
	{ID: "runtime.commit_runtime_state.check_order", Op: "commit_runtime_state", Says: "A commit that breaks several rules fails with the first in the seed's order: binding, turn, lease, expected revision, completed claims, graph.",
		Source: quoted("commit_runtime_state", `ensure_session_execution_lease_conn(
                        tx,
                        &commit.session_id,
                        session_execution_lease,
                    )?;
                    let actual_revision`),
		Latitude: "invalid_argument may come at any point of this order (runtime.invalid_argument_at_any_point)."},
	{ID: "runtime.commit_runtime_state.completed_claim_session", Op: "commit_runtime_state", Says: "A completed claim of another session than the commit's fails queued_work_claim_expired.",
		Source: quoted("commit_runtime_state", `if completed.session_id != commit.session_id {
                            return Err(StoreError::QueuedWorkClaimExpired {`)},
	{ID: "runtime.commit_runtime_state.completed_claim_held", Op: "commit_runtime_state", Says: "Every batch a completed claim names must be held by that claim's id and token: a batch that is gone, unclaimed or claimed again fails queued_work_claim_expired.",
		Source:   silent("commit_runtime_state", "ensure_queued_work_completion_conn is not shown"),
		Latitude: "Whether a claim that has expired but still holds its batches (nobody claimed them again) may be completed: both completing it and queued_work_claim_expired are accepted."},
	{ID: "runtime.commit_runtime_state.revision", Op: "commit_runtime_state", Says: "A commit moves the head revision up by one and answers it.",
		Source: quoted("commit_runtime_state", `let next_revision = actual_revision + 1;`),
		Bounds: []spec.Bound{stepBound("the revision a commit answers", "the stored revision + 1, commit after commit",
			quoted("commit_runtime_state", `let next_revision = actual_revision + 1;`))}},
	{ID: "runtime.commit_runtime_state.checkpoint", Op: "commit_runtime_state", Says: "A commit stores its checkpoint and answers its ref; the head names it, and load_session answers that ref and the bytes.",
		Source:   silent("commit_runtime_state", "put_checkpoint_conn (the blob layout, the ref and the manifest) is not shown"),
		Latitude: "The ref is the backend's: a content address (equal bytes, one ref) and one ref per stored checkpoint are both accepted. The kit requires only that a ref names one content: a new ref is not that of a stored checkpoint with other bytes."},
	{ID: "runtime.commit_runtime_state.head_fields", Op: "commit_runtime_state", Says: "A commit replaces the head's config, agent frames and current frame with its own.",
		Source: quoted("commit_runtime_state", `config: commit.config.clone(),
                        agent_frames: commit.agent_frames.clone(),
                        current_agent_frame_id: commit.current_agent_frame_id.clone(),`)},
	{ID: "runtime.commit_runtime_state.usage", Op: "commit_runtime_state", Says: "A commit appends its usage deltas (see runtime.load_session.token_ledger).",
		Source: quoted("commit_runtime_state", `"INSERT INTO usage_deltas (
                                    source, model, input_tokens, output_tokens, cached_input_tokens, reasoning_tokens
                                ) VALUES (?1, ?2, ?3, ?4, ?5, ?6)",`)},
	{ID: "runtime.commit_runtime_state.graph_unchanged", Op: "commit_runtime_state", Says: "An unchanged graph delta keeps every node and sets the head's leaf.",
		Source: quoted("commit_runtime_state", `GraphCommitDelta::Unchanged { leaf_node_id } => leaf_node_id.clone(),`)},
	{ID: "runtime.commit_runtime_state.graph_append", Op: "commit_runtime_state", Says: "An append adds its nodes to the stored ones and sets the head's leaf.",
		Source: quoted("commit_runtime_state", `GraphCommitDelta::Append {
                            nodes,
                            leaf_node_id,
                        } => {
                            for node in nodes {`)},
	{ID: "runtime.commit_runtime_state.graph_replace_full", Op: "commit_runtime_state", Says: "A full replacement drops every stored node, tombstoned ones included, and stores its own nodes and leaf.",
		Source: quoted("commit_runtime_state", `tx.execute("DELETE FROM graph_nodes", [])`)},
	{ID: "runtime.commit_runtime_state.graph_repeated_node", Op: "commit_runtime_state", Says: "A graph delta that inserts a node id the store holds (tombstoned or not) or repeats one fails, leaving no trace: an append never overwrites a node.",
		Source: quoted("commit_runtime_state", `tx.execute(
                                    "INSERT INTO graph_nodes (node_id, node_json) VALUES (?1, ?2)",
                                    params![node.node_id, node_json],
                                )
                                .map_err(sqlite_error)?;`),
		Latitude: "The seed's INSERT fails on the node id's key as a store error (sqlite_error), which the kit's kinds name io, where the kit names graph_node_conflict: both are accepted."},
	{ID: "runtime.commit_runtime_state.completed_claims_deleted", Op: "commit_runtime_state", Says: "A commit deletes the batches its completed claims name that the claim (id and token) holds, and only those.",
		Source: quoted("commit_runtime_state", `"DELETE FROM queued_work_batches
                                 WHERE session_id = ?1
                                   AND batch_id = ?2
                                   AND claim_id = ?3
                                   AND claim_token = ?4",`)},
	{ID: "runtime.commit_runtime_state.attachments", Op: "commit_runtime_state", Says: "A commit marks the named attachments of its session committed at now; one committed before keeps its first time; another session's or an unknown id is left alone.",
		Source: quoted("commit_runtime_state", `SET committed_at_ms = COALESCE(committed_at_ms, ?1)
                                 WHERE attachment_id = ?2 AND session_id = ?3`)},
	{ID: "runtime.commit_runtime_state.release", Op: "commit_runtime_state", Says: "A commit that asks releases the lease it names, with the commit.",
		Source: quoted("commit_runtime_state", `if let Some(completion) = commit.release_session_execution_lease.as_ref() {
                        release_session_execution_lease_conn(tx, completion)?;
                    }
                    Ok(result)`)},

	// try_claim_session_execution_lease
	{ID: "runtime.try_claim_session_execution_lease.grant", Op: "try_claim_session_execution_lease", Says: "With no live lease (none, released, or expired) the owner is granted a new one: fencing token the previous one's + 1 (1 for the first), claimed at now, expiring at now + ttl.",
		Source: quoted("try_claim_session_execution_lease", `let fencing_token = current
                        .as_ref()
                        .map_or(0, |lease| lease.fencing_token)
                        .saturating_add(1);`),
		Bounds: []spec.Bound{stepBound("a new lease's fencing token", "the last + 1 (1 for the first), after a release and after an expiry",
			quoted("try_claim_session_execution_lease", `.map_or(0, |lease| lease.fencing_token)
                        .saturating_add(1);`))}},
	{ID: "runtime.try_claim_session_execution_lease.token_format", Op: "try_claim_session_execution_lease", Says: "A new lease's token is <session>:<owner>:<now>:<fencing token> (LeaseToken).",
		Source: quoted("try_claim_session_execution_lease", `let lease_token = format!("{session_id}:{owner_id}:{now}:{fencing_token}");`)},
	{ID: "runtime.try_claim_session_execution_lease.extend_own", Op: "try_claim_session_execution_lease", Says: "A live lease of the same owner is extended to now + ttl, keeping its token, fencing token and claim time.",
		Source: quoted("try_claim_session_execution_lease", `if current.owner_id.as_deref() == Some(owner_id.as_str()) {
                            let expires_at = now.saturating_add(lease_ttl_ms);`)},
	{ID: "runtime.try_claim_session_execution_lease.other_owner", Op: "try_claim_session_execution_lease", Says: "A live lease of another owner answers none, and nothing changes.",
		Source: quoted("try_claim_session_execution_lease", `                            }));
                        }
                        return Ok(None);`)},
	{ID: "runtime.try_claim_session_execution_lease.fence_survives_release", Op: "try_claim_session_execution_lease", Says: "A release (or an expiry) keeps the session's fencing token count: the next grant takes the next one.",
		Source: quoted("release_session_execution_lease_conn", `SET lease_owner_id = NULL,
             lease_token = NULL,
             lease_claimed_at_ms = 0,
             lease_expires_at_ms = 0`)},
	{ID: "runtime.try_claim_session_execution_lease.per_session", Op: "try_claim_session_execution_lease", Says: "Each session has a lease of its own.",
		Source: quoted("load_session_execution_lease_row_conn", `FROM session_execution_leases
             WHERE session_id = ?1`)},

	// renew_session_execution_lease
	{ID: "runtime.renew_session_execution_lease.live_match", Op: "renew_session_execution_lease", Says: "Renewal needs the session's lease with the fence's owner, token and fencing token, still live: else session_execution_lease_expired, changing nothing.",
		Source: quoted("renew_session_execution_lease", `|| current.fencing_token != fence.fencing_token
                        || current.expires_at_ms <= now`)},
	{ID: "runtime.renew_session_execution_lease.extends", Op: "renew_session_execution_lease", Says: "Renewal extends the lease to now + ttl, keeping its token, fencing token and claim time.",
		Source: quoted("renew_session_execution_lease", `claimed_at_epoch_ms: current.claimed_at_ms,
                        expires_at_epoch_ms: expires_at,`)},

	// release_session_execution_lease
	{ID: "runtime.release_session_execution_lease.match", Op: "release_session_execution_lease", Says: "Release clears the lease only when its owner, token and fencing token match; anything else changes nothing and is no error.",
		Source: quoted("release_session_execution_lease_conn", `WHERE session_id = ?1
           AND lease_owner_id = ?2
           AND lease_token = ?3
           AND lease_fencing_token = ?4",`)},

	// enqueue_queued_work
	{ID: "runtime.enqueue_queued_work.batch", Op: "enqueue_queued_work", Says: "An enqueue queues a batch at the end of the session's queue, enqueued at now, with the draft's source key, policies, merge key, available time, and its payloads as items in order.",
		Source: quoted("enqueue_queued_work", `"INSERT INTO queued_work_batches (
                            batch_id, session_id, source_key, delivery_policy, slot_policy,
                            merge_key_json, available_at_ms, enqueued_at_ms
                         )`)},
	{ID: "runtime.enqueue_queued_work.source_key", Op: "enqueue_queued_work", Says: "A draft whose (session, source key) is already queued answers the queued batch and adds nothing; another session's same key is another batch.",
		Source: quoted("enqueue_queued_work", `WHERE session_id = ?1 AND source_key = ?2",`)},
	{ID: "runtime.enqueue_queued_work.batch_id", Op: "enqueue_queued_work", Says: "A new batch's id is not the id of any batch the store holds.",
		Source:   silent("enqueue_queued_work", "derive_batch_id(&batch.session_id, batch.source_key.as_deref(), now, Some(nonce)) is not shown"),
		Latitude: "Any text (runtime.minted_ids). Whether the id of a batch that is gone (cancelled, completed) may come again is not judged."},
	{ID: "runtime.enqueue_queued_work.item_ids", Op: "enqueue_queued_work", Says: "The index-th item's id is <batch id>:item:<index>, for the batch id the store answered (ItemID).",
		Source: quoted("enqueue_queued_work", `let item_id = format!("{batch_id}:item:{index}");`)},
	{ID: "runtime.enqueue_queued_work.initial_claim_fence", Op: "enqueue_queued_work", Says: "A new batch has the store's initial claim fencing token, the same for every batch; each claim of a batch moves it up by one.",
		Source:   silent("enqueue_queued_work", "the INSERT does not set claim_fencing_token: its value is the DDL's default, which is not shown"),
		Latitude: "The value: the kit takes the first one a backend answers and holds every batch to it (the reference's is 0)."},

	// claim_ready_queued_work
	{ID: "runtime.claim_ready_queued_work.max_zero", Op: "claim_ready_queued_work", Says: "max_batches 0 answers none, nothing checked.",
		Source: quoted("claim_ready_queued_work", `if max_batches == 0 {
            return Ok(None);
        }`),
		Bounds: []spec.Bound{{Name: "zero", Value: "0", Of: "max_batches",
			At: "none, and nothing checked (not even the lease)", Above: "1: the first claimable batch, under the live lease",
			Missing: map[spec.Side]string{spec.Below: "max_batches is a usize in the seed: no count is below 0, and the kit asks none"},
			Source: quoted("claim_ready_queued_work", `if max_batches == 0 {
            return Ok(None);
        }`)}}},
	{ID: "runtime.claim_ready_queued_work.lease_live", Op: "claim_ready_queued_work", Says: "The session lease fence must be the session's live lease: else session_execution_lease_expired, claiming nothing.",
		Source: quoted("claim_ready_queued_work", `ensure_session_execution_lease_conn(
                        tx,
                        &session_id,
                        &session_execution_lease,
                    )?;`)},
	{ID: "runtime.claim_ready_queued_work.candidates", Op: "claim_ready_queued_work", Says: "The candidates are the session's batches available by now (available_at <= now), unclaimed or whose claim has expired, in enqueue order.",
		Source: quoted("claim_ready_queued_work", `WHERE session_id = ?1
                                   AND available_at_ms <= ?2
                                   AND (claim_token IS NULL OR claim_expires_at_ms <= ?2)
                                 ORDER BY enqueue_seq ASC`),
		Bounds: []spec.Bound{{Name: "available_at", Value: "a batch's available_at", Of: "now",
			Below: "not claimed (a millisecond before)", At: "claimed", Above: "claimed",
			Source: quoted("claim_ready_queued_work", `AND available_at_ms <= ?2`)}}},
	{ID: "runtime.claim_ready_queued_work.prefix", Op: "claim_ready_queued_work", Says: "A claim takes a prefix of the candidates, at most max_batches; an empty prefix answers none.",
		Source: quoted("claim_ready_queued_work", `if selected_len == 0 {
                        return Ok(TxOutcome::Commit(None));
                    }
                    let mut selected = candidate_rows;
                    selected.truncate(selected_len);`),
		Bounds: []spec.Bound{{Name: "max_batches", Value: "max_batches", Of: "the claimable batches (mergeable, of one merge key and one delivery policy)",
			Below: "one fewer claimable: all of them", At: "max_batches claimable: all of them", Above: "one more claimable: the first max_batches",
			Source:   silent("claim_ready_queued_work", "select_claim_prefix(&candidates, boundary, max_batches) and claim_scan_limit(max_batches), which bound the claim, are not shown; the argument's name is what the seed states"),
			Latitude: "The kit reads max_batches as the cap its name says. How long a prefix below the cap is, is prefix_reading's latitude; of batches every reading joins, as here, the count is exact."}}},
	{ID: "runtime.claim_ready_queued_work.prefix_reading", Op: "claim_ready_queued_work", Says: "How long the prefix is: an exclusive first batch is claimed alone; a batch not deliverable at the boundary (next_turn at a step) ends the prefix; later batches join a mergeable first one while they are mergeable too.",
		Source:   silent("claim_ready_queued_work", "select_claim_prefix and claim_scan_limit are not shown"),
		Latitude: "The merge key: a later batch joins when its key is the first one's (the empty key a key like any other, the reference's reading), whatever its key, or as the first but never for the empty key: all three readings are accepted (SelectClaimPrefixAs)."},
	{ID: "runtime.claim_ready_queued_work.all_or_nothing", Op: "claim_ready_queued_work", Says: "A claim owns every batch it answers: a candidate it cannot take ends the claim with none, never a claim of some of them.",
		Source: quoted("claim_ready_queued_work", `// rows we already claimed in this transaction so we
                            // never return a half-owned claim.
                            return Ok(TxOutcome::Rollback(None));`)},
	{ID: "runtime.claim_ready_queued_work.batch_fence", Op: "claim_ready_queued_work", Says: "Each claimed batch's stored claim fencing token goes up by one: list_queued_work shows it so.",
		Source: quoted("claim_ready_queued_work", `claim_fencing_token = claim_fencing_token + 1,`),
		Bounds: []spec.Bound{stepBound("a batch's claim fencing token after a claim of it", "one up, claim after claim (a claim after another's expiry too)",
			quoted("claim_ready_queued_work", `claim_fencing_token = claim_fencing_token + 1,`))}},
	{ID: "runtime.claim_ready_queued_work.answered_batches", Op: "claim_ready_queued_work", Says: "The claim answers its batches with their claim fencing tokens after the claim's increment, or as the candidate rows were read before it.",
		Source:   silent("claim_ready_queued_work", "the batches are built with queued_work_batch_from_conn(tx, row) from the rows read before the UPDATE; whether that helper, which is not shown, reads the row again is not said"),
		Latitude: "Either count is accepted in the answer, the same for every batch of the claim; the stored count is one up either way (batch_fence)."},
	{ID: "runtime.claim_ready_queued_work.claim_lease", Op: "claim_ready_queued_work", Says: "A claim is the session's, the owner's, claimed at now and expiring at now + ttl; its (claim id, token) is not a live claim's.",
		Source:   silent("claim_ready_queued_work", "QueuedWorkClaimLease::derive(&candidates[0], &session_id, &owner_id, now, lease_ttl_ms) is not shown"),
		Latitude: "The claim id and token are any text (runtime.minted_ids)."},
	{ID: "runtime.claim_ready_queued_work.claim_fence", Op: "claim_ready_queued_work", Says: "The claim's fencing token is its first batch's claim fencing token.",
		Source:   silent("claim_ready_queued_work", "QueuedWorkClaimLease::derive(&candidates[0], …) reads the first candidate as it was before the claim's UPDATE; what it makes of its claim_fencing_token is not shown"),
		Latitude: "The token before the batch's increment or after it (the reference's): both are accepted."},

	// renew_queued_work_claim
	{ID: "runtime.renew_queued_work_claim.no_expiry_check", Op: "renew_queued_work_claim", Says: "Renewal sets the expiry of every batch the claim's id and token hold to now + ttl, whether the claim is live or has expired: a claim that expired but still holds its batches (nobody claimed them again) is live again. The write commits before the answer is judged, so it stays even when renewal answers queued_work_claim_expired.",
		Source: quoted("renew_queued_work_claim", `.write(move |tx| {
                tx.execute(
                    "UPDATE queued_work_batches
                     SET claim_expires_at_ms = ?4
                     WHERE session_id = ?1 AND claim_id = ?2 AND claim_token = ?3",`)},
	{ID: "runtime.renew_queued_work_claim.changed", Op: "renew_queued_work_claim", Says: "Renewal that changed no batch fails queued_work_claim_expired; one that changed every batch of the claim answers the claim with its expiry at now + ttl.",
		Source:   silent("renew_queued_work_claim", "renewed_claim(claim, changed, expires_at) is not shown"),
		Latitude: "When some but not all of the claim's batches changed (or more rows than it names), renewed_claim may answer the claim or queued_work_claim_expired: both are accepted, and either way the write stays."},

	// abandon_queued_work_claim
	{ID: "runtime.abandon_queued_work_claim.frees", Op: "abandon_queued_work_claim", Says: "Abandoning frees every batch the claim's id and token hold for the next claimer; anything else changes nothing and is no error.",
		Source: quoted("abandon_queued_work_claim", `SET claim_id = NULL,
                         claim_owner_id = NULL,
                         claim_token = NULL,
                         claim_claimed_at_ms = 0,
                         claim_expires_at_ms = 0
                     WHERE session_id = ?1 AND claim_id = ?2 AND claim_token = ?3",`)},

	// cancel_queued_work_batch
	{ID: "runtime.cancel_queued_work_batch.free_only", Op: "cancel_queued_work_batch", Says: "Cancel removes the session's batch and answers it only when it is unclaimed or its claim has expired; else, or for an unknown batch, none, and nothing changes.",
		Source: quoted("cancel_queued_work_batch", `AND (claim_token IS NULL OR claim_expires_at_ms <= ?3)",
                            params![session_id, batch_id, now],
                            queued_batch_row_from_sql,
                        )
                        .optional()
                        .map_err(sqlite_error)?;
                    let Some(row) = row else {
                        return Ok(None);
                    };`)},

	// list_queued_work
	{ID: "runtime.list_queued_work.all", Op: "list_queued_work", Says: "list_queued_work answers every batch of the session, claimed or delayed, in enqueue order, and no other session's.",
		Source: quoted("list_queued_work", `WHERE session_id = ?1
                                 ORDER BY enqueue_seq ASC",`)},
	{ID: "runtime.list_queued_work.statements", Op: "list_queued_work", Says: "list_queued_work and list_pending_queued_work read the batch rows in one statement and then each row's items, outside any transaction: a batch a commit completed or a cancel removed between the two may answer with no items. Every other batch answers as its row and items were at the rows' moment (a batch's items never change while it is stored).",
		Source: quoted("list_queued_work", `rows.into_iter()
                        .map(|row| queued_work_batch_from_conn(conn, row))
                        .collect()`),
		Latitude: "queued_work_batch_from_conn is not shown, but it takes the connection and a row already read, after the rows' statement, in a conn.call that opens no transaction; the kit reads it as a statement per row, and a batch gone by then as one with no items. A backend may read the list in one transaction and declare it (capability atomic_reads): every batch then answers its items. Without it, the checkers accept a batch with no items when it was gone, or had none, at a moment after the rows'."},

	// list_pending_queued_work
	{ID: "runtime.list_pending_queued_work.free", Op: "list_pending_queued_work", Says: "list_pending_queued_work answers the session's batches that are unclaimed or whose claim has expired, delayed ones included, in enqueue order.",
		Source: quoted("list_pending_queued_work", `WHERE session_id = ?1
                                   AND (claim_token IS NULL OR claim_expires_at_ms <= ?2)
                                 ORDER BY enqueue_seq ASC",`)},

	// save_session_meta, load_session_meta
	{ID: "runtime.save_session_meta.last_wins", Op: "save_session_meta", Says: "save_session_meta replaces the store's one session meta.",
		Source:   silent("save_session_meta", "the inherent Store::save_session_meta, which the trait method calls (and whose failures it swallows), is not shown"),
		Latitude: "Where and how the meta is kept is the backend's; the kit reads it as one value per store, last save wins, compared as a JSON value."},
	{ID: "runtime.load_session_meta.last_saved", Op: "load_session_meta", Says: "load_session_meta answers the last meta saved, or none before the first save.",
		Source:   silent("load_session_meta", "the inherent Store::load_session_meta is not shown"),
		Latitude: "As runtime.save_session_meta.last_wins."},

	// tombstone_nodes, vacuum, gc_unreachable
	{ID: "runtime.tombstone_nodes.hides", Op: "tombstone_nodes", Says: "Tombstoned nodes leave load_node and both graph scopes; unknown ids are ignored.",
		Source: quoted("tombstone_nodes", `"UPDATE graph_nodes SET tombstoned = 1 WHERE node_id = ?1"`)},
	{ID: "runtime.vacuum.removes_tombstoned", Op: "vacuum", Says: "vacuum deletes every tombstoned node and answers how many; a vacuumed id may be appended again.",
		Source: quoted("vacuum", `.write(move |tx| tx.execute("DELETE FROM graph_nodes WHERE tombstoned = 1", []))`)},
	{ID: "runtime.gc_unreachable.collects", Op: "gc_unreachable", Says: "gc_unreachable deletes stored checkpoints the head does not name and answers how many; the head's checkpoint stays.",
		Source:   silent("gc_unreachable", "the inherent Store::gc_unreachable is not shown, nor maybe_auto_gc, which every commit calls"),
		Latitude: "The count is bounded, not fixed: at most the stored checkpoints other than the head's (how many there are depends on the ref reading, runtime.commit_runtime_state.checkpoint), and fewer when an automatic collection already took some, or when the backend counts checkpoints a recorded turn names as reachable."},

	// stage_attachment, load_attachment
	{ID: "runtime.stage_attachment.first_staging", Op: "stage_attachment", Says: "stage_attachment stores an attachment of a session, uncommitted; a committed attachment staged again keeps its session, bytes and commit time.",
		Source:   silent("commit_runtime_state", "attachments are staged through the seed's blob API, outside the trait: the kit adds this operation so the commit rule on attachments can be checked"),
		Latitude: "Where a backend keeps the bytes (a table, its blob store) is its own, and so is what staging an id again does before it is committed: the first staging stays (the reference's reading) or the latest replaces it (a draft area); both are accepted. Only the commit rule is the seed's (runtime.commit_runtime_state.attachments)."},
	{ID: "runtime.load_attachment.as_staged", Op: "load_attachment", Says: "load_attachment answers the attachment as staged, with its commit time once committed, or none for an unknown id.",
		Source:   silent("commit_runtime_state", "attachments are read through the seed's blob API, outside the trait: the kit adds this operation"),
		Latitude: "As runtime.stage_attachment.first_staging."},
}
