package reports

import (
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Progress reports a long run as it goes: on a terminal, one line rewritten
// in place; elsewhere (a CI log), a plain line every interval. It says
// nothing for the first seconds, so short runs stay quiet.
type Progress struct {
	w        io.Writer
	live     bool
	label    string
	total    int64 // units (seeds, operations) the run will do; 0 if unknown
	interval time.Duration
	quietFor time.Duration
	start    time.Time

	done, ops, failures atomic.Int64

	stop chan struct{}
	wg   sync.WaitGroup
}

// ProgressMode says how progress is shown.
type ProgressMode int

const (
	// ProgressAuto: live on a terminal, periodic lines otherwise.
	ProgressAuto ProgressMode = iota
	// ProgressQuiet: nothing.
	ProgressQuiet
	// ProgressLines: periodic plain lines.
	ProgressLines
)

// StartProgress starts reporting on w. total is how many units the run will
// do (0 when unknown), label names them ("seeds", "operations").
func StartProgress(w io.Writer, mode ProgressMode, label string, total int) *Progress {
	p := &Progress{w: w, label: label, total: int64(total), interval: 5 * time.Second, quietFor: 2 * time.Second,
		start: time.Now(), stop: make(chan struct{})}
	if mode == ProgressQuiet {
		return p
	}
	p.live = mode == ProgressAuto && isTerminal(w)
	if p.live {
		p.interval = 500 * time.Millisecond
	}
	p.begin()
	return p
}

func (p *Progress) begin() {
	p.wg.Add(1)
	go p.loop()
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// Done counts finished units; Ops counts operations; Failure counts a
// failure.
func (p *Progress) Done(n int)    { p.done.Add(int64(n)) }
func (p *Progress) Ops(n int)     { p.ops.Add(int64(n)) }
func (p *Progress) Failure()      { p.failures.Add(1) }
func (p *Progress) Failures() int { return int(p.failures.Load()) }

func (p *Progress) loop() {
	defer p.wg.Done()
	t := time.NewTicker(p.interval)
	defer t.Stop()
	printed := false
	for {
		select {
		case <-p.stop:
			if printed && p.live {
				fmt.Fprint(p.w, "\r\033[K")
			}
			return
		case <-t.C:
			if time.Since(p.start) < p.quietFor {
				continue
			}
			printed = true
			line := p.line()
			if p.live {
				fmt.Fprint(p.w, "\r\033[K"+line)
			} else {
				fmt.Fprintln(p.w, line)
			}
		}
	}
}

// line is the progress so far: units done, operations per second, failures
// and the time left when it can be estimated.
func (p *Progress) line() string {
	el := time.Since(p.start)
	done, ops := p.done.Load(), p.ops.Load()
	s := fmt.Sprintf("storecheck: %d", done)
	if p.total > 0 {
		s += fmt.Sprintf("/%d", p.total)
	}
	s += " " + p.label
	if ops > 0 {
		s += fmt.Sprintf(", %.0f ops/s", float64(ops)/el.Seconds())
	}
	s += fmt.Sprintf(", %d failures", p.failures.Load())
	if p.total > 0 && done > 0 && done < p.total {
		left := time.Duration(float64(el) / float64(done) * float64(p.total-done))
		s += fmt.Sprintf(", %v left", left.Round(time.Second))
	}
	return s
}

// Stop ends the reporting and clears a live line.
func (p *Progress) Stop() {
	select {
	case <-p.stop:
		return
	default:
	}
	close(p.stop)
	p.wg.Wait()
}
