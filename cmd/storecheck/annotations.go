package main

import (
	"slices"

	"github.com/storecheck/storecheck/internal/selftest"
	"github.com/storecheck/storecheck/reports"
)

// selftestFailures are selftest's failures as checks, for the GitHub
// Actions annotations: the layers' failed checks (a flagged reference) and
// each deliberate bug no layer caught, with the line that runs it again.
func selftestFailures(result reports.Run, rows []selftest.Row) reports.Run {
	run := reports.Run{Checks: slices.Clone(result.Checks)}
	for _, row := range rows {
		if row.Bug == "" {
			continue
		}
		caught := false
		for _, l := range selftest.Layers {
			v := row.Verdicts[l]
			// As the table counts it: a verdict with a note is no catch.
			caught = caught || (v.Ran && v.Note == "" && v.Caught)
		}
		if !caught {
			run.Checks = append(run.Checks, reports.Check{Store: row.Store, Layer: "selftest", Name: row.Bug, Outcome: reports.Failed,
				Message:   "the deliberate bug " + row.Bug + " escaped every layer",
				Reproduce: "storecheck selftest --store " + row.Store + " --bugs " + row.Bug})
		}
	}
	return run
}
