// Package bugs names the deliberate bugs the reference stores can be opened
// with. Each one breaks a single rule of a contract, so the kit can show that
// it catches what it claims. The package is internal: only storecheck's own
// tests and selftest can open a broken store.
package bugs

// Bug is one deliberate bug; the zero Bug is none.
type Bug struct{ name string }

// Name is the bug's stable name ("" for none).
func (b Bug) Name() string { return b.name }

// all is every bug of every store, in registration order.
var all []Bug

// register adds a store's bugs to the registry and returns them.
func register(bs ...Bug) []Bug {
	all = append(all, bs...)
	return bs
}

// ByName finds a bug by its name.
func ByName(name string) (Bug, bool) {
	for _, b := range all {
		if b.name == name {
			return b, true
		}
	}
	return Bug{}, false
}

// All lists every bug of every store.
func All() []Bug { return append([]Bug(nil), all...) }

// The continuity store's bugs.
var (
	// ContinuityFenceRejectsEqual compares fences with <= where the
	// contract says <: a writer presenting the stored fence is refused.
	ContinuityFenceRejectsEqual = Bug{"continuity_fence_rejects_equal"}
	// ContinuityFenceAcceptsOlder lets a fence one below the stored one
	// through (an off-by-one on the stale-fence comparison).
	ContinuityFenceAcceptsOlder = Bug{"continuity_fence_accepts_older"}
	// ContinuityDeleteSkipsFence deletes a record without checking the fence.
	ContinuityDeleteSkipsFence = Bug{"continuity_delete_skips_fence"}
	// ContinuityGenerationRegression lets a newer fence take a record back
	// to an older generation.
	ContinuityGenerationRegression = Bug{"continuity_generation_regression"}
	// ContinuityVersionResetOnRebind takes the presented checkpoint version
	// even within the same generation.
	ContinuityVersionResetOnRebind = Bug{"continuity_version_reset_on_rebind"}
	// ContinuitySnapshotOwnerUnchecked overwrites a snapshot row owned by
	// another identity or generation.
	ContinuitySnapshotOwnerUnchecked = Bug{"continuity_snapshot_owner_unchecked"}
	// ContinuityMaxFenceRecordsOnly computes the fencing high-water mark
	// over the records table alone.
	ContinuityMaxFenceRecordsOnly = Bug{"continuity_max_fence_records_only"}
	// ContinuityUpsertCheckOutsideTx checks the fence and generation in one
	// transaction and writes in another: a race lets an older fence land
	// after a newer one was acknowledged. Only concurrency exposes it.
	ContinuityUpsertCheckOutsideTx = Bug{"continuity_upsert_check_outside_tx"}
	// ContinuityWriteBehind acknowledges record upserts from a memory
	// buffer and writes them to the database a few at a time (and at
	// Close): a crash loses upserts it already acknowledged. Only a crash
	// exposes it to one process.
	ContinuityWriteBehind = Bug{"continuity_write_behind"}
	// ContinuityProcessLock guards the upsert's check and write with a lock
	// of this process instead of one database transaction: safe while one
	// process writes, broken by a second process on the same file (the
	// seed's "second handle writing around the lock").
	ContinuityProcessLock = Bug{"continuity_process_lock"}
)

// Continuity lists the continuity store's bugs.
var Continuity = register(ContinuityFenceRejectsEqual, ContinuityFenceAcceptsOlder,
	ContinuityDeleteSkipsFence, ContinuityGenerationRegression, ContinuityVersionResetOnRebind,
	ContinuitySnapshotOwnerUnchecked, ContinuityMaxFenceRecordsOnly, ContinuityUpsertCheckOutsideTx, ContinuityWriteBehind, ContinuityProcessLock)
