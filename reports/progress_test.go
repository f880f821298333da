package reports

import (
	"strings"
	"sync"
	"testing"
	"time"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func TestProgressLinesInALog(t *testing.T) {
	var out lockedBuffer
	p := &Progress{w: &out, label: "seeds", total: 10, interval: 10 * time.Millisecond, quietFor: 0, start: time.Now(), stop: make(chan struct{})}
	p.begin()
	p.Done(4)
	p.Ops(400)
	p.Failure()
	time.Sleep(60 * time.Millisecond)
	p.Stop()
	p.Stop()
	got := out.String()
	if !strings.Contains(got, "storecheck: 4/10 seeds, ") || !strings.Contains(got, " ops/s, 1 failures, ") || !strings.Contains(got, " left\n") {
		t.Fatalf("progress lines:\n%s", got)
	}
	if strings.Contains(got, "\r") {
		t.Fatal("a log got terminal control characters")
	}
}

func TestQuietProgressSaysNothing(t *testing.T) {
	var out lockedBuffer
	p := StartProgress(&out, ProgressQuiet, "seeds", 1)
	p.Done(1)
	p.Stop()
	if out.String() != "" {
		t.Fatalf("quiet progress wrote %q", out.String())
	}
}
