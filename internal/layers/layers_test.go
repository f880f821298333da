package layers

import (
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/storecheck/storecheck/"

// imports maps every package of the module (by path inside it) to what its
// non-test files import.
func imports(t *testing.T) map[string][]string {
	t.Helper()
	root := "../.."
	out := map[string][]string{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") && path != root {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		pkg := filepath.ToSlash(rel)
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if !slices.Contains(out[pkg], p) {
				out[pkg] = append(out[pkg], p)
			}
		}
		if _, ok := out[pkg]; !ok {
			out[pkg] = nil
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// deps is every import pkg reaches, through the module's own packages.
func deps(all map[string][]string, pkg string) []string {
	seen := map[string]bool{}
	var walk func(p string)
	walk = func(p string) {
		for _, imp := range all[p] {
			if seen[imp] {
				continue
			}
			seen[imp] = true
			if inner, ok := strings.CutPrefix(imp, module); ok {
				walk(inner)
			}
		}
	}
	walk(pkg)
	var out []string
	for p := range seen {
		out = append(out, p)
	}
	slices.Sort(out)
	return out
}

// aboveConformance: pkg stands on the conformance check (it is the check,
// or the command, selftest, an example).
func aboveConformance(pkg string) bool {
	return pkg == "conformance" || pkg == "internal/selftest" || under(pkg, "cmd") || under(pkg, "examples")
}

func under(pkg, tree string) bool { return pkg == tree || strings.HasPrefix(pkg, tree+"/") }

func TestImportsFollowTheLayers(t *testing.T) {
	all := imports(t)
	for pkg := range all {
		reach := deps(all, pkg)
		for _, d := range reach {
			inner, ours := strings.CutPrefix(d, module)
			switch {
			// The adapter seam depends on the contracts only.
			case under(pkg, "adapters") && ours && !under(inner, "spec"):
				t.Errorf("%s reaches %s: the adapters depend on spec only", pkg, inner)
			case under(pkg, "adapters") && under(inner, "spec/suite"):
				t.Errorf("%s reaches %s: the adapters do not depend on the suite", pkg, inner)
			// Ginkgo is the suite's, and of what runs the suite: the
			// conformance check and what stands on it.
			case strings.HasPrefix(d, "github.com/onsi/ginkgo") && !under(pkg, "spec/suite") && !aboveConformance(pkg):
				t.Errorf("%s reaches Ginkgo (%s): only spec/suite, conformance and what stands on it may", pkg, d)
			// The suite states rules; reports render results.
			case under(pkg, "spec") && ours && under(inner, "reports"):
				t.Errorf("%s reaches %s: the suite returns its own results", pkg, inner)
			// The checkers and the simulator drive any backend through
			// adapters, never the reference's insides.
			case (under(pkg, "sim") || under(pkg, "linearizability") || under(pkg, "fault")) && ours &&
				(under(inner, "reference") || under(inner, "internal")):
				t.Errorf("%s reaches %s: the checkers and the simulator know backends through adapters only", pkg, inner)
			// The reference reads as the contract: it knows of no bug.
			case under(pkg, "reference") && ours && under(inner, "internal/bugs"):
				t.Errorf("%s reaches %s: the reference knows of no deliberate bug", pkg, inner)
			}
		}
		// The registration is read from above: only the conformance check
		// imports it (and selftest, which wires the deliberate bugs; and
		// tests); the deliberate bugs reach the command through them. The
		// conformance check is the top of the library: the command and
		// examples stand on it, nothing below reaches it.
		for _, imp := range all[pkg] {
			inner, _ := strings.CutPrefix(imp, module)
			switch {
			case inner == "internal/stores" && pkg != "conformance" && pkg != "internal/selftest",
				inner == "internal/bugs" && pkg != "internal/stores" && pkg != "internal/selftest",
				inner == "internal/selftest" && pkg != "cmd/storecheck",
				inner == "conformance" && !aboveConformance(pkg):
				t.Errorf("%s imports %s", pkg, inner)
			}
		}
	}
}
