//go:build unix

package reports

import (
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

// widthOf asks a real terminal (a pseudo-terminal made for the test) and
// says no for a file that is none.
func TestWidthOfAsksTheTerminal(t *testing.T) {
	pty, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	defer pty.Close()
	if err := unix.IoctlSetWinsize(int(pty.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 40, Col: 77}); err != nil {
		t.Skipf("cannot size the pseudo-terminal: %v", err)
	}
	if n, ok := widthOf(pty.Fd()); !ok || n != 77 {
		t.Errorf("a terminal 77 wide: %d %v", n, ok)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if n, ok := widthOf(w.Fd()); ok {
		t.Errorf("a pipe is no terminal, yet it is %d wide", n)
	}
}
