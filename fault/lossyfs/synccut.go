package lossyfs

// CrashAtSyncKeeping is CrashAtSync with the cut's fates given, not drawn:
// at the nth sync of file (relative to dir) from now the power of the
// folder goes, keeping of the unsynced writes those kept names and of the
// entry ops not yet durable the first keepEntries, as CutEntries would. It
// is how a cut at a sync is enumerated (every fate in turn) rather than
// sampled.
func (d *Disk) CrashAtSyncKeeping(dir, file string, nth int, kept Fates, keepEntries int) error {
	return d.arm(dir, armRequest{File: file, Nth: nth, Explicit: true, Kept: kept, KeepEntries: keepEntries})
}
