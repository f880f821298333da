package adapters

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/storecheck/storecheck/spec"
)

// ServeOptions tunes Serve.
type ServeOptions struct {
	// ArmCrash arms a crash point: the process must exit, without closing
	// anything, the nth time it reaches point. Nil when the backend has no
	// crash points.
	ArmCrash func(point string, nth int) error
	// Log receives a line for every request that could not be taken.
	Log io.Writer
}

// Serve answers the wire protocol on in and out with b's stores until in
// ends (or ctx does); then it waits for the requests in flight and closes
// every handle still open. Requests run concurrently; replies are written
// as they finish.
func Serve(ctx context.Context, in io.Reader, out io.Writer, b Driver, o ServeOptions) error {
	if o.Log == nil {
		o.Log = io.Discard
	}
	s := &server{b: b, o: o, w: bufio.NewWriter(out), handles: map[uint64]*handle{}, resumes: map[uint64]chan struct{}{}}
	r := bufio.NewReaderSize(in, 64<<10)
	// Requests run on workers: an idle one takes the next request, and a
	// new one starts when all are busy, so any number may be in flight.
	// Workers are kept (with the stacks SQLite grew) rather than started
	// per request.
	var wg sync.WaitGroup
	jobs := make(chan *Request)
	work := func(req *Request) {
		res, err := s.handle(ctx, req)
		s.reply(req.ID, res, err)
	}
	var readErr error
	for ctx.Err() == nil {
		line, err := r.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			req := new(Request)
			if err := json.Unmarshal(line, req); err != nil {
				fmt.Fprintf(o.Log, "storecheck serve: a request that is not JSON: %v: %s\n", err, clip(line, 200))
				s.reply(req.ID, nil, spec.Errorf(spec.ErrBadRequest, "the request is not a JSON object: %v", err))
			} else if err := strictUnmarshal(line, &Request{}); err != nil {
				// Strict both ways: a request the protocol does not
				// define (an unknown or a missing member) is refused
				// with what was wrong, as the kit refuses such a reply.
				fmt.Fprintf(o.Log, "storecheck serve: a request the protocol does not define: %v: %s\n", err, clip(line, 200))
				s.reply(req.ID, nil, spec.Errorf(spec.ErrBadRequest, "%s request %d: %v", req.Type, req.ID, err))
			} else if req.Type == TypeResume {
				s.resume(req.ID)
			} else {
				select {
				case jobs <- req:
				default:
					wg.Add(1)
					go func() {
						defer wg.Done()
						work(req)
						for req := range jobs {
							work(req)
						}
					}()
				}
			}
		}
		if err != nil {
			if !errors.Is(err, io.EOF) {
				readErr = err
			}
			break
		}
	}
	close(jobs)
	wg.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for id, h := range s.handles {
		errs = append(errs, h.target.Close())
		delete(s.handles, id)
	}
	errs = append(errs, readErr)
	return errors.Join(errs...)
}

type server struct {
	b       Driver
	o       ServeOptions
	wmu     sync.Mutex
	w       *bufio.Writer
	mu      sync.Mutex
	next    uint64
	handles map[uint64]*handle
	// resumes are the operations paused at a yield point, by request id.
	resumes map[uint64]chan struct{}
}

// yield pauses the operation of request id at place: it tells the kit, and
// waits for the kit's resume (or the end of ctx).
func (s *server) yield(ctx context.Context, id uint64, place string) error {
	ch := make(chan struct{}, 1)
	s.mu.Lock()
	s.resumes[id] = ch
	s.mu.Unlock()
	line, _ := json.Marshal(struct {
		ID    uint64 `json:"id"`
		Yield string `json:"yield"`
	}{id, place})
	s.write(line)
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		s.mu.Lock()
		delete(s.resumes, id)
		s.mu.Unlock()
		return ctx.Err()
	}
}

// resume lets the operation of request id, paused at a yield point, go on.
func (s *server) resume(id uint64) {
	s.mu.Lock()
	ch := s.resumes[id]
	delete(s.resumes, id)
	s.mu.Unlock()
	if ch == nil {
		fmt.Fprintf(s.o.Log, "storecheck serve: a resume of request %d, which waits at no yield point\n", id)
		return
	}
	ch <- struct{}{}
}

func (s *server) write(line []byte) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	s.w.Write(line)
	s.w.WriteByte('\n')
	s.w.Flush()
}

// handle is one open database: its target, its contract, and its clock,
// which follows the now_ms of the requests on it.
type handle struct {
	target   Target
	contract spec.Contract
	mu       sync.Mutex
	clock    *clockwork.FakeClock
}

