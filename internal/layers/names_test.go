package layers

import (
	"fmt"
	"go/ast"
	"go/token"
	"os"
	"path"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// fileName is a name in a comment that names a file of the kinds this
// repository holds: a word (after a space, a quote or an opening bracket)
// that ends in one of their extensions. Data files a user writes
// (storecheck.json, a history) are not among them.
var fileName = regexp.MustCompile("(?:^|[\\s(`'\"])([A-Za-z0-9_][A-Za-z0-9_./-]*\\.(?:go|md|py|rs|toml|sh))\\b")

// elsewhere are the files comments name that are not this repository's,
// and whose they are.
var elsewhere = map[string]string{
	"persistence.rs": "the lash seed's sqlite store (seeds/001), which the runtime contract is written from",
}

// missingFiles lists, for every comment under root that names a file, the
// names that resolve to no file: neither beside the comment (in its
// package's folder) nor from root. Each is "file:line: name".
func missingFiles(root string) ([]string, error) {
	var out []string
	err := goFiles(root, func(rel string, fset *token.FileSet, f *ast.File) {
		for _, group := range f.Comments {
			for _, c := range group.List {
				for _, m := range fileName.FindAllStringSubmatch(c.Text, -1) {
					name := strings.TrimPrefix(m[1], "./")
					if _, ok := elsewhere[name]; ok || exists(root, path.Join(path.Dir(rel), name)) || exists(root, name) {
						continue
					}
					out = append(out, fmt.Sprintf("%s:%d: %s", rel, fset.Position(c.Pos()).Line, m[1]))
				}
			}
		}
	})
	slices.Sort(out)
	return slices.Compact(out), err
}

func exists(root, rel string) bool {
	_, err := os.Stat(root + "/" + rel)
	return err == nil
}

// Every comment that names a file names one that exists: a file split or
// moved leaves no comment pointing at the old name.
func TestCommentsNameFilesThatExist(t *testing.T) {
	missing, err := missingFiles("../..")
	if err != nil {
		t.Fatal(err)
	}
	if len(missing) > 0 {
		t.Errorf("comments name %d files that do not exist (from the comment's folder or the repository's root):\n%s",
			len(missing), strings.Join(missing, "\n"))
	}
}

// The check finds a name that resolves nowhere, and only that: names
// beside the comment, from the root, of data files and of the seed pass.
func TestMissingFilesCatchesAStaleName(t *testing.T) {
	root := tree(t, map[string]string{
		"docs/guide.md": "# guide\n",
		"store/store.go": "package store\n\n" +
			"// See rules.go, docs/guide.md and the seed's persistence.rs; a user's\n" +
			"// storecheck.json and bugs_<store>_test.go files are not ours.\n" +
			"var A = 1\n\n" +
			"// The specs are in suite/store.go (moved) and `gone.md`.\n" +
			"var B = 2\n",
		"store/rules.go": "package store\n",
	})
	missing, err := missingFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"store/store.go:7: gone.md", "store/store.go:7: suite/store.go"}
	if !slices.Equal(missing, want) {
		t.Fatalf("missing files %q, want %q", missing, want)
	}
}
