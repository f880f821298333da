package main

import "github.com/storecheck/storecheck/internal/bugs"

func init() {
	for b, specs := range map[bugs.Bug][]string{
		bugs.ContinuityFenceRejectsEqual: {
			"continuity upsert_continuity_record accepts the stored fence again and a newer one",
			"continuity save_session_snapshot accepts the record's own fence",
		},
		bugs.ContinuityFenceAcceptsOlder: {
			"continuity upsert_continuity_record rejects a fence lower than the stored one with stale_fencing_token",
			"continuity save_session_snapshot rejects a fence lower than the record's with stale_fencing_token",
			"continuity delete_continuity_record rejects a fence lower than the stored one with stale_fencing_token and keeps everything",
		},
		bugs.ContinuityDeleteSkipsFence: {
			"continuity delete_continuity_record rejects a fence lower than the stored one with stale_fencing_token and keeps everything",
		},
		bugs.ContinuityMatchIgnoresBytes: {
			"continuity session_snapshot_matches_current is false when any part of the tuple or the bytes differ",
		},
		bugs.ContinuityGenerationRegression: {
			"continuity upsert_continuity_record rejects a lower generation with stale_continuity_generation, even with a newer fence",
		},
		bugs.ContinuityVersionResetOnRebind: {
			"continuity upsert_continuity_record keeps the stored checkpoint version within one generation when a lower one is presented (session rebind)",
		},
		bugs.ContinuitySnapshotOwnerUnchecked: {
			"continuity save_session_snapshot rejects a snapshot row owned by another identity with corruption, keeping the old bytes",
			"continuity save_session_snapshot rejects a snapshot row owned by another generation of the identity with corruption, keeping the old bytes",
		},
		// Caught by the spec with a second handle; with one process only a
		// crash shows it (the simulator's test).
		bugs.ContinuityWriteBehind: {
			"continuity two handles on one database keep the fencing rules across handles, as two processes would",
		},
		// The bounds' bugs (internal/bugs/bounds.go).
		bugs.ContinuitySnapshotVersionAcceptsEqual: {
			"continuity save_session_snapshot rejects a checkpoint version not above the record's with stale_checkpoint_version",
		},
		bugs.ContinuityRollbackFenceNotLower: {
			"continuity rollback_continuity_record compares the fence exactly: a higher fence fails stale_fencing_token too",
		},
		bugs.ContinuityMatchRowFenceStrict: {
			"continuity session_snapshot_matches_current is true for the whole provenance tuple, the bytes and the record's current fence",
		},
		// The sizes' bugs (spec/sizes.go).
		bugs.ContinuityResolveDropsLastChunk: {
			"continuity resolve_many answers every identity asked, past a lookup chunk of 50 and past SQLite's 32,766 bound parameters",
		},
		bugs.ContinuityMaxFenceRecordsOnly: {
			"continuity max_fencing_token is the maximum over records and snapshots",
		},
	} {
		expectedFailures[b] = specs
	}
}
