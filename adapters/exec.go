package adapters

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/storecheck/storecheck/spec"
)

// Defaults of the exec adapter.
const (
	// DefaultTimeout is how long the kit waits for one reply.
	DefaultTimeout = 5 * time.Second
	// DefaultMaxLine bounds one line of the protocol, either way.
	DefaultMaxLine = 16 << 20
	// stderrTail is how many of the backend's last stderr lines an error
	// quotes.
	stderrTail = 20
)

// ExecOptions says how to run a backend program.
type ExecOptions struct {
	// Command is the program and its arguments.
	Command []string
	// Contracts are the stores the kit speaks with it: a store its hello
	// declares must be one of them.
	Contracts []spec.Contract
	// Env is added to this process's environment for the program.
	Env []string
	// Timeout bounds the wait for each reply (DefaultTimeout when 0). A
	// backend that does not reply in time is killed: a backend failure.
	Timeout time.Duration
	// MaxLine bounds one line of stdout, and one of stdin: a request
	// longer is not sent (DefaultMaxLine when 0).
	MaxLine int
	// Stderr, when set, receives a copy of the backend's stderr.
	Stderr io.Writer
}

// Exec is a Driver that is a program speaking the wire protocol on its
// stdin and stdout. Its Targets send each operation as a request with the
// kit's clock (the suite's Options.Clock) in now_ms.
//
// Anything the backend does that the protocol does not allow (a line that
// is not JSON, a reply to an unknown id, an unknown error kind, a result of
// the wrong type, no reply in time, an exit nobody asked for) ends the
// process, fails the operations in flight with an indefinite kind, and is
// kept as the backend's failure (Err). A crash the kit caused (Kill, an
// armed crash point) is not a failure: the operation in flight ends with
// spec.ErrCrashed, and Restart starts the program again on the same files.
type Exec struct {
	o    ExecOptions
	mu   sync.Mutex
	p    *process
	info Hello
	err  error
}

var _ Driver = (*Exec)(nil)

// Sibling starts another process of the same program with the same
// options: the way a store's deployment runs one process per handle on one
// database, so that races between processes are real whatever the
// backend's own concurrency.
func (e *Exec) Sibling(ctx context.Context) (*Exec, error) { return StartExec(ctx, e.o) }

// Siblings is a Driver that can start more processes of itself (an Exec).
type Siblings interface {
	Driver
	Sibling(ctx context.Context) (*Exec, error)
}

// StartExec starts the program and shakes hands with it. An error here is a
// backend failure: the program would not start or does not speak the
// protocol.
func StartExec(ctx context.Context, o ExecOptions) (*Exec, error) {
	if len(o.Command) == 0 {
		return nil, errors.New("exec backend: no command")
	}
	if len(o.Contracts) == 0 {
		return nil, errors.New("exec backend: no contracts to speak (ExecOptions.Contracts)")
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.MaxLine <= 0 {
		o.MaxLine = DefaultMaxLine
	}
	e := &Exec{o: o}
	if err := e.start(ctx); err != nil {
		return nil, err
	}
	return e, nil
}

func (e *Exec) start(ctx context.Context) error {
	p, err := spawn(e.o, e.recordFailure)
	if err != nil {
		return spec.Errorf(spec.ErrBackendFailure, "start %q: %w", strings.Join(e.o.Command, " "), err)
	}
	raw, err := p.call(ctx, &Request{Type: TypeHello, Version: ProtocolVersion}, "hello")
	if err == nil && raw.Error != nil {
		err = p.violation(fmt.Sprintf("hello: the backend refused the handshake: %s: %s", raw.Error.Kind, raw.Error.Message))
	}
	var info Hello
	if err == nil {
		if derr := strictUnmarshal(raw.Result, &info); derr != nil {
			err = p.violation(fmt.Sprintf("hello: the answer is not a hello (%v): %s", derr, clip(raw.Result, 200)))
		}
	}
	if err == nil {
		if why := info.check(); why != "" {
			err = p.violation("hello: " + why)
		}
	}
	if err == nil && info.Version != ProtocolVersion {
		err = p.violation(fmt.Sprintf("hello: the backend speaks protocol version %d, the kit %d", info.Version, ProtocolVersion))
	}
	if err == nil {
		if cerr := info.Capabilities.CheckValues(); cerr != nil {
			err = p.violation("hello: " + cerr.Error())
		}
	}
	if err == nil {
		for _, s := range info.Stores {
			if _, ok := contractIn(e.o.Contracts, s); !ok {
				err = p.violation(fmt.Sprintf("hello: the backend declares an unknown store %q", s))
				break
			}
		}
	}
	if err != nil {
		p.kill()
		<-p.done
		return err
	}
	if info.Name == "" {
		info.Name = strings.Join(e.o.Command, " ")
	}
	e.mu.Lock()
	e.p, e.info = p, info
	e.mu.Unlock()
	return nil
}

// recordFailure keeps the backend's first failure.
func (e *Exec) recordFailure(err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.err == nil {
		e.err = err
	}
}

func (e *Exec) proc() *process {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.p
}

// Info is what the backend declared in its hello.
func (e *Exec) Info() Hello {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.info
}

// Err is the backend's first failure (nil when it kept to the protocol).
func (e *Exec) Err() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.err
}

