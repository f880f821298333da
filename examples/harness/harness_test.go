package harness_test

import (
	"testing"

	"github.com/storecheck/storecheck/conformance"
	"github.com/storecheck/storecheck/examples/harness/mystore"
)

// TestConformance is the README's example: a backend author's whole test.
// It runs every layer of the kit on the store, in this process: the specs,
// the linearizability check and the simulator.
func TestConformance(t *testing.T) {
	conformance.Test(t, mystore.Harness(mystore.Options{}))
}
