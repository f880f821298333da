//go:build !unix

package reports

// widthOf cannot ask a terminal here: Width falls back to $COLUMNS.
func widthOf(fd uintptr) (int, bool) { return 0, false }

// askTTY cannot ask a controlling terminal here either.
func askTTY() (int, bool) { return 0, false }
