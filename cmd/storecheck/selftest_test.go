package main

import (
	"regexp"
	"strings"
	"testing"
)

// Every deliberate bug is caught by some layer, and the unmodified reference
// by none: storecheck selftest exits 0 and its table says so.
func TestSelftestCatchesEveryBugAndNeverTheReference(t *testing.T) {
	out, errs, code := storecheck(t, "file", "selftest", "--quiet")
	if code != exitPassed {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	if !regexp.MustCompile(`(?m)^escaped every layer: none of \d+ bugs$`).MatchString(out) ||
		!strings.Contains(out, "the reference: flagged by no layer") {
		t.Fatalf("table:\n%s", out)
	}
	if !regexp.MustCompile(`(?m)^reference \(no bug\)\s+all(\s+clean){6}\s*$`).MatchString(out) {
		t.Fatalf("the reference row is not clean in every layer:\n%s", out)
	}
}
