package main

import (
	"fmt"
	"strings"

	"github.com/storecheck/storecheck/reports"
)

// merge is "storecheck merge --report-dir OUT SHARD_DIR...": the report
// folders the shards of one sweep wrote (a CI matrix's jobs, a Kubernetes
// Indexed Job's pods) made one report, as if one machine had run the whole
// sweep: what one shard reached is reached, a failure keeps its reproduce
// line, and the exit code is the sweep's.
func merge(inv invocation) int {
	f, stdout, stderr := inv.f, inv.stdout, inv.stderr
	if !f.given("report-dir") {
		fmt.Fprintf(stderr, "storecheck merge: --report-dir is required: the folder the merged report is written to\n")
		return exitUsage
	}
	out := f.str("report-dir")
	var shards []reports.Shard
	for _, dir := range f.args() {
		r, err := reports.ReadDir(dir)
		if err != nil {
			fmt.Fprintf(stderr, "storecheck merge: %v\n", err)
			return exitUsage
		}
		shards = append(shards, reports.Shard{Dir: dir, Run: r})
	}
	r, err := reports.Merge(shards)
	if err != nil {
		fmt.Fprintf(stderr, "storecheck merge: %v\n", err)
		return exitUsage
	}
	r.Command = "storecheck merge " + strings.Join(inv.f.line, " ")
	if err := reports.CopyArtifacts(out, shards, &r); err != nil {
		fmt.Fprintf(stderr, "storecheck merge: %v\n", err)
		return exitUsage
	}
	fmt.Fprintf(stdout, "storecheck merge: %d shard reports\n", len(shards))
	for _, reach := range r.Reach {
		fmt.Fprintf(stdout, "%s coverage: %s\n", reach.Store, reach.Summary())
	}
	reports.WriteText(stdout, r)
	reports.WriteAnnotations(stdout, r)
	writeReports(f, r, stderr)
	for _, c := range r.Checks {
		if c.Layer == reports.BackendLayer && c.Outcome == reports.Failed {
			return exitBackend
		}
	}
	return exitCode(r)
}
