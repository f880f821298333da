package adapters_test

import (
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/storecheck/storecheck/spec"
)

// The Rust crate types every capability of the protocol
// (spec.CapabilityTable, docs/protocol.md): a capability the table gains is a field of the crate's Capabilities (or, for the two
// members it builds per store, a StoreDef method), each value of one that
// takes strings is a wire name of its enum, and the crate's README lists
// it, so a Rust author never writes a hello member by hand.
func TestTheRustCrateTypesEveryCapability(t *testing.T) {
	const crate = "../bindings/rust/storecheck-backend/"
	wire, err := os.ReadFile(crate + "src/wire.rs")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile(crate + "README.md")
	if err != nil {
		t.Fatal(err)
	}
	missing := crateGaps(string(wire), string(readme))
	for _, m := range missing {
		t.Error(m)
	}
	// A crate that lost a field, an enum's wire name or a README row is
	// caught: the check is not vacuous.
	for _, broken := range []struct{ wire, readme string }{
		{strings.Replace(string(wire), "pub durability:", "pub durable:", 1), string(readme)},
		{strings.Replace(string(wire), `=> "process_crash"`, `=> "process"`, 1), string(readme)},
		{string(wire), strings.Replace(string(readme), "| `atomic_reads`", "| atomic", 1)},
	} {
		if len(crateGaps(broken.wire, broken.readme)) == 0 {
			t.Error("a crate missing a capability passes")
		}
	}
}

// crateGaps says which capabilities of spec.CapabilityTable the crate's
// bindings/rust/storecheck-backend/src/wire.rs does not type, or its
// README does not list.
func crateGaps(wire, readme string) []string {
	var gaps []string
	// StoreDef::crash_points and StoreDef::capabilities build these.
	perStore := map[string]bool{spec.CapCrashPoints: true, spec.CapStores: true}
	quoted := regexp.MustCompile("`\"([a-z0-9_]+)\"`")
	for _, c := range spec.CapabilityTable {
		if perStore[c.Name] {
			continue
		}
		if !strings.Contains(wire, "pub "+c.Name+": ") {
			gaps = append(gaps, "bindings/rust: Capabilities has no field "+c.Name)
		}
		for _, v := range quoted.FindAllStringSubmatch(c.Value, -1) {
			if !strings.Contains(wire, `=> "`+v[1]+`"`) {
				gaps = append(gaps, "bindings/rust: no enum value is sent as "+c.Name+" "+v[1])
			}
		}
		if !strings.Contains(readme, "| `"+c.Name+"`") {
			gaps = append(gaps, "bindings/rust/README.md: the capability table has no row of "+c.Name)
		}
	}
	return gaps
}
