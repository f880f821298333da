package spec

import (
	"fmt"
	"slices"
)

// Durability is what a store's acknowledged writes survive, as a backend
// may declare it (Capabilities.Durability) where a store's seed does not
// say (Contract.DurabilityDeclared).
const (
	// DurabilityPowerLoss: every write the backend acknowledged survives a
	// power cut, which keeps only what was synced (fsync, fdatasync). It
	// is what SQLite's default, synchronous=FULL, gives, and the default.
	DurabilityPowerLoss = "power_loss"
	// DurabilityProcessCrash: every acknowledged write survives the
	// backend process's crash, not a power cut (SQLite's WAL with
	// synchronous=NORMAL, say).
	DurabilityProcessCrash = "process_crash"
)

// PowerLossModel is the crash model a store's survives_power_loss rule is
// checked under (fault/lossyfs and the simulator's sync faults), as every
// such rule says it: one statement for the three.
const PowerLossModel = "The simulator checks it on a file system that forgets (fault/lossyfs). A cut keeps what was synced, and gives every write made since its file's last fsync or fdatasync, in any file of the store, a fate of its own: kept, lost, or torn at the disk's sectors (some of its sectors whole, the others as they were; lossyfs.SectorSize), so the writes between two syncs persist in any subset, not only in order: SQLite's crash VFS (src/test6.c) gives each unsynced write its fate so, and its atomic-commit page (sqlite.org/atomiccommit.html, \"Hardware Assumptions\") assumes no more of a disk than whole sectors and syncs that order writes. The power may also go at the Nth sync of a named file, instead of it (test6.c's crash). A sync may fail: it answers EIO and its file's dirty data is dropped as Linux drops it (marked clean: still read from the cache, never written, and a later sync succeeds without it; Linux's errseq_t writeback errors, Documentation/filesystems/vfs.rst, and PostgreSQL's \"fsyncgate\"). A file's creation, link, removal or renaming persists only once it is durable under the directory-entry model each run draws from its seed (fault/lossyfs): strict POSIX, where only an fsync of its directory makes it so (Linux's fsync(2): \"an explicit fsync() on a file descriptor for the directory is also needed\"), or ext4 with data=ordered, where every sync of any file commits the entry ops before it, in order (ext4's data=ordered journal); a cut undoes some of those not yet durable, the newest first. SQLite syncs its directory after it creates a rollback journal or a WAL (sqlite.org/atomiccommit.html; os_unix.c's UNIXFILE_DIRSYNC), so its own files are not exposed; the removal of a rollback journal, which commits a transaction in journal_mode=DELETE (SQLite's default) and which SQLite follows with a sync of its directory only under synchronous=EXTRA (its synchronous pragma), is durable at once, as the kit reads a seed's Durable as synchronous=FULL; a file a backend keeps beside them is exposed. Folders are durable at once."

// PowerLossAfterFailedSync is what every store's survives_power_loss rule
// allows after a sync that failed, where the seeds and SQLite are silent.
const PowerLossAfterFailedSync = "After a failed sync the seeds and SQLite promise nothing, and the kit takes what SQLite does: an operation left indefinite once a sync was made to fail (an io answer, or its process dying) may not have taken effect, even to the process's own reads, and still take effect when the store is opened again (SQLite publishes a WAL commit in its wal-index only once its sync succeeded, sqlite3WalFrames in wal.c, so its own process does not see it; the WAL recovery of the next open reads the frames the page cache kept and finds the commit there, as Rebello et al., \"Can Applications Recover from fsync Failures?\", USENIX ATC 2020, report of SQLite). Once such a commit took effect, a cut may take the store back to any state since it, losing the synced commits after it too: its frames were never durable, and recovery stops at the first WAL frame that is not valid. A backend that answers ok to a commit whose sync failed is held to it, like any acknowledged write."

// PowerLossRule is the ID of the rule of store's table that holds a backend
// to keep its acknowledged writes across a power cut.
func PowerLossRule(store string) string { return store + ".survives_power_loss" }

// PowerLossExempt is why a backend that declared caps is not held to keep
// its writes across a power cut in c's store ("" when it is held): only
// where c's seed is silent on syncing, and only by declaring
// DurabilityProcessCrash. A seed that shows its store syncing every commit
// holds every backend to it, whatever it declares.
func (c Contract) PowerLossExempt(caps Capabilities) string {
	if !c.DurabilityDeclared || caps.Durability != DurabilityProcessCrash {
		return ""
	}
	return fmt.Sprintf("the backend declares durability %q (its writes survive a process crash, not a power cut), which the %s seed allows: it does not show whether its commits are synced (rule %s)",
		DurabilityProcessCrash, c.Name, PowerLossRule(c.Name))
}

// CheckValues checks the values of the capabilities that take words: an
// unknown word is an error that names the words accepted.
func (c Capabilities) CheckValues() error {
	if want := []string{"", DurabilityPowerLoss, DurabilityProcessCrash}; !slices.Contains(want, c.Durability) {
		return fmt.Errorf("capability %s is %q: want %q or %q", CapDurability, c.Durability, DurabilityPowerLoss, DurabilityProcessCrash)
	}
	return nil
}
