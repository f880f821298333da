//go:build !unix

package reports

// widthOf cannot ask a terminal here: Width falls back to $COLUMNS.
func widthOf(fd uintptr) (int, bool) { return 0, false }
