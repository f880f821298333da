//go:build unix

package reports

import (
	"os"

	"golang.org/x/sys/unix"
)

// widthOf is the width of the terminal on fd (false: fd is no terminal,
// or one that says it has no columns, as a serial console may).
func widthOf(fd uintptr) (int, bool) {
	ws, err := unix.IoctlGetWinsize(int(fd), unix.TIOCGWINSZ)
	if err != nil || ws.Col == 0 {
		return 0, false
	}
	return int(ws.Col), true
}

// ttyPath is the controlling terminal's path; a variable so that a test
// can name a pseudo-terminal of its own.
var ttyPath = "/dev/tty"

// askTTY is the width of the controlling terminal (false: the process has
// none, as a CI job's has not, or it says it has no columns).
func askTTY() (int, bool) {
	f, err := os.Open(ttyPath)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	return widthOf(f.Fd())
}
