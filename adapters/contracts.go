package adapters

import (
	"fmt"

	"github.com/storecheck/storecheck/spec"
	"github.com/storecheck/storecheck/spec/client"
	"github.com/storecheck/storecheck/spec/continuity"
	"github.com/storecheck/storecheck/spec/runtime"
)

// Contracts are the stores the adapters can speak, in report order.
var Contracts = []spec.Contract{continuity.Contract, runtime.Contract, client.Contract}

// ContractOf finds a registered contract by store name.
func ContractOf(store string) (spec.Contract, bool) {
	for _, c := range Contracts {
		if c.Name == store {
			return c, true
		}
	}
	return spec.Contract{}, false
}

// clip is b as a string, cut to n bytes.
func clip(b []byte, n int) string {
	if len(b) > n {
		return fmt.Sprintf("%s... (%d bytes)", b[:n], len(b))
	}
	return string(b)
}