// Contract is the contract of store, when the kit speaks it and the
// backend's hello declares it.
func (e *Exec) Contract(store string) (spec.Contract, bool) {
	if !slices.Contains(e.Info().Stores, store) {
		return spec.Contract{}, false
	}
	return contractIn(e.o.Contracts, store)
}

// PID is the backend process's id.
func (e *Exec) PID() int { return e.proc().cmd.Process.Pid }

// Open opens a database of store on the backend.
func (e *Exec) Open(ctx context.Context, store string, o spec.OpenOptions) (Target, error) {
	c, ok := e.Contract(store)
	if !ok {
		return nil, fmt.Errorf("exec backend: unknown store %q", store)
	}
	clock := o.Clock
	if clock == nil {
		clock = clockwork.NewRealClock()
	}
	p := e.proc()
	// timeout_ms is o.Timeout when the caller gives one (the kit then
	// waits for the answer as long as its context allows), else how long
	// the kit waits.
	req := &Request{Type: TypeOpen, Store: store, Path: o.Path, InMemory: o.Path == "", NowMS: clock.Now().UnixMilli(),
		TimeoutMS: o.Timeout.Milliseconds()}
	what := "open " + store
	rep, err := p.call(ctx, req, what)
	if err != nil {
		return nil, err
	}
	if rep.Error != nil {
		if err := p.checkKind(c, rep.Error, what); err != nil {
			return nil, err
		}
		return nil, &spec.Error{Kind: rep.Error.Kind, Message: rep.Error.Message}
	}
	var opened Opened
	if err := strictUnmarshal(rep.Result, &opened); err != nil || opened.Handle == 0 {
		return nil, p.violation(fmt.Sprintf("%s: want {\"handle\": N} with N > 0, the backend answered %s", what, clip(rep.Result, 200)))
	}
	return &execTarget{p: p, c: c, handle: opened.Handle, clock: clock, yields: e.Info().CapabilitiesOf(store).Yields}, nil
}

// Close ends the backend: its stdin closes, and it has the timeout to exit
// before it is killed.
func (e *Exec) Close() error {
	p := e.proc()
	p.expect()
	p.stdin.Close()
	select {
	case <-p.done:
	case <-time.After(e.o.Timeout):
		p.kill()
		<-p.done
	}
	return nil
}

// Expect tells the adapter that the process may end from now on, by the
// kit's doing (a power cut under it, a kill to come): its end is then a
// fault, not a backend failure.
func (e *Exec) Expect() { e.proc().expect() }

// Kill ends the backend process with SIGKILL, as a fault: the operations in
// flight end with spec.ErrCrashed, and it is not a backend failure.
func (e *Exec) Kill() error {
	p := e.proc()
	p.expect()
	p.kill()
	<-p.done
	return nil
}

