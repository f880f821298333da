package continuity

import "github.com/storecheck/storecheck/spec"

// seed is the file the continuity contract is taken from.
const seed = "003_3865798685ce5aa3.txt"

// Rules is the continuity contract's rule table: every rule the kit checks,
// with the seed line it comes from or, where the seed is silent, what a
// backend may choose.
var Rules = []spec.Rule{
	// ----- upsert_continuity_record -----
	{
		ID: "continuity.upsert_continuity_record.writes_record", Op: "upsert_continuity_record",
		Says: "Upsert writes the identity's record (runtime, session, generation) under the presented fence; resolve_many then answers it.",
		Source: spec.Quoted(seed, "upsert_continuity_record", `INSERT INTO continuity_records (identity, agent_runtime_id, session_id, generation, checkpoint_version, fencing_token)
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6)
                         ON CONFLICT(identity) DO UPDATE SET
                            agent_runtime_id = excluded.agent_runtime_id,
                            session_id = excluded.session_id,
                            generation = excluded.generation,`),
	},
	{
		ID: "continuity.upsert_continuity_record.fence_not_lower", Op: "upsert_continuity_record",
		Says: "A fence lower than the stored one fails stale_fencing_token and changes nothing; the stored fence and a newer one are accepted.",
		Source: spec.Quoted(seed, "upsert_continuity_record", `if let Some((current_token, current_generation)) = existing {
                    if fencing_token.get() < current_token {
                        return Err(ContinuityStoreError::StaleFencingToken {`),
		Bounds: []spec.Bound{{Name: "fence", Value: "the stored fence", Of: "the presented fence",
			Below: "stale_fencing_token, nothing changes", At: "written", Above: "written",
			Source: spec.Quoted(seed, "upsert_continuity_record", `if fencing_token.get() < current_token {`)}},
	},
	{
		ID: "continuity.upsert_continuity_record.fence_stored", Op: "upsert_continuity_record",
		Says:   "The presented fence becomes the stored one, so a later write under an older fence is refused.",
		Source: spec.Quoted(seed, "upsert_continuity_record", `fencing_token = excluded.fencing_token",`),
	},
	{
		ID: "continuity.upsert_continuity_record.generation_not_lower", Op: "upsert_continuity_record",
		Says: "A generation lower than the stored one fails stale_continuity_generation, even under a newer fence, and changes nothing; a higher one is accepted.",
		Source: spec.Quoted(seed, "upsert_continuity_record", `if record.generation.get() < current_generation {
                        return Err(ContinuityStoreError::StaleContinuityGeneration {`),
		Bounds: []spec.Bound{{Name: "generation", Value: "the stored generation", Of: "the presented generation",
			Below: "stale_continuity_generation, nothing changes", At: "written", Above: "written",
			Source: spec.Quoted(seed, "upsert_continuity_record", `if record.generation.get() < current_generation {`)}},
	},
	{
		ID: "continuity.upsert_continuity_record.fence_before_generation", Op: "upsert_continuity_record",
		Says: "When both the fence and the generation are stale, the fence is reported: stale_fencing_token.",
		Source: spec.Quoted(seed, "upsert_continuity_record", `if fencing_token.get() < current_token {
                        return Err(ContinuityStoreError::StaleFencingToken {
                            identity: record.identity.clone(),
                            presented: fencing_token,
                            current: FencingToken::new(current_token),
                        });
                    }
                    if record.generation.get() < current_generation {`),
	},
	{
		ID: "continuity.upsert_continuity_record.checkpoint_version_kept", Op: "upsert_continuity_record",
		Says: "Within one generation the checkpoint version never goes back (the stored one is kept when higher: a session rebind keeps the durable checkpoint head); a new generation takes the presented version.",
		Source: spec.Quoted(seed, "upsert_continuity_record", `checkpoint_version = CASE
                                WHEN continuity_records.generation = excluded.generation
                                THEN MAX(continuity_records.checkpoint_version, excluded.checkpoint_version)
                                ELSE excluded.checkpoint_version
                            END,`),
		Bounds: []spec.Bound{{Name: "version", Value: "the stored checkpoint version", Of: "the version an upsert of the same generation presents",
			Below: "the stored version stays", At: "the stored version stays", Above: "the presented version is taken",
			Source: spec.Quoted(seed, "upsert_continuity_record", `THEN MAX(continuity_records.checkpoint_version, excluded.checkpoint_version)`)}},
	},

	// ----- save_session_snapshot -----
	{
		ID: "continuity.save_session_snapshot.saves_and_advances", Op: "save_session_snapshot",
		Says: "A save stores the snapshot and, in the same transaction, moves the identity's record to the snapshot's checkpoint version and fence.",
		Source: spec.Quoted(seed, "save_session_snapshot_owned", `// Keep the check, snapshot upsert, and record version/fence
                // advance in one writer transaction.`),
	},
	{
		ID: "continuity.save_session_snapshot.record_must_match", Op: "save_session_snapshot",
		Says: "When the identity has a record of another session or generation than the save's: not_found, and nothing changes.",
		Source: spec.Quoted(seed, "save_session_snapshot_owned", `if current_session_id != session_id.to_string()
                        || current_generation != generation.get()
                    {
                        return Err(ContinuityStoreError::NotFound {`),
	},
	{
		ID: "continuity.save_session_snapshot.fence_not_lower", Op: "save_session_snapshot",
		Says: "A fence lower than the record's fails stale_fencing_token and changes nothing; the record's own fence is accepted.",
		Source: spec.Quoted(seed, "save_session_snapshot_owned", `if fencing_token.get() < current_token {
                        return Err(ContinuityStoreError::StaleFencingToken {
                            identity: identity.clone(),`),
		Bounds: []spec.Bound{{Name: "fence", Value: "the stored fence", Of: "the presented fence",
			Below: "stale_fencing_token, nothing changes", At: "saved", Above: "saved",
			Source: spec.Quoted(seed, "save_session_snapshot_owned", `if fencing_token.get() < current_token {`)}},
	},
	{
		ID: "continuity.save_session_snapshot.version_must_advance", Op: "save_session_snapshot",
		Says: "A checkpoint version not above the record's fails stale_checkpoint_version and changes nothing.",
		Source: spec.Quoted(seed, "save_session_snapshot_owned", `if version.get() <= current_version {
                        return Err(ContinuityStoreError::StaleCheckpointVersion {`),
		Bounds: []spec.Bound{{Name: "version", Value: "the record's checkpoint version", Of: "the version a save presents",
			Below: "stale_checkpoint_version, nothing changes", At: "stale_checkpoint_version, nothing changes", Above: "saved",
			Source: spec.Quoted(seed, "save_session_snapshot_owned", `if version.get() <= current_version {`)}},
	},
	{
		ID: "continuity.save_session_snapshot.snapshot_owner", Op: "save_session_snapshot",
		Says: "A snapshot row of the session owned by another identity, or by another generation of the same identity, fails corruption; the old bytes and the record stay.",
		Source: spec.Quoted(seed, "save_session_snapshot_owned", `if let Some((snapshot_identity, snapshot_generation)) = existing_snapshot_owner
                    && (snapshot_identity != identity.as_str()
                        || snapshot_generation != generation.get())
                {
                    return Err(ContinuityStoreError::Corruption(format!(`),
	},
	{
		ID: "continuity.save_session_snapshot.check_order", Op: "save_session_snapshot",
		Says: "The checks run in the seed's order: the record's session and generation (not_found), then the fence (stale_fencing_token), then the version (stale_checkpoint_version), then the snapshot's owner (corruption).",
		Source: spec.Quoted(seed, "save_session_snapshot_owned", `let record_was_present = existing.is_some();
                if let Some((
                    current_session_id,
                    current_generation,
                    current_token,
                    current_version,
                )) = existing`),
	},
	{
		ID: "continuity.save_session_snapshot.without_record", Op: "save_session_snapshot",
		Says:   "With no record for the identity the snapshot is still saved, and no record is created.",
		Source: spec.Quoted(seed, "save_session_snapshot_owned", `if record_was_present && tx.changes() == 0 {`),
	},

	// ----- load_session_snapshot -----
	{
		ID: "continuity.load_session_snapshot.latest_bytes", Op: "load_session_snapshot",
		Says:   "Load answers the bytes of the session's latest save, exactly, or none for a session with no snapshot; sessions are kept apart.",
		Source: spec.Quoted(seed, "load_session_snapshot", `.prepare_cached("SELECT data FROM session_snapshots WHERE session_id = ?1")`),
	},
	{
		ID: "continuity.load_session_snapshot.empty_is_bytes", Op: "load_session_snapshot",
		Says:   "An empty snapshot loads as empty bytes, not as none.",
		Source: spec.Quoted(seed, "load_session_snapshot", `Ok(row.map(|data| SessionSnapshot { data }))`),
	},

	// ----- resolve_many -----
	{
		ID: "continuity.resolve_many.ready_or_uninitialized", Op: "resolve_many",
		Says:   "Resolve answers once per distinct identity asked: ready with its record, or uninitialized; nothing when asked nothing.",
		Source: spec.Quoted(seed, "resolve_many", `map.insert(id.clone(), ContinuityResolveState::Uninitialized);`),
	},
	{
		ID: "continuity.resolve_many.one_read_per_identity", Op: "resolve_many",
		Says: "Each identity's answer is one read of its record; the answers need not be one read of the whole store.",
		Source: spec.Quoted(seed, "resolve_many", `let mut map = BTreeMap::new();
                for id in &identities {
                    let mut stmt = connection
                        .prepare_cached(`),
		Latitude: "The seed reads the identities one statement at a time, outside any transaction, so a write may land between two of them. A backend may read them together or one by one: the checkers let each identity's answer take effect at its own moment within the call, in the order asked. One that reads them in one transaction may declare it (capability atomic_reads) and is held to one moment for the whole answer.",
	},

	// ----- session_snapshot_matches_current -----
	{
		ID: "continuity.session_snapshot_matches_current.whole_tuple", Op: "session_snapshot_matches_current",
		Says: "True only when the session's snapshot has the candidate's identity, generation, checkpoint version and bytes, the identity's record is at that session, generation and version, and the record's fence equals the candidate's; false otherwise, and for a snapshot with no record.",
		Source: spec.Quoted(seed, "session_snapshot_matches_current", `WHERE snapshot.session_id = ?1
                              AND snapshot.identity = ?2
                              AND snapshot.generation = ?3
                              AND snapshot.checkpoint_version = ?4
                              AND continuity.fencing_token = ?5
                              AND snapshot.fencing_token <= ?5
                              AND snapshot.data = ?6`),
	},
	{
		ID: "continuity.session_snapshot_matches_current.row_fence_is_provenance", Op: "session_snapshot_matches_current",
		Says:   "The snapshot row's own fence may precede the current one (it is provenance), but a snapshot fence above the candidate's never matches.",
		Source: spec.Quoted(seed, "exact_snapshot_match_requires_the_current_continuity_head", `"the historical row fence is provenance and may precede current write authority"`),
		Bounds: []spec.Bound{{Name: "row_fence", Value: "the candidate's fence (the record's)", Of: "the snapshot row's own fence",
			Below: "true: the row's fence is provenance", At: "true", Above: "false",
			Source: spec.Quoted(seed, "session_snapshot_matches_current", `AND snapshot.fencing_token <= ?5`)}},
	},

	// ----- delete_session_snapshot_if_current_revision -----
	{
		ID: "continuity.delete_session_snapshot_if_current_revision.revision", Op: "delete_session_snapshot_if_current_revision",
		Says: "The snapshot is deleted, and the call answers true, only when the presented revision is the stored snapshot's current revision.",
		Source: spec.Silent(seed, "delete_session_snapshot_if_current_revision",
			"the revision is meerkat's session_projection_cas_token of the snapshot read as a meerkat Session, neither of which the seed shows"),
		Latitude: "A backend declares how it computes revisions (capability snapshot_revision). \"sha256\", the default and the reference's reading, is the lowercase hex SHA-256 of the stored bytes, and the kit holds the backend to it. \"opaque\" is a revision the kit cannot compute: then the kit checks only that a revision it made up never deletes, accepts io for a snapshot the backend could not read, and lets a true answer delete.",
	},
	{
		ID: "continuity.delete_session_snapshot_if_current_revision.other_revision_keeps", Op: "delete_session_snapshot_if_current_revision",
		Says: "Any other revision answers false and keeps the snapshot.",
		Source: spec.Quoted(seed, "delete_session_snapshot_if_current_revision", `if current_revision != expected_current_revision {
                        return Ok(false);
                    }`),
	},
	{
		ID: "continuity.delete_session_snapshot_if_current_revision.missing_is_false", Op: "delete_session_snapshot_if_current_revision",
		Says: "A session with no snapshot answers false.",
		Source: spec.Quoted(seed, "delete_session_snapshot_if_current_revision", `let Some(data) = data else {
                        return Ok(false);
                    };`),
	},

	// ----- rollback_continuity_record -----
	{
		ID: "continuity.rollback_continuity_record.previous_same_identity", Op: "rollback_continuity_record",
		Says:   "A previous record of another identity than the attempt's fails corruption, before anything is read.",
		Source: spec.Quoted(seed, "rollback_continuity_record", `"reset rollback identity mismatch: attempted {}, previous {}",`),
	},
	{
		ID: "continuity.rollback_continuity_record.record_required", Op: "rollback_continuity_record",
		Says: "An identity with no record fails not_found.",
		Source: spec.Quoted(seed, "rollback_continuity_record", `.ok_or_else(|| ContinuityStoreError::NotFound {
                        identity: expected_attempt.identity.clone(),
                    })?;`),
	},
	{
		ID: "continuity.rollback_continuity_record.fence_exact", Op: "rollback_continuity_record",
		Says:   "The record's fence must equal the presented one exactly: a lower or a higher fence fails stale_fencing_token, so a newer attempt is never clobbered.",
		Source: spec.Quoted(seed, "rollback_continuity_record", `if current_token != fencing_token.get() {`),
		Bounds: []spec.Bound{{Name: "fence", Value: "the stored fence", Of: "the presented fence",
			Below: "stale_fencing_token, nothing changes", At: "rolled back", Above: "stale_fencing_token, nothing changes",
			Source: spec.Quoted(seed, "rollback_continuity_record", `if current_token != fencing_token.get() {`)}},
	},
	{
		ID: "continuity.rollback_continuity_record.attempt_current", Op: "rollback_continuity_record",
		Says: "The record's runtime, session and generation must be the attempt's, else stale_continuity_generation; its checkpoint version is not compared (it may have advanced).",
		Source: spec.Quoted(seed, "rollback_continuity_record", `if current_runtime_id != expected_attempt.agent_runtime_id.as_str()
                    || current_session_id != expected_attempt.session_id.to_string()
                    || current_generation != expected_attempt.generation.get()
                {
                    return Err(ContinuityStoreError::StaleContinuityGeneration {`),
	},
	{
		ID: "continuity.rollback_continuity_record.restores", Op: "rollback_continuity_record",
		Says: "In one transaction the snapshots of the attempt's generation go (older generations' stay), and the previous record comes back under the presented fence, or the record is deleted when there was none.",
		Source: spec.Quoted(seed, "rollback_continuity_record", `// Only the provisional reset generation is abandoned. Older
                // snapshots remain the rollback authority for the restored
                // row, while a concurrently advanced generation is protected
                // by the exact CAS above.`),
	},

	// ----- delete_continuity_record -----
	{
		ID: "continuity.delete_continuity_record.deletes_all", Op: "delete_continuity_record",
		Says: "Delete removes the identity's record and every snapshot it owns in one transaction, at the stored fence or a newer one (or with no record).",
		Source: spec.Quoted(seed, "delete_continuity_record", `// Keep the fence check and both deletes in one transaction so
                // failures cannot leave a half-deleted identity.`),
	},
	{
		ID: "continuity.delete_continuity_record.fence_not_lower", Op: "delete_continuity_record",
		Says: "A fence lower than the stored one fails stale_fencing_token and everything stays.",
		Source: spec.Quoted(seed, "delete_continuity_record", `if let Some(current) = existing_token
                    && fencing_token.get() < current`),
		Bounds: []spec.Bound{{Name: "fence", Value: "the stored fence", Of: "the presented fence",
			Below: "stale_fencing_token, nothing changes", At: "deleted", Above: "deleted",
			Source: spec.Quoted(seed, "delete_continuity_record", `&& fencing_token.get() < current`)}},
	},

	// ----- max_fencing_token -----
	{
		ID: "continuity.max_fencing_token.over_both_tables", Op: "max_fencing_token",
		Says: "The highest fence the store holds, over records and snapshots both; 0 for an empty store.",
		Source: spec.Quoted(seed, "max_fencing_token", `"SELECT COALESCE(MAX(t), 0) FROM (
                        SELECT MAX(fencing_token) AS t FROM continuity_records
                        UNION ALL
                        SELECT MAX(fencing_token) AS t FROM session_snapshots
                    )",`),
	},
	{
		ID: "continuity.max_fencing_token.survives_reopen", Op: "max_fencing_token",
		Says: "The high-water mark survives closing and opening the store again, so a lease provider seeded from it never hands out a token the store rejects (the v0.7.8 restart abort).",
		Source: spec.Quoted(seed, "max_fencing_token", `seeds its monotonic counter from this on startup so fencing tokens keep
    /// advancing across process restarts.`),
	},

	// ----- the whole store -----
	{
		ID:       "continuity.shared_files",
		Says:     "Two handles on one file (as two processes would hold) keep the fencing rules between them.",
		Source:   spec.Quoted(seed, "LocalContinuityStore::open", `//! Implements CONTRACT-06. Designed for single-process, local-disk persistence.`),
		Latitude: "The seed serializes its writers with an in-process mutex and promises nothing across processes, so the kit checks two handles on one file only for a backend that declares the capability shared_files.",
	},
	{
		ID:   "continuity.survives_power_loss",
		Says: "Every write the store acknowledged survives a power cut: after the machine loses everything the backend never synced (fsync, fdatasync), the store opened again on its file finds every record and snapshot it acknowledged, and its fencing high-water mark is not below any fence it accepted. An operation in flight at the cut may or may not have taken effect, and none is half applied. The seed opens its database in WAL mode and sets no synchronous pragma, so SQLite's default, synchronous=FULL, stays in place: a commit is synced before it is answered, and a backend is held to that whatever durability it declares. " + spec.PowerLossModel,
		Source: spec.Quoted(seed, "LocalContinuityStore::open", `writer
            .execute_batch("PRAGMA journal_mode=WAL; PRAGMA busy_timeout=5000;")`),
		Latitude: spec.PowerLossAfterFailedSync,
	},
	{
		ID:   "continuity.open_waits_for_lock",
		Says: "Opening a database another connection holds write-locked waits for the lock, and gives up by the open's timeout (the open request's timeout_ms), answering within a slack of 2 s more.",
		Source: spec.Quoted(seed, "open_with_fencing_floor", `SQLite open/schema/WAL setup can wait on the filesystem or a database
    /// lock for the configured busy timeout.`),
		Latitude: "The seed waits its busy timeout (5 s); the open's timeout (timeout_ms on the wire, spec.OpenOptions.Timeout in Go) bounds the wait instead, and the kit checks it only where the backend declares sqlite_locking.",
	},
}