// at sets the handle's clock to nowMS, the time the request carries: the
// backend's time is the kit's, backwards too (a spec may set the clock back
// to order two events). The kit keeps its clock still while operations on
// one handle are in flight, so requests in flight together carry one now;
// but the simulator's requests that overlap on one handle
// (concurrent_requests) move one at a time, from yield point to yield
// point, and each is set to its own now again as it resumes.
func (h *handle) at(nowMS int64) {
	if nowMS == 0 {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if d := time.UnixMilli(nowMS).Sub(h.clock.Now()); d != 0 {
		h.clock.Advance(d)
	}
}

func (s *server) reply(id uint64, result any, err error) {
	var line []byte
	if err == nil {
		var merr error
		var raw json.RawMessage
		if raw, merr = Encode(result); merr == nil {
			line, merr = json.Marshal(struct {
				ID     uint64          `json:"id"`
				Result json.RawMessage `json:"result"`
			}{id, raw})
		}
		if merr != nil {
			err = spec.Errorf(spec.ErrBadRequest, "the result cannot be encoded: %v", merr)
		}
	}
	if err != nil {
		kind, msg := spec.KindOf(err), err.Error()
		var se *spec.Error
		if errors.As(err, &se) {
			msg = se.Message
		}
		if kind == "" {
			kind = spec.ErrBadRequest
		}
		line, _ = json.Marshal(struct {
			ID    uint64    `json:"id"`
			Error WireError `json:"error"`
		}{id, WireError{Kind: kind, Message: msg}})
	}
	s.write(line)
}

func (s *server) handle(ctx context.Context, req *Request) (any, error) {
	// Only an open is bounded by the kit's timeout_ms (it may wait for a
	// lock another connection holds). An operation is bounded by the
	// store's own busy timeout; a cancellable context would cost every
	// SQLite statement a watcher, for nothing: the kit stops waiting and
	// kills a backend that overruns anyway.
	if req.TimeoutMS > 0 && req.Type == TypeOpen {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(req.TimeoutMS)*time.Millisecond)
		defer cancel()
	}
	switch req.Type {
	case TypeHello:
		if req.Version != ProtocolVersion {
			return nil, spec.Errorf(spec.ErrBadRequest, "protocol version %d asked, this backend speaks %d", req.Version, ProtocolVersion)
		}
		return s.b.Info(), nil
	case TypeOpen:
		c, ok := s.b.Contract(req.Store)
		if !ok {
			return nil, spec.Errorf(spec.ErrBadRequest, "open: this backend does not implement store %q (it has %v)", req.Store, s.b.Info().Stores)
		}
		if (req.Path == "") == !req.InMemory {
			return nil, spec.Errorf(spec.ErrBadRequest, "open: give either a path or in_memory, not both or neither")
		}
		clock := clockwork.NewFakeClockAt(time.UnixMilli(req.NowMS))
		t, err := s.b.Open(ctx, req.Store, spec.OpenOptions{Path: req.Path, Clock: clock, Timeout: time.Duration(req.TimeoutMS) * time.Millisecond})
		if err != nil {
			return nil, err
		}
		s.mu.Lock()
		s.next++
		id := s.next
		s.handles[id] = &handle{target: t, contract: c, clock: clock}
		s.mu.Unlock()
		return Opened{Handle: id}, nil
	case TypeClose:
		s.mu.Lock()
		h := s.handles[req.Handle]
		delete(s.handles, req.Handle)
		s.mu.Unlock()
		if h == nil {
			return nil, spec.Errorf(spec.ErrBadRequest, "close: no open handle %d", req.Handle)
		}
		return nil, h.target.Close()
	case TypeOp:
		s.mu.Lock()
		h := s.handles[req.Handle]
		s.mu.Unlock()
		if h == nil {
			return nil, spec.Errorf(spec.ErrBadRequest, "%s %s: no open handle %d", req.Store, req.Op, req.Handle)
		}
		if req.Store != h.contract.Name {
			return nil, spec.Errorf(spec.ErrBadRequest, "%s %s: handle %d is a %s store", req.Store, req.Op, req.Handle, h.contract.Name)
		}
		op, err := DecodeArgs(h.contract, req.Op, req.Args)
		if err != nil {
			return nil, spec.Errorf(spec.ErrBadRequest, "%v", err)
		}
		h.at(req.NowMS)
		if req.Yields {
			ctx = spec.WithYield(ctx, func(place string) error {
				if err := s.yield(ctx, req.ID, place); err != nil {
					return err
				}
				// Another request on the handle may have moved its clock
				// while this one waited: it goes on at its own time.
				h.at(req.NowMS)
				return nil
			})
		}
		return h.target.Apply(ctx, op)
	case TypeArmCrash:
		known := false
		for _, points := range s.b.Info().Capabilities.CrashPoints {
			known = known || slices.Contains(points, req.Point)
		}
		if !known || s.o.ArmCrash == nil {
			return nil, spec.Errorf(spec.ErrBadRequest, "arm_crash: no crash point %q (declared: %v)", req.Point, s.b.Info().Capabilities.CrashPoints)
		}
		if req.Nth < 1 {
			return nil, spec.Errorf(spec.ErrBadRequest, "arm_crash: nth must be 1 or more, not %d", req.Nth)
		}
		return nil, s.o.ArmCrash(req.Point, req.Nth)
	case TypeWriteForeignSchema:
		w, ok := s.b.(SchemaWriter)
		if !ok || !s.b.Info().CapabilitiesOf(req.Store).ClientSchemaWriter {
			return nil, spec.Errorf(spec.ErrBadRequest, "write_foreign_schema: this backend does not declare client_schema_writer")
		}
		if req.Store != "client" || !slices.Contains(s.b.Info().Stores, req.Store) || req.Path == "" {
			return nil, spec.Errorf(spec.ErrBadRequest, "write_foreign_schema: give the client store and a path (store %q, path %q)", req.Store, req.Path)
		}
		return nil, w.WriteForeignSchema(ctx, req.Store, req.Path, req.Marker, req.Version)
	}
	return nil, spec.Errorf(spec.ErrBadRequest, "unknown request type %q (accepted: hello, open, close, op, arm_crash, resume, write_foreign_schema)", req.Type)
}