// Restart kills the backend process if it still runs and starts the program
// again: the same command, the same files. Targets opened before are dead;
// open them again.
func (e *Exec) Restart(ctx context.Context) error {
	if err := e.Kill(); err != nil {
		return err
	}
	return e.start(ctx)
}

// ArmCrash arms the backend's crash point: the process exits the nth time
// it reaches it. The exit that follows is a fault, not a backend failure.
func (e *Exec) ArmCrash(ctx context.Context, point string, nth int) error {
	p := e.proc()
	rep, err := p.call(ctx, &Request{Type: TypeArmCrash, Point: point, Nth: nth}, "arm_crash "+point)
	if err != nil {
		return err
	}
	if rep.Error != nil {
		return &spec.Error{Kind: rep.Error.Kind, Message: rep.Error.Message}
	}
	p.expect()
	return nil
}

// WriteForeignSchema asks the backend to write, at path, a new file of store
// that its own open reads as carrying marker at version (the request
// write_foreign_schema, for a backend that declares client_schema_writer).
func (e *Exec) WriteForeignSchema(ctx context.Context, store, path, marker string, version int) error {
	c, ok := e.Contract(store)
	if !ok {
		return fmt.Errorf("exec backend: unknown store %q", store)
	}
	p := e.proc()
	what := fmt.Sprintf("write_foreign_schema %s %s version %d", store, marker, version)
	rep, err := p.call(ctx, &Request{Type: TypeWriteForeignSchema, Store: store, Path: path, Marker: marker, Version: version}, what)
	if err != nil {
		return err
	}
	if rep.Error != nil {
		if err := p.checkKind(c, rep.Error, what); err != nil {
			return err
		}
		return &spec.Error{Kind: rep.Error.Kind, Message: rep.Error.Message}
	}
	if len(rep.Result) > 0 && string(rep.Result) != "null" {
		return p.violation(fmt.Sprintf("%s: want null, the backend answered %s", what, clip(rep.Result, 200)))
	}
	return nil
}

// execTarget is one open database of an Exec backend.
type execTarget struct {
	p      *process
	c      spec.Contract
	handle uint64
	clock  clockwork.Clock
	// yields: the backend declared yield points, so an operation whose
	// context has a yielder asks for them.
	yields bool
}

func (t *execTarget) Apply(ctx context.Context, op spec.Op) (any, error) {
	what := t.c.Name + " " + op.Name()
	if zero, ok := t.c.Op(op.Name()); !ok || fmt.Sprintf("%T", zero) != fmt.Sprintf("%T", op) {
		return nil, fmt.Errorf("%s: %T is not an operation of the %s store", what, op, t.c.Name)
	}
	args, err := EncodeArgs(op)
	if err != nil {
		return nil, fmt.Errorf("%s: encode args: %w", what, err)
	}
	req := &Request{Type: TypeOp, Handle: t.handle, Store: t.c.Name, Op: op.Name(), Args: args, NowMS: t.clock.Now().UnixMilli(),
		Yields: t.yields && spec.YielderOf(ctx) != nil}
	rep, err := t.p.call(ctx, req, what)
	if err != nil {
		return nil, err
	}
	what = fmt.Sprintf("%s (request %d)", what, req.ID)
	if rep.Error != nil {
		if err := t.p.checkKind(t.c, rep.Error, what); err != nil {
			return nil, err
		}
		return nil, &spec.Error{Kind: rep.Error.Kind, Message: rep.Error.Message}
	}
	v, err := DecodeResult(op, rep.Result)
	if err != nil {
		return nil, t.p.violation(fmt.Sprintf("%s: the result has the wrong type: %v", what, err))
	}
	return v, nil
}

func (t *execTarget) Close() error {
	rep, err := t.p.call(context.Background(), &Request{Type: TypeClose, Handle: t.handle}, "close "+t.c.Name)
	if err != nil {
		return err
	}
	if rep.Error != nil {
		return &spec.Error{Kind: rep.Error.Kind, Message: rep.Error.Message}
	}
	return nil
}

