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
