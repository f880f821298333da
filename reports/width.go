package reports

import (
	"os"
	"strconv"
)

// DefaultWidth is the terminal's width when it cannot be told, and the
// width of every saved file: a file's bytes depend on the seed alone, never
// on the terminal that happened to write it.
const DefaultWidth = 100

// terminalWidth asks the terminal on stdout, then on stderr, how wide it
// is (false: neither is a terminal, or the system cannot tell); a variable
// so that tests can stand in for a terminal.
var terminalWidth = askTerminal

// Width is the width of the console a report is printed on: the
// terminal's own when stdout or stderr is one (a resized window, an
// unexported $COLUMNS), else $COLUMNS when it is a number (a shell sets
// it, a CI log may), else DefaultWidth. Every console rendering asks this;
// saved files use DefaultWidth.
func Width() int { return widthFrom(terminalWidth) }

// RelayedWidth is Width for output another process prints for us: go test
// pipes a test binary's stdout and stderr and copies them to the terminal
// it runs in, so neither is a terminal to ask, and the user would have to
// export $COLUMNS by hand. It asks stdout and stderr, then the process's
// controlling terminal (/dev/tty: the one go test was started from; none
// in CI), then $COLUMNS, then DefaultWidth.
func RelayedWidth() int {
	return widthFrom(func() (int, bool) {
		if n, ok := terminalWidth(); ok {
			return n, true
		}
		return ttyWidth()
	})
}

// ttyWidth is the width of the process's controlling terminal (false:
// it has none); a variable so that tests can stand in for one.
var ttyWidth = askTTY

func widthFrom(ask func() (int, bool)) int {
	if n, ok := ask(); ok && n > 0 {
		return n
	}
	if n, err := strconv.Atoi(os.Getenv("COLUMNS")); err == nil && n > 0 {
		return n
	}
	return DefaultWidth
}

// askTerminal is the width of the first of stdout and stderr that is a
// terminal.
func askTerminal() (int, bool) {
	for _, f := range []*os.File{os.Stdout, os.Stderr} {
		if n, ok := widthOf(f.Fd()); ok {
			return n, true
		}
	}
	return 0, false
}
