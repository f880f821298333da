// Package testmain holds what the kit's own TestMains share.
package testmain

import (
	"fmt"
	"os"
	"path/filepath"
)

// LeavesNoFolder runs the tests, and fails them when they left the folder
// dir (a run's default report folder, relative to the working folder: the
// package's source folder under go test) where none was before. A run from
// a test keeps its files in a temp folder, never in the source tree.
func LeavesNoFolder(dir string, tests func() int) int {
	_, err := os.Stat(dir)
	had := err == nil
	code := tests()
	if _, err := os.Stat(dir); err == nil && !had {
		wd, _ := os.Getwd()
		fmt.Fprintf(os.Stderr, "FAIL: a test left %s/ in %s: give its run a report folder of its own (t.TempDir())\n", dir, filepath.Base(wd))
		return 1
	}
	return code
}
