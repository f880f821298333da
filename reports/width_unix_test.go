//go:build unix

package reports

import (
	"fmt"
	"os"
	"path/filepath"
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

// askTTY opens the controlling terminal by its path and asks its width (a
// pseudo-terminal's far end stands in for /dev/tty), and says no for a
// path that is no terminal or that cannot be opened.
func TestAskTTYOpensTheControllingTerminal(t *testing.T) {
	pty, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	defer pty.Close()
	n, err := unix.IoctlGetInt(int(pty.Fd()), unix.TIOCGPTN)
	if err != nil || unix.IoctlSetPointerInt(int(pty.Fd()), unix.TIOCSPTLCK, 0) != nil {
		t.Skipf("cannot unlock the pseudo-terminal: %v", err)
	}
	if err := unix.IoctlSetWinsize(int(pty.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 40, Col: 83}); err != nil {
		t.Skipf("cannot size the pseudo-terminal: %v", err)
	}
	defer func(p string) { ttyPath = p }(ttyPath)
	ttyPath = fmt.Sprintf("/dev/pts/%d", n)
	if w, ok := askTTY(); !ok || w != 83 {
		t.Errorf("a controlling terminal 83 wide: %d %v", w, ok)
	}
	ttyPath = filepath.Join(t.TempDir(), "tty")
	if err := os.WriteFile(ttyPath, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if w, ok := askTTY(); ok {
		t.Errorf("a file is no terminal, yet it is %d wide", w)
	}
	ttyPath += ".missing"
	if w, ok := askTTY(); ok {
		t.Errorf("no terminal there, yet it is %d wide", w)
	}
}
