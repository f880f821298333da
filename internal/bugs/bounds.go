package bugs

// breaks names, for each bound of the contracts' rule tables (spec.Bound
// IDs), the deliberate bugs that break it there: every bound has one, so
// that its specs one below it, at it and one above it are shown to catch
// what they claim (a test holds it; cmd/storecheck's tests name the specs
// each bug fails).
var breaks = map[string][]Bug{
	"client.due_intents.due#deadline":                                               {ClientDueExcludesNow},
	"client.due_intents.limit#default":                                              {ClientDueZeroTakesAll},
	"client.due_intents.limit#cap":                                                  {ClientDueLimitUncapped},
	"client.flush_order.now_and_batch#batch":                                        {ClientFlushReadsWholeQueue},
	"client.open_tasks.limit#default":                                               {ClientOpenTasksZeroTakesAll},
	"client.open_tasks.limit#cap":                                                   {ClientOpenTasksUncapped},
	"client.events_since.limit#exact":                                               {ClientEventsLimitIgnored},
	"client.open_task.refresh#attempt":                                              {ClientReopenLowersAttempt},
	"client.upsert_session.gate#pair":                                               {ClientSessionGateAcceptsEqual},
	"client.append_event.seq_increasing#last":                                       {ClientEventSeqFromClock},
	"client.insert_fault.id_increasing#last":                                        {ClientFaultIDFromTime},
	"runtime.expiry#expiry":                                                         {RuntimeLeaseLiveAtExpiry},
	"runtime.commit_runtime_state.expected_revision#stored":                         {RuntimeHeadRevisionUnchecked},
	"runtime.commit_runtime_state.revision#step":                                    {RuntimeRevisionNotBumped},
	"runtime.try_claim_session_execution_lease.grant#step":                          {RuntimeFenceNotBumped},
	"runtime.claim_ready_queued_work.max_zero#zero":                                 {RuntimeMaxZeroClaimsAll},
	"runtime.claim_ready_queued_work.candidates#available_at":                       {RuntimeClaimIgnoresAvailableAt},
	"runtime.claim_ready_queued_work.prefix#max_batches":                            {RuntimeClaimExceedsMaxBatches},
	"runtime.claim_ready_queued_work.batch_fence#step":                              {RuntimeClaimFenceNotBumped},
	"continuity.upsert_continuity_record.fence_not_lower#fence":                     {ContinuityFenceRejectsEqual, ContinuityFenceAcceptsOlder},
	"continuity.upsert_continuity_record.generation_not_lower#generation":           {ContinuityGenerationRegression},
	"continuity.upsert_continuity_record.checkpoint_version_kept#version":           {ContinuityVersionResetOnRebind},
	"continuity.save_session_snapshot.fence_not_lower#fence":                        {ContinuityFenceRejectsEqual, ContinuityFenceAcceptsOlder},
	"continuity.save_session_snapshot.version_must_advance#version":                 {ContinuitySnapshotVersionAcceptsEqual},
	"continuity.session_snapshot_matches_current.row_fence_is_provenance#row_fence": {ContinuityMatchRowFenceStrict},
	"continuity.rollback_continuity_record.fence_exact#fence":                       {ContinuityRollbackFenceNotLower},
	"continuity.delete_continuity_record.fence_not_lower#fence":                     {ContinuityDeleteSkipsFence, ContinuityFenceAcceptsOlder},
}

// Breaking are the deliberate bugs that break the bound id (a spec.Bound
// ID), none for an unknown one.
func Breaking(id string) []Bug { return breaks[id] }
