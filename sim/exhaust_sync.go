package sim

import (
	"context"
	"fmt"

	"github.com/storecheck/storecheck/fault"
	"github.com/storecheck/storecheck/fault/lossyfs"
)

// CutPowerAtSyncKeeping arms the run's disk: the power goes at the nth
// sync of file, keeping what kept and keepEntries say (fault.SyncCut); the
// strike is handled as a SyncCrash's.
func (s *struck) CutPowerAtSyncKeeping(ctx context.Context, file string, nth int, kept lossyfs.Fates, keepEntries int) error {
	if s.e.disk == nil {
		return fmt.Errorf("the run has no forgetful file system to cut the power of")
	}
	if err := s.e.disk.CrashAtSyncKeeping(s.e.work, file, nth, kept, keepEntries); err != nil {
		return err
	}
	s.e.syncArmed = true
	return nil
}

var _ fault.SyncKeeper = (*struck)(nil)
