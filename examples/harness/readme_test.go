package harness_test

import (
	"os"
	"strings"
	"testing"
)

// The README shows the example's harness, its test, its transaction helper
// and its serve command; this keeps them the same, so the README's example
// is one that compiles and passes.
func TestREADMEShowsThisExample(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, shown := range []struct{ file, sig string }{
		{"mystore/store.go", "func Harness("},
		{"mystore/store.go", "func (s *Store) tx("},
		{"harness_test.go", "func TestConformance"},
		{"serve/main.go", "func main()"},
	} {
		src, err := os.ReadFile(shown.file)
		if err != nil {
			t.Fatal(err)
		}
		i := strings.Index(string(src), shown.sig)
		if i < 0 {
			t.Fatalf("%s has no %s", shown.file, shown.sig)
		}
		body := string(src[i:])
		body = body[:strings.Index(body, "\n}\n")+3]
		if !strings.Contains(string(readme), "```go\n"+body+"```") {
			t.Errorf("README.md does not show %s of examples/harness/%s as it is:\n%s", shown.sig, shown.file, body)
		}
	}
}