// process is one run of the backend program.
type process struct {
	o       ExecOptions
	cmd     *exec.Cmd
	stdin   *os.File // the write end of the backend's stdin
	outR    *os.File // the read end of its stdout
	onFatal func(error)

	wmu sync.Mutex // serializes writes to stdin

	mu      sync.Mutex
	next    uint64
	pending map[uint64]*call
	// abandoned are the requests whose callers stopped waiting, by id, with
	// their type: a late reply to one is dropped, and a handle a late open
	// reply opened is closed.
	abandoned map[uint64]string
	cause     error // the first violation, before the process is gone
	expected  bool  // the kit asked for the exit (Kill, arm_crash, Close)
	tail      []string

	reaped atomic.Bool   // its exit was collected: its pid is free
	done   chan struct{} // closed when the process is gone and pending calls are failed
	err    error         // why the process is gone (set before done closes)
}

type call struct {
	// yields: the request asked to be paused at its yield points.
	yields bool
	what   string
	// typ is the request's type.
	typ string
	ch  chan *Reply
}

func spawn(o ExecOptions, onFatal func(error)) (*process, error) {
	cmd := exec.Command(o.Command[0], o.Command[1:]...)
	cmd.Env = append(os.Environ(), o.Env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	// Plain pipes, so that a timeout can ask how many bytes wait in each
	// (procstate.go).
	inR, stdin, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdin = inR
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	cmd.Stdout, cmd.Stderr = outW, errW
	if err := cmd.Start(); err != nil {
		for _, f := range []*os.File{inR, stdin, outR, outW, errR, errW} {
			f.Close()
		}
		return nil, err
	}
	inR.Close()
	outW.Close()
	errW.Close()
	p := &process{o: o, cmd: cmd, stdin: stdin, outR: outR, onFatal: onFatal, pending: map[uint64]*call{},
		abandoned: map[uint64]string{}, done: make(chan struct{})}
	outDone, errDone := make(chan struct{}), make(chan struct{})
	go func() { defer close(outDone); p.readReplies(outR) }()
	go func() { defer close(errDone); p.readStderr(errR) }()
	go func() {
		werr := cmd.Wait()
		p.reaped.Store(true)
		// A child of the backend may hold its pipes open: stop reading
		// soon after the backend itself is gone.
		for _, c := range []struct {
			done chan struct{}
			f    *os.File
		}{{outDone, outR}, {errDone, errR}} {
			select {
			case <-c.done:
			case <-time.After(200 * time.Millisecond):
				c.f.Close()
				<-c.done
			}
		}
		outR.Close()
		errR.Close()
		p.wmu.Lock()
		p.stdin.Close()
		p.wmu.Unlock()
		p.finish(werr)
	}()
	return p, nil
}

// readReplies reads stdout: one reply a line, each to its caller.
func (p *process) readReplies(r io.Reader) {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := readLine(br, p.o.MaxLine)
		if errors.Is(err, errLineTooLong) {
			p.violate(fmt.Sprintf("the backend wrote a stdout line longer than %d bytes%s: %s", p.o.MaxLine, p.inFlight(), clip(line, 120)))
			return
		}
		if len(strings.TrimSpace(string(line))) > 0 && !p.deliver(line) {
			return
		}
		if err != nil {
			return
		}
	}
}

var errLineTooLong = errors.New("line too long")

// readLine reads one line of at most max bytes (without its newline).
func readLine(br *bufio.Reader, max int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		line = append(line, chunk...)
		if len(line) > max {
			return line, errLineTooLong
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return line, err
	}
}

