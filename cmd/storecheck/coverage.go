package main

import (
	"fmt"

	"github.com/storecheck/storecheck/internal/stores"
	"github.com/storecheck/storecheck/reports"
	"github.com/storecheck/storecheck/sim"
)

// layerCoverage is the coverage matrix of each store named that layer
// counted (answers by store, by cell), over what it counted; a store the
// layer did not count (no model, not implemented) has none.
func layerCoverage(names []string, layer, over string, answers map[string]map[string]int) []reports.Coverage {
	var out []reports.Coverage
	for _, name := range names {
		s, ok := stores.Lookup(name)
		counts, counted := answers[name]
		if !ok || !counted || len(counts) == 0 {
			continue
		}
		out = append(out, s.Coverage(layer, over, counts))
	}
	return out
}

// shardText is the shard a sweep ran, for what its coverage is over ("" for
// the whole).
func shardText(sh sim.Shard) string {
	if sh.N <= 1 {
		return ""
	}
	return fmt.Sprintf(" (shard %d/%d)", sh.I, sh.N)
}
