package adapters_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/storecheck/storecheck/adapters"
	"github.com/storecheck/storecheck/internal/stores"
	"github.com/storecheck/storecheck/spec"
)

// startMode starts the test binary as the backend mode names, with a reply
// timeout of d.
func startMode(mode string, d time.Duration) (*adapters.Exec, error) {
	return adapters.StartExec(context.Background(), adapters.ExecOptions{
		Command: []string{os.Args[0]}, Env: []string{backendEnv + "=" + mode},
		Timeout: d, Contracts: stores.Contracts()})
}

// kitChild is the kit in a process of its own, so that a test can stop it
// as a loaded machine would: it starts the slow-hello backend with a reply
// timeout of one second and prints what came of it.
func kitChild() {
	e, err := startMode("slow-hello", time.Second)
	if err != nil {
		fmt.Println("error:", strings.ReplaceAll(err.Error(), "\n", " "))
		return
	}
	fmt.Println("ok:", e.Info().Name)
	e.Close()
}

// A kit that was not scheduled past its reply timeout (stopped here with
// SIGSTOP: a loaded machine, a paused VM) wakes with its timer expired and
// the reply already in its pipe. The reply is taken: the stall was the
// kit's, and the backend answered in time. Before the reply timer looked
// at the pipe, the timer won and the backend was blamed ("no reply within
// 1s"), which is how a restart's hello timed out on a loaded machine.
func TestAKitStalledPastTheTimeoutTakesTheReplyThatCame(t *testing.T) {
	for i := range 3 {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), backendEnv+"=kit")
		// A group of its own: the kit's child (the backend) is in the
		// kit's group, and when a group is orphaned (its parent shell
		// exits, as a CI job's may) while a member is stopped, the kernel
		// sends the group SIGHUP. In the test's group that would reach the
		// go test binary's siblings; here it reaches only the kit's.
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		var out strings.Builder
		cmd.Stdout = &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond) // the hello is sent
		cmd.Process.Signal(syscall.SIGSTOP)
		time.Sleep(1500 * time.Millisecond) // past the timeout; the backend answers at 300 ms
		cmd.Process.Signal(syscall.SIGCONT)
		if err := cmd.Wait(); err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(out.String(), "ok: slow") {
			t.Fatalf("try %d: the kit was stopped past its timeout while the backend answered; it said %q, want the hello taken", i, out.String())
		}
	}
}

// A backend that reads its request and never answers is the backend's
// timeout, and the error says what the operating system saw it doing.
func TestATimeoutOfAMuteBackendBlamesItAndSaysWhatItDid(t *testing.T) {
	_, err := startMode("mute", 300*time.Millisecond)
	if err == nil {
		t.Fatal("a mute backend started")
	}
	if adapters.IsStall(err) {
		t.Fatalf("a mute backend's silence is its own, but the kit called it a stall: %v", err)
	}
	if spec.KindOf(err) != spec.ErrTimeout {
		t.Fatalf("kind %q, want timeout: %v", spec.KindOf(err), err)
	}
	if !strings.Contains(err.Error(), "alive and waiting on its stdin, having read the request") {
		t.Fatalf("the error does not say the backend read the request and waits: %v", err)
	}
}

// A backend that spins is alive and running: its timeout, said so.
func TestATimeoutOfABusyBackendSaysItRan(t *testing.T) {
	_, err := startMode("busy", 300*time.Millisecond)
	if err == nil || adapters.IsStall(err) || spec.KindOf(err) != spec.ErrTimeout {
		t.Fatalf("a spinning backend: %v (stall %v), want the backend's timeout", err, adapters.IsStall(err))
	}
	if !strings.Contains(err.Error(), "alive and did not answer") || !strings.Contains(err.Error(), " R") {
		t.Fatalf("the error does not say the backend ran: %v", err)
	}
}

// A StallError is a timeout to every kind check, and found through wraps.
func TestAStallIsATimeoutThatBlamesNobody(t *testing.T) {
	err := fmt.Errorf("restart: %w", &adapters.StallError{What: "hello (request 1)", Why: "no CPU"})
	if !adapters.IsStall(err) || spec.KindOf(err) != spec.ErrTimeout || !errors.Is(err, spec.ErrTimeout) {
		t.Fatalf("%v: stall %v, kind %q", err, adapters.IsStall(err), spec.KindOf(err))
	}
	if adapters.IsStall(spec.Errorf(spec.ErrTimeout, "x")) {
		t.Fatal("a plain timeout is a stall")
	}
}