// deliver hands a reply to its caller; false when the line broke the
// protocol (the backend is then being killed).
func (p *process) deliver(line []byte) bool {
	var rep Reply
	if err := json.Unmarshal(line, &rep); err != nil || rep.ID == nil {
		why := "is not JSON"
		if err == nil {
			why = "has no id"
		}
		p.violate(fmt.Sprintf("a stdout line %s (%s)%s: %s", why, errText(err), p.inFlight(), clip(line, 200)))
		return false
	}
	id := *rep.ID
	if why := replyShape(line, &rep); why != "" {
		p.mu.Lock()
		what := fmt.Sprintf("request %d", id)
		if c := p.pending[id]; c != nil {
			what = fmt.Sprintf("%s (request %d)", c.what, id)
		}
		p.mu.Unlock()
		p.violate(fmt.Sprintf("%s: the reply is not one the protocol allows: %s%s: %s", what, why, p.inFlight(), clip(line, 200)))
		return false
	}
	p.mu.Lock()
	c := p.pending[id]
	abandoned, wasAbandoned := p.abandoned[id]
	if rep.Yield == "" || c == nil || !c.yields {
		delete(p.pending, id)
		delete(p.abandoned, id)
	}
	p.mu.Unlock()
	if rep.Yield != "" && c != nil && !c.yields {
		p.violate(fmt.Sprintf("a yield line for request %d, which asked for no yields%s: %s", id, p.inFlight(), clip(line, 200)))
		return false
	}
	switch {
	case c != nil:
		c.ch <- &rep
	case wasAbandoned:
		// A reply the caller stopped waiting for: dropped, but a handle
		// it opened is closed, so that nothing the caller never saw
		// stays open (and holds its database).
		if abandoned == TypeOpen && rep.Error == nil {
			var opened Opened
			if strictUnmarshal(rep.Result, &opened) == nil && opened.Handle > 0 {
				go p.closeLate(opened.Handle)
			}
		}
	default:
		p.violate(fmt.Sprintf("a reply to id %d, which is no request in flight%s: %s", id, p.inFlight(), clip(line, 200)))
		return false
	}
	return true
}

// replyShape says what is wrong with a reply line, strictly decoded: an
// unknown member, a missing one (an error's kind and message), or not
// exactly one of result, error and yield ("" when nothing).
func replyShape(line []byte, rep *Reply) string {
	if err := strictUnmarshal(line, &Reply{}); err != nil {
		return err.Error()
	}
	n := 0
	for _, has := range []bool{rep.Result != nil, rep.Error != nil, rep.Yield != ""} {
		if has {
			n++
		}
	}
	switch {
	case n == 0:
		return `it has none of "result", "error" and "yield" (an operation that yields nothing answers "result": null)`
	case n > 1:
		return `it has more than one of "result", "error" and "yield"`
	}
	return ""
}

func errText(err error) string {
	if err == nil {
		return "no error"
	}
	return err.Error()
}

// inFlight names the requests in flight, for an error message.
func (p *process) inFlight() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var names []string
	for id, c := range p.pending {
		names = append(names, fmt.Sprintf("%s (request %d)", c.what, id))
	}
	if len(names) == 0 {
		return ""
	}
	return "; in flight: " + strings.Join(names, ", ")
}

func (p *process) readStderr(r io.Reader) {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := readLine(br, 64<<10)
		if len(line) > 0 {
			if p.o.Stderr != nil {
				p.o.Stderr.Write(line)
			}
			p.mu.Lock()
			p.tail = append(p.tail, strings.TrimRight(string(line), "\n"))
			if len(p.tail) > stderrTail {
				p.tail = p.tail[len(p.tail)-stderrTail:]
			}
			p.mu.Unlock()
		}
		if err != nil && !errors.Is(err, errLineTooLong) {
			return
		}
	}
}

// stderrLines is the quote of the backend's last stderr lines.
func (p *process) stderrLines() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.tail) == 0 {
		return "\n  (the backend wrote nothing on stderr)"
	}
	return "\n  last stderr lines of the backend:\n    | " + strings.Join(p.tail, "\n    | ")
}

// violation records that the backend broke the protocol, kills it, and
// returns the failure every operation in flight ends with.
func (p *process) violation(msg string) error {
	p.violate(msg)
	<-p.done
	return p.err
}

