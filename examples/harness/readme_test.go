package harness_test

import (
	"os"
	"strings"
	"testing"
)

// The README shows harness_test.go's test function; this keeps the two the
// same, so the README's example is one that compiles and passes.
func TestREADMEShowsThisExample(t *testing.T) {
	src, err := os.ReadFile("harness_test.go")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	body := string(src[strings.Index(string(src), "func TestConformance"):])
	if !strings.Contains(string(readme), body) {
		t.Fatalf("README.md does not contain the example of examples/harness/harness_test.go:\n%s", body)
	}
}
