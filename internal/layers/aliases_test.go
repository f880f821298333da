package layers

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// majorVersion is a path's major-version element (".../v2", "gopkg.in/x.v3").
var majorVersion = regexp.MustCompile(`(/v[0-9]+|\.v[0-9]+)$`)

// ownName is the name a file uses for an import it does not rename: the
// package clause of a package of the module (under root), else the path's
// last element without its major version.
func ownName(root, module, imp string) string {
	if inner, ok := strings.CutPrefix(imp, module); ok {
		dir := filepath.Join(root, filepath.FromSlash(inner))
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if n := e.Name(); strings.HasSuffix(n, ".go") && !strings.HasSuffix(n, "_test.go") {
				if f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, n), nil, parser.PackageClauseOnly); err == nil {
					return f.Name.Name
				}
			}
		}
	}
	return path.Base(majorVersion.ReplaceAllString(imp, ""))
}

// aliasClashes lists every import path that files under root name two
// ways (an alias, or none, which is the package's own name) and every alias
// that stands for two paths (two packages of one own name, go/format and
// gomega's format, are Go's naming, not the tree's). Dot and blank imports
// name nothing.
func aliasClashes(root, module string) ([]string, error) {
	byPath := map[string]map[string][]string{} // path -> name -> files
	byName := map[string]map[string][]string{} // name -> path -> files
	aliased := map[string]bool{}               // names some file gives as an alias
	add := func(m map[string]map[string][]string, k, v, file string) {
		if m[k] == nil {
			m[k] = map[string][]string{}
		}
		if !slices.Contains(m[k][v], file) {
			m[k][v] = append(m[k][v], file)
		}
	}
	err := goFiles(root, func(rel string, _ *token.FileSet, f *ast.File) {
		for _, spec := range f.Imports {
			imp, _ := strconv.Unquote(spec.Path.Value)
			name := ""
			if spec.Name != nil {
				name = spec.Name.Name
			}
			if name == "_" || name == "." {
				continue
			}
			if name == "" {
				name = ownName(root, module, imp)
			} else {
				aliased[name] = true
			}
			add(byPath, imp, name, rel)
			add(byName, name, imp, rel)
		}
	})
	// where is a few of the files, for the message.
	where := func(files []string) string {
		slices.Sort(files)
		if len(files) > 3 {
			return fmt.Sprintf("%s and %d more", strings.Join(files[:3], ", "), len(files)-3)
		}
		return strings.Join(files, ", ")
	}
	var out []string
	for _, imp := range slices.Sorted(maps.Keys(byPath)) {
		if names := byPath[imp]; len(names) > 1 {
			var as []string
			for _, n := range slices.Sorted(maps.Keys(names)) {
				as = append(as, fmt.Sprintf("%s (%s)", n, where(names[n])))
			}
			out = append(out, fmt.Sprintf("%s is imported as %s", imp, strings.Join(as, " and as ")))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		if paths := byName[name]; len(paths) > 1 && aliased[name] {
			var of []string
			for _, p := range slices.Sorted(maps.Keys(paths)) {
				of = append(of, fmt.Sprintf("%s (%s)", p, where(paths[p])))
			}
			out = append(out, fmt.Sprintf("%s names %s", name, strings.Join(of, " and ")))
		}
	}
	return out, err
}

// Each package has one name across the tree, and each name one package: a
// reader who learnt that c is spec/client in one file is not misled in the
// next.
func TestOneAliasPerPackage(t *testing.T) {
	clashes, err := aliasClashes("../..", module)
	if err != nil {
		t.Fatal(err)
	}
	if len(clashes) > 0 {
		t.Errorf("%d imports are named more than one way:\n%s", len(clashes), strings.Join(clashes, "\n"))
	}
}

// The check finds a path imported under two names and an alias given to two
// paths; one name throughout (an alias that is the path's own name
// included), two packages of one own name, dot and blank imports pass.
func TestAliasClashesFindsBothKinds(t *testing.T) {
	const mod = "example.com/m/"
	root := tree(t, map[string]string{
		"contract/one/one.go": "package one\n",
		"contract/two/two.go": "package two\n",
		"a/a.go":              "package a\n\nimport (\n\tc \"example.com/m/contract/one\"\n\t_ \"example.com/m/contract/two\"\n\t. \"strings\"\n)\n",
		"b/b.go":              "package b\n\nimport (\n\tc \"example.com/m/contract/two\"\n\t\"example.com/m/contract/one\"\n\t. \"bytes\"\n)\n",
		"d/d.go":              "package d\n\nimport \"math/rand/v2\"\n",
		"d/d_test.go":         "package d\n\nimport rand \"math/rand/v2\"\n",
		"f/f.go":              "package f\n\nimport \"go/format\"\n",
		"f/f_test.go":         "package f\n\nimport \"example.org/pretty/format\"\n",
	})
	clashes, err := aliasClashes(root, mod)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"example.com/m/contract/one is imported as c (a/a.go) and as one (b/b.go)",
		"c names example.com/m/contract/one (a/a.go) and example.com/m/contract/two (b/b.go)",
	}
	if !slices.Equal(clashes, want) {
		t.Fatalf("clashes:\n%s\nwant:\n%s", strings.Join(clashes, "\n"), strings.Join(want, "\n"))
	}
}