// violate records that the backend broke the protocol and kills it,
// without waiting (the reader calls it: the end waits for the reader).
func (p *process) violate(msg string) {
	p.mu.Lock()
	if p.cause == nil {
		p.cause = spec.Errorf(spec.ErrBackendFailure, "%s", msg)
	}
	p.mu.Unlock()
	p.kill()
}

func (p *process) expect() {
	p.mu.Lock()
	p.expected = true
	p.mu.Unlock()
}

func (p *process) kill() {
	if p.cmd.Process == nil {
		return
	}
	if p.reaped.Load() {
		// Its pid, and so its group's id, may be another process's by
		// now.
		return
	}
	syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
	p.cmd.Process.Kill() // through a pidfd: never another process
}

// finish runs once the process is gone: it settles why, fails every call
// in flight, and reports a failure the kit did not ask for.
func (p *process) finish(werr error) {
	p.mu.Lock()
	cause, expected := p.cause, p.expected
	var names []string
	for id, c := range p.pending {
		names = append(names, fmt.Sprintf("%s (request %d)", c.what, id))
	}
	p.mu.Unlock()
	status := "exited"
	if werr != nil {
		status = "ended: " + werr.Error()
	}
	inFlight := ""
	if len(names) > 0 {
		inFlight = " with " + strings.Join(names, ", ") + " in flight"
	}
	var err error
	switch {
	case cause != nil:
		err = fmt.Errorf("%w%s", cause, p.stderrLines())
	case expected:
		err = spec.Errorf(spec.ErrCrashed, "the backend process %s (a fault the kit injected)%s", status, inFlight)
	default:
		err = spec.Errorf(spec.ErrCrashed, "the backend process %s unexpectedly%s%s", status, inFlight, p.stderrLines())
	}
	p.err = err
	if cause != nil || !expected {
		p.onFatal(err)
	}
	close(p.done)
}

// call sends req and waits for its reply, the backend's end, the caller's
// context, or the timeout.
func (p *process) call(ctx context.Context, req *Request, what string) (*Reply, error) {
	select {
	case <-p.done:
		return nil, &spec.Error{Kind: spec.KindOf(p.err), Message: fmt.Sprintf("%s: the backend process is gone (%s)", what, firstLine(p.err.Error())), Cause: p.err}
	default:
	}
	timeout := p.o.Timeout
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) < timeout {
		timeout = max(time.Until(dl), time.Millisecond)
	}
	c := &call{what: what, typ: req.Type, ch: make(chan *Reply, 1), yields: req.Yields}
	p.mu.Lock()
	p.next++
	req.ID = p.next
	p.pending[req.ID] = c
	p.mu.Unlock()
	if (req.Type == TypeOpen || req.Type == TypeOp) && req.TimeoutMS == 0 {
		req.TimeoutMS = timeout.Milliseconds()
	}
	line, err := json.Marshal(req)
	if err != nil {
		p.forget(req.ID, false)
		return nil, fmt.Errorf("%s: encode request: %w", what, err)
	}
	if len(line) > p.o.MaxLine {
		// The protocol bounds every line, the kit's too (docs/protocol.md):
		// a request past it is the kit's input to refuse, never sent, and
		// no failure of the backend's.
		p.forget(req.ID, false)
		return nil, spec.NotSent(spec.Errorf(spec.ErrBadRequest, "%s: the request is %d bytes, past the protocol's line limit of %d: not sent",
			what, len(line), p.o.MaxLine))
	}
	p.wmu.Lock()
	_, werr := p.stdin.Write(append(line, '\n'))
	p.wmu.Unlock()
	if werr != nil {
		// The backend is gone or going: its end says why.
		select {
		case <-p.done:
		case <-time.After(p.o.Timeout):
			p.kill()
			<-p.done
		}
		return nil, fmt.Errorf("%s: %w", what, p.err)
	}
	timer := time.NewTimer(p.o.Timeout)
	defer timer.Stop()
	for {
		var rep *Reply
		select {
		case rep = <-c.ch:
		case <-p.done:
			return nil, fmt.Errorf("%s (request %d): %w", what, req.ID, p.err)
		case <-ctx.Done():
			p.forget(req.ID, true)
			return nil, spec.Errorf(spec.ErrCanceled, "%s (request %d): the caller stopped waiting: %w", what, req.ID, ctx.Err())
		case <-timer.C:
			if rep = p.silent(c, what, req.ID); rep == nil {
				return nil, p.err
			}
		}
		if rep.Yield == "" {
			return rep, nil
		}
		// Paused at a yield point: the kit's scheduler decides when it
		// goes on, and the time it waits is not the backend's.
		timer.Stop()
		if err := spec.Yield(ctx, rep.Yield); err != nil {
			p.forget(req.ID, true)
			return nil, spec.Errorf(spec.ErrCrashed, "%s (request %d): stopped at the yield point %s: %v", what, req.ID, rep.Yield, err)
		}
		resume, _ := json.Marshal(Request{ID: req.ID, Type: TypeResume})
		p.wmu.Lock()
		_, werr := p.stdin.Write(append(resume, '\n'))
		p.wmu.Unlock()
		if werr != nil {
			return nil, fmt.Errorf("%s (request %d): resume: %w", what, req.ID, p.err)
		}
		timer.Reset(p.o.Timeout)
	}
}

