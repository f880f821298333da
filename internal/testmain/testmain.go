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

// OnTmpfs runs the tests with the temp folder (t.TempDir, os.MkdirTemp
// with "", and the subprocesses the tests start, which inherit TMPDIR) in
// a folder of its own under /dev/shm, where there is one and TMPDIR does
// not already name the temp folder, and removes it after. The kit's tests
// open thousands of SQLite stores whose durability they do not test (power
// cuts go through fault/lossyfs, which keeps its own state): on a disk,
// the fsyncs of those stores were a quarter of go test's time.
func OnTmpfs(tests func() int) int {
	if os.Getenv("TMPDIR") != "" {
		return tests()
	}
	if st, err := os.Stat("/dev/shm"); err != nil || !st.IsDir() {
		return tests()
	}
	dir, err := os.MkdirTemp("/dev/shm", "storecheck-test-")
	if err != nil {
		return tests()
	}
	defer os.RemoveAll(dir)
	os.Setenv("TMPDIR", dir)
	defer os.Unsetenv("TMPDIR")
	return tests()
}
