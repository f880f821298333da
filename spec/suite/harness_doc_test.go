package suite

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The Harness doc lists every requirement a spec places on a store (issue
// 28 item 5): a backend author reads it beside the harness, not in
// fixture.go. The names a requirement hangs on are taken from the code:
// every capability a backend declares, every Harness field a store's
// author fills but an opener or its name, every method the kit looks for
// on a store by assertion (Crash, Close), and every time constant the
// specs hold a store to. A new one the doc does not name fails here.

// harnessFieldsNotRequirements are the Harness fields that place nothing on
// a store of their own: the name, the containers of the capabilities
// (whose fields are checked one by one) and the openers (the doc's
// "Opening").
var harnessFieldsNotRequirements = []string{"Name", "Capabilities", "StoreCapabilities", "Continuity", "Client", "Runtime"}

func TestHarnessDocNamesEveryRequirement(t *testing.T) {
	suiteFiles := parseDir(t, ".")
	specFiles := parseDir(t, "..")
	adapterFiles := parseDir(t, "../../adapters")
	doc := typeDoc(t, suiteFiles, "Harness")

	var names []string
	for _, f := range structFields(t, suiteFiles, "Harness") {
		if !slices.Contains(harnessFieldsNotRequirements, f) {
			names = append(names, f)
		}
	}
	names = append(names, structFields(t, specFiles, "Capabilities")...)
	names = append(names, assertedMethods(append(append(slices.Clone(suiteFiles), specFiles...), adapterFiles...))...)
	names = append(names, timeConstantsUsed(suiteFiles, specFiles)...)
	for _, want := range []string{"Crash", "Close", "SQLiteLocking", "LockedOpenTimeout", "LockedOpenSlack", "OwnProcess", "WriteClientSchema"} {
		if !slices.Contains(names, want) {
			t.Errorf("the requirements read from the code miss %s: the scan is broken", want)
		}
	}
	for _, name := range missingFromDoc(doc, names) {
		t.Errorf("the Harness doc comment (spec/suite/harness.go) does not name %s, a requirement the kit's code places on a store: add it to the list", name)
	}
}

// TestMissingFromDocCatchesAnOmission is the check's own broken variant: a
// doc without a requirement's name is caught, a word that only contains
// it is no mention.
func TestMissingFromDocCatchesAnOmission(t *testing.T) {
	doc := "Files: a store reopened finds it. Crash(): a method. SQLiteLockingX: not the name."
	got := missingFromDoc(doc, []string{"Files", "Crash", "SQLiteLocking"})
	if !slices.Equal(got, []string{"SQLiteLocking"}) {
		t.Errorf("missingFromDoc = %v, want [SQLiteLocking]", got)
	}
}

// missingFromDoc are the names doc does not mention as a word.
func missingFromDoc(doc string, names []string) []string {
	var out []string
	for _, n := range names {
		if !regexp.MustCompile(`\b`+regexp.QuoteMeta(n)+`\b`).MatchString(doc) && !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	return out
}

// parseDir parses the non-test Go files of dir.
func parseDir(t *testing.T, dir string) []*ast.File {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var out []*ast.File
	for _, p := range paths {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		src, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, p, src, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, f)
	}
	return out
}

// typeSpec is the declaration of the type name in files, with its doc.
func typeSpec(t *testing.T, files []*ast.File, name string) (*ast.TypeSpec, string) {
	t.Helper()
	for _, f := range files {
		for _, d := range f.Decls {
			g, ok := d.(*ast.GenDecl)
			if !ok || g.Tok != token.TYPE {
				continue
			}
			for _, s := range g.Specs {
				if ts := s.(*ast.TypeSpec); ts.Name.Name == name {
					return ts, g.Doc.Text()
				}
			}
		}
	}
	t.Fatalf("no type %s", name)
	return nil, ""
}

func typeDoc(t *testing.T, files []*ast.File, name string) string {
	_, doc := typeSpec(t, files, name)
	return doc
}

// structFields are the field names of the struct type name.
func structFields(t *testing.T, files []*ast.File, name string) []string {
	ts, _ := typeSpec(t, files, name)
	st, ok := ts.Type.(*ast.StructType)
	if !ok {
		t.Fatalf("%s is not a struct", name)
	}
	var out []string
	for _, f := range st.Fields.List {
		for _, n := range f.Names {
			out = append(out, n.Name)
		}
	}
	return out
}

// assertedMethods are the methods of the interface literals files assert a
// value to: the optional methods the kit looks for on a store.
func assertedMethods(files []*ast.File) []string {
	var out []string
	add := func(e ast.Expr) {
		it, ok := e.(*ast.InterfaceType)
		if !ok {
			return
		}
		for _, m := range it.Methods.List {
			for _, n := range m.Names {
				if !slices.Contains(out, n.Name) {
					out = append(out, n.Name)
				}
			}
		}
	}
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.TypeAssertExpr:
				add(n.Type)
			case *ast.CaseClause:
				for _, e := range n.List {
					add(e)
				}
			}
			return true
		})
	}
	return out
}

// timeConstantsUsed are the exported constants and variables of package
// suite and package spec whose value is made with package time (a
// timeout, a slack, an epoch) and that the suite's code reads.
func timeConstantsUsed(suiteFiles, specFiles []*ast.File) []string {
	timed := func(files []*ast.File) []string {
		var out []string
		for _, f := range files {
			for _, d := range f.Decls {
				g, ok := d.(*ast.GenDecl)
				if !ok || (g.Tok != token.CONST && g.Tok != token.VAR) {
					continue
				}
				for _, s := range g.Specs {
					vs := s.(*ast.ValueSpec)
					usesTime := false
					for _, v := range vs.Values {
						ast.Inspect(v, func(n ast.Node) bool {
							if sel, ok := n.(*ast.SelectorExpr); ok {
								if id, ok := sel.X.(*ast.Ident); ok && id.Name == "time" {
									usesTime = true
								}
							}
							return true
						})
					}
					for _, n := range vs.Names {
						if usesTime && n.IsExported() {
							out = append(out, n.Name)
						}
					}
				}
			}
		}
		return out
	}
	own, ofSpec := timed(suiteFiles), timed(specFiles)
	var out []string
	for _, f := range suiteFiles {
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.SelectorExpr:
				if id, ok := n.X.(*ast.Ident); ok && id.Name == "spec" && slices.Contains(ofSpec, n.Sel.Name) && !slices.Contains(out, n.Sel.Name) {
					out = append(out, n.Sel.Name)
				}
			case *ast.Ident:
				if slices.Contains(own, n.Name) && !slices.Contains(out, n.Name) {
					out = append(out, n.Name)
				}
			}
			return true
		})
	}
	return out
}
