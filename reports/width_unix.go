//go:build unix

package reports

import "golang.org/x/sys/unix"

// widthOf is the width of the terminal on fd (false: fd is no terminal,
// or one that says it has no columns, as a serial console may).
func widthOf(fd uintptr) (int, bool) {
	ws, err := unix.IoctlGetWinsize(int(fd), unix.TIOCGWINSZ)
	if err != nil || ws.Col == 0 {
		return 0, false
	}
	return int(ws.Col), true
}
