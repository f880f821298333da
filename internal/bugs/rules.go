package bugs

// breaksRules names, for a deliberate bug whose broken rule the
// simulator's and the linearizability check's failures can tell from what
// the backend answered, that rule (a spec.Rule ID; a bug of one decision
// shared by several operations breaks one rule of each): the bug corpus
// test (cmd/storecheck) holds that those layers' failures name one of them. A bug seen
// only through a later read of what it wrote, where the answer cannot
// single out the write's rule, is not listed; its failures must still name
// some rule of its contract.
var breaksRules = map[Bug][]string{
	ContinuityFenceRejectsEqual: {"continuity.upsert_continuity_record.fence_not_lower", "continuity.save_session_snapshot.fence_not_lower",
		"continuity.delete_continuity_record.fence_not_lower"},
	ContinuityFenceAcceptsOlder: {"continuity.upsert_continuity_record.fence_not_lower", "continuity.save_session_snapshot.fence_not_lower",
		"continuity.delete_continuity_record.fence_not_lower"},
	ContinuitySnapshotVersionAcceptsEqual: {"continuity.save_session_snapshot.version_must_advance"},
	// The upsert's fence and generation checks, and the checkpoint version
	// it keeps on a rebind, are decided on a read that another caller's
	// write may have overtaken.
	ContinuityOneProcessCheckOutsideTx: {"continuity.upsert_continuity_record.fence_not_lower", "continuity.upsert_continuity_record.generation_not_lower",
		"continuity.upsert_continuity_record.checkpoint_version_kept"},
	// The same race across processes.
	ContinuityUpsertCheckOutsideTx: {"continuity.upsert_continuity_record.fence_not_lower", "continuity.upsert_continuity_record.generation_not_lower",
		"continuity.upsert_continuity_record.checkpoint_version_kept"},
	// max_batches 0 answers none and checks nothing: whatever the bug
	// answers instead (a claim, or the lease refusal it went on to check)
	// breaks that rule alone.
	RuntimeMaxZeroClaimsAll:          {"runtime.claim_ready_queued_work.max_zero"},
	ClientEnqueueOverwrites:          {"client.enqueue_intent.existing_untouched"},
	RuntimeHeadRevisionUnchecked:     {"runtime.commit_runtime_state.expected_revision"},
	RuntimeCommitWithoutLease:        {"runtime.commit_runtime_state.lease_required", "runtime.commit_runtime_state.lease_live"},
	ContinuityDeleteSkipsFence:       {"continuity.delete_continuity_record.fence_not_lower"},
	ContinuityGenerationRegression:   {"continuity.upsert_continuity_record.generation_not_lower"},
	ContinuitySnapshotOwnerUnchecked: {"continuity.save_session_snapshot.snapshot_owner"},
	ContinuityRollbackFenceNotLower:  {"continuity.rollback_continuity_record.fence_exact"},
	ContinuityMaxFenceRecordsOnly:    {"continuity.max_fencing_token.over_both_tables"},
	ClientSessionGateAcceptsEqual:    {"client.upsert_session.gate"},
	ClientSessionGateSeqOnly:         {"client.upsert_session.gate"},
	ClientEventSeqFromClock:          {"client.append_event.seq_increasing"},
	ClientFaultIDFromTime:            {"client.insert_fault.id_increasing"},
	RuntimeAppendOverwritesNode:      {"runtime.commit_runtime_state.graph_repeated_node"},
	RuntimeRevisionNotBumped:         {"runtime.commit_runtime_state.checkpoint"},
	RuntimeLoadNodeShowsTombstoned:   {"runtime.load_node.live_only"},
	// The claim's prefix is of candidates out of enqueue order.
	RuntimeClaimOrderedByBatchID:     {"runtime.claim_ready_queued_work.candidates"},
	ContinuitySynchronousOff:         {"continuity.survives_power_loss"},
	RuntimeSynchronousOff:            {"runtime.survives_power_loss"},
	ClientSynchronousOff:             {"client.survives_power_loss"},
	RuntimeAttachmentRenameNoDirSync: {"runtime.survives_power_loss"},
	RuntimeAttachmentUnsynced:        {"runtime.survives_power_loss"},
	RuntimeAttachmentCacheOrdered:    {"runtime.survives_power_loss"},
	RuntimeAttachmentSyncRetried:     {"runtime.survives_power_loss"},
	ContinuityJournalMemory:          {"continuity.survives_power_loss"},
	// Two of the sizes a workload's big draw passes (spec.LookupChunk,
	// spec.Counter8). The claim behind 100 batches (spec.ScanLimit) is not
	// listed: its none, where a claim is due, is judged against the
	// claim's answer (claim_lease, claim_fence), not the candidates rule.
	ContinuityResolveDropsLastChunk: {"continuity.resolve_many.ready_or_uninitialized"},
	ClientAttemptsEightBits:         {"client.bump_intent.refusal", "client.intent.read"},
}

// Breaks are the rules b breaks, where its entry says which (none where
// the failing answers cannot single them out).
func Breaks(b Bug) []string { return breaksRules[b] }
