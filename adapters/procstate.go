package adapters

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	"github.com/storecheck/storecheck/spec"
)

// A timeout is a verdict on the backend only when the backend had its
// chance: it was running, scheduled, and not held by the kernel on the
// kit's behalf. When the reply timer fires, the kit asks the operating
// system what the process was doing (Linux's /proc) over a short grace
// window, and says so in the error; when the stall is the kit's or the
// machine's, the error is a *StallError and the run is inconclusive, never
// a backend failure.

// StallError is a timeout the kit cannot blame on the backend: the reply
// was already in the kit's pipe, the process was still starting, blocked in
// a file system the kit serves (the forgetful file system's server is a
// process of the kit), or waiting for a CPU the machine did not give it.
// Its kind is timeout (indefinite, like every timeout); a layer that meets
// one reports the check inconclusive (exit 4).
type StallError struct {
	What string // the request, "hello (request 1)"
	Why  string // what the operating system said
}

func (e *StallError) Error() string {
	return fmt.Sprintf("timeout: %s: no reply in time, and the stall was not the backend's: %s", e.What, e.Why)
}

// Unwrap makes the stall a timeout for spec.KindOf and errors.Is.
func (e *StallError) Unwrap() error { return spec.ErrTimeout }

// IsStall reports whether err is, or wraps, a StallError.
func IsStall(err error) bool {
	var s *StallError
	return errors.As(err, &s)
}

// graceFor is how long the kit watches a silent process before it decides
// whose stall it is: long enough to see whether it gets a CPU.
func graceFor(timeout time.Duration) time.Duration {
	return min(max(timeout/10, 100*time.Millisecond), time.Second)
}

// taskState is one thread of a process as /proc shows it.
type taskState struct {
	tid     int
	state   byte   // R, S, D, T, Z, ...
	wchan   string // the kernel function it sleeps in ("" when running)
	syscall int    // the system call it is in (-1 when none or unknown)
	arg0    uint64 // its first argument (for read: the fd)
	cpu     time.Duration
	runq    time.Duration // time runnable but waiting for a CPU
}

// procSnapshot is every thread of pid; ok is false when /proc has no such
// process (it is gone, or this is no Linux).
func procSnapshot(pid int) (tasks []taskState, ok bool) {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, false
	}
	for _, e := range ents {
		tid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		t := taskState{tid: tid, syscall: -1}
		base := filepath.Join(dir, e.Name())
		if b, err := os.ReadFile(filepath.Join(base, "stat")); err == nil {
			// pid (comm) state ...: comm may hold spaces and parentheses.
			if i := strings.LastIndexByte(string(b), ')'); i >= 0 && i+2 < len(b) {
				t.state = b[i+2]
			}
		}
		if b, err := os.ReadFile(filepath.Join(base, "wchan")); err == nil && string(b) != "0" {
			t.wchan = strings.TrimSpace(string(b))
		}
		if b, err := os.ReadFile(filepath.Join(base, "syscall")); err == nil {
			f := strings.Fields(string(b))
			if len(f) > 1 {
				if n, err := strconv.Atoi(f[0]); err == nil {
					t.syscall = n
				}
				t.arg0, _ = strconv.ParseUint(strings.TrimPrefix(f[1], "0x"), 16, 64)
			}
		}
		if b, err := os.ReadFile(filepath.Join(base, "schedstat")); err == nil {
			f := strings.Fields(string(b))
			if len(f) >= 2 {
				cpu, _ := strconv.ParseInt(f[0], 10, 64)
				runq, _ := strconv.ParseInt(f[1], 10, 64)
				t.cpu, t.runq = time.Duration(cpu), time.Duration(runq)
			}
		}
		tasks = append(tasks, t)
	}
	slices.SortFunc(tasks, func(a, b taskState) int { return a.tid - b.tid })
	return tasks, true
}