// silent decides about a request whose reply timer ran out: the process is
// watched for a short grace (graceFor), and a reply that comes in it is
// taken after all (a loaded machine's lateness is no verdict). Otherwise
// the process is killed, with a cause that says what it was doing: a
// timeout the backend is blamed for, or a StallError when the stall was the
// kit's or the machine's. It answers the late reply, or nil when the
// process is gone (p.err says why).
func (p *process) silent(c *call, what string, id uint64) *Reply {
	var late *Reply
	why, kit, came := p.stallVerdict(graceFor(p.o.Timeout), func(d time.Duration) bool {
		select {
		case late = <-c.ch:
			return true
		case <-time.After(d):
			return false
		}
	})
	if came {
		return late
	}
	name := fmt.Sprintf("%s (request %d)", what, id)
	p.mu.Lock()
	if p.cause == nil {
		if kit {
			p.cause = &StallError{What: name, Why: why}
		} else {
			p.cause = spec.Errorf(spec.ErrTimeout, "%s: no reply within %s: %s", name, p.o.Timeout, why)
		}
	}
	p.mu.Unlock()
	p.kill()
	<-p.done
	return nil
}

// forget drops a call; abandon keeps its id known so a late reply is no
// protocol violation.
func (p *process) forget(id uint64, abandon bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c := p.pending[id]
	delete(p.pending, id)
	if abandon {
		p.abandoned[id] = ""
		if c != nil {
			p.abandoned[id] = c.typ
		}
	}
}

// closeLate closes a handle that the late reply to an abandoned open
// opened: a close request nobody waits for (its reply is dropped).
func (p *process) closeLate(handle uint64) {
	p.mu.Lock()
	p.next++
	id := p.next
	p.abandoned[id] = TypeClose
	p.mu.Unlock()
	line, _ := json.Marshal(Request{ID: id, Type: TypeClose, Handle: handle})
	p.wmu.Lock()
	p.stdin.Write(append(line, '\n'))
	p.wmu.Unlock()
}

// checkKind makes sure an error kind a backend sent is one it may send for
// this store: one of the contract's, or bad_request.
func (p *process) checkKind(c spec.Contract, e *WireError, what string) error {
	if c.HasKind(e.Kind) || e.Kind == spec.ErrBadRequest {
		return nil
	}
	return p.violation(fmt.Sprintf("%s: the backend replied with error kind %q, which is not one of the %s store's kinds (%s) nor bad_request; its message: %s",
		what, e.Kind, c.Name, kindList(c.Kinds), e.Message))
}

func kindList(ks []spec.Kind) string {
	var s []string
	for _, k := range ks {
		s = append(s, string(k))
	}
	return strings.Join(s, ", ")
}

func firstLine(s string) string {
	first, _, _ := strings.Cut(s, "\n")
	return first
}