func totals(ts []taskState) (cpu, runq time.Duration) {
	for _, t := range ts {
		cpu += t.cpu
		runq += t.runq
	}
	return cpu, runq
}

// inFUSE reports whether a thread waits on a FUSE server.
func (t taskState) inFUSE() bool {
	return strings.Contains(t.wchan, "fuse") || t.wchan == "request_wait_answer"
}

// pipeUnread is how many bytes wait unread in the pipe f is an end of (-1
// when it cannot be asked).
func pipeUnread(f *os.File) int {
	if f == nil {
		return -1
	}
	sc, err := f.SyscallConn()
	if err != nil {
		return -1
	}
	n := -1
	sc.Control(func(fd uintptr) {
		var v int32
		if _, _, errno := syscall.Syscall(syscall.SYS_IOCTL, fd, syscall.TIOCINQ, uintptr(unsafe.Pointer(&v))); errno == 0 {
			n = int(v)
		}
	})
	return n
}

// isExecve and isRead tell the system calls by this machine's numbers
// (/proc/PID/syscall gives the number): syscall's constants are the
// architecture's own.
func isExecve(n int) bool { return n == syscall.SYS_EXECVE }
func isRead(n int) bool   { return n == syscall.SYS_READ }

// stallVerdict watches the silent process over grace and says what it was
// doing: kit is true when the stall is not the backend's. It is called with
// the reply timer expired; replied reports whether the reply came after
// all (then nothing is blamed).
func (p *process) stallVerdict(grace time.Duration, replied func(time.Duration) bool) (why string, kit bool, late bool) {
	pid := p.cmd.Process.Pid
	before, ok := procSnapshot(pid)
	inPipe := pipeUnread(p.outR)
	if replied(grace) {
		return "", false, true
	}
	after, ok2 := procSnapshot(pid)
	if !ok || !ok2 {
		select {
		case <-p.done:
			return "the process had exited", false, false
		default:
		}
		return "the operating system could not be asked what the process was doing (no /proc)", false, false
	}
	if unread := max(inPipe, pipeUnread(p.outR)); unread > 0 {
		return fmt.Sprintf("the backend had written %d bytes the kit had not read yet: the kit's reader was not scheduled in time", unread), true, false
	}
	cpu0, runq0 := totals(before)
	cpu1, runq1 := totals(after)
	cpu, runq := cpu1-cpu0, runq1-runq0
	var states []string
	for _, t := range after {
		s := fmt.Sprintf("thread %d %c", t.tid, t.state)
		if t.wchan != "" {
			s += " in " + t.wchan
		}
		states = append(states, s)
	}
	seen := fmt.Sprintf("over %s it ran %s and waited %s for a CPU; %s", grace, cpu.Round(time.Millisecond), runq.Round(time.Millisecond), strings.Join(states, ", "))
	for _, t := range after {
		switch {
		case t.state == 'D' && t.inFUSE():
			return "the process was blocked in a FUSE file system's server, which answers for the backend's files (" + seen + ")", true, false
		case t.state == 'D':
			return "the process was blocked in the kernel, uninterruptibly (" + seen + ")", true, false
		case isExecve(t.syscall):
			return "the process had not started the program yet: it was inside execve (" + seen + ")", true, false
		}
	}
	if runq > grace/2 && cpu < grace/10 {
		return "the process was ready to run but the machine gave it no CPU (" + seen + ")", true, false
	}
	if len(after) > 0 && after[0].state == 'S' && isRead(after[0].syscall) && after[0].arg0 == 0 {
		unread := pipeUnread(p.stdin)
		if unread > 0 {
			return fmt.Sprintf("the backend was alive, its main thread waiting on its stdin, with %d bytes of requests it had not read (%s)", unread, seen), false, false
		}
		return "the backend was alive and waiting on its stdin, having read the request (" + seen + ")", false, false
	}
	return "the backend was alive and did not answer (" + seen + ")", false, false
}
