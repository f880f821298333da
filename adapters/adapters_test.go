package adapters_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/storecheck/storecheck/adapters"
	"github.com/storecheck/storecheck/internal/stores"
	"github.com/storecheck/storecheck/internal/testmain"
	"github.com/storecheck/storecheck/spec"
	c "github.com/storecheck/storecheck/spec/continuity"
	"github.com/storecheck/storecheck/spec/suite"
)

// The test binary plays a backend when started with backendEnv set (see
// TestMain): "serve" serves the reference, "reverse" answers each batch of
// four operations in reverse order.
const backendEnv = "STORECHECK_ADAPTERS_TEST_BACKEND"

// helloEnv is the hello the "hello" backend answers.
const helloEnv = "STORECHECK_ADAPTERS_TEST_HELLO"

func TestMain(m *testing.M) {
	switch os.Getenv(backendEnv) {
	case "serve":
		err := adapters.Serve(context.Background(), os.Stdin, os.Stdout, stores.Reference(), adapters.ServeOptions{Log: os.Stderr})
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	case "reverse":
		reverseBackend()
		os.Exit(0)
	case "sloppy":
		sloppyBackend()
		os.Exit(0)
	case "hello":
		// The hello the test gives in helloEnv, then a handle for any open.
		in := bufio.NewScanner(os.Stdin)
		for in.Scan() {
			var req adapters.Request
			json.Unmarshal(in.Bytes(), &req)
			switch req.Type {
			case adapters.TypeHello:
				fmt.Printf(`{"id":%d,"result":%s}`+"\n", req.ID, os.Getenv(helloEnv))
			case adapters.TypeOpen:
				fmt.Printf(`{"id":%d,"result":{"handle":1}}`+"\n", req.ID)
			default:
				fmt.Printf(`{"id":%d,"result":null}`+"\n", req.ID)
			}
		}
		os.Exit(0)
	case "slow-hello":
		// The hello 300 ms late.
		in := bufio.NewScanner(os.Stdin)
		for in.Scan() {
			var req adapters.Request
			json.Unmarshal(in.Bytes(), &req)
			time.Sleep(300 * time.Millisecond)
			fmt.Printf(`{"id":%d,"result":{"version":1,"name":"slow","stores":["continuity"],"capabilities":{"in_memory":true}}}`+"\n", req.ID)
		}
		os.Exit(0)
	case "mute":
		// Reads every request and answers none.
		io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	case "busy":
		// Reads the hello, then spins.
		bufio.NewReader(os.Stdin).ReadString('\n')
		for n := 0; ; n++ {
		}
	case "kit":
		kitChild()
		os.Exit(0)
	case "late-open":
		lateOpenBackend()
		os.Exit(0)
	case "now":
		// The kit's clock as the backend sees it: every operation is
		// answered with its now_ms.
		err := adapters.Serve(context.Background(), os.Stdin, os.Stdout, adapters.InProcess(adapters.Hello{Name: "now"},
			adapters.LocalStore{Contract: c.Contract, Open: func(ctx context.Context, o spec.OpenOptions) (adapters.Target, error) {
				return nowTarget{o.Clock}, nil
			}}), adapters.ServeOptions{})
		if err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(testmain.OnTmpfs(m.Run))
}

// reverseBackend answers max_fencing_token with the request's id, four at a
// time, the last first.
func reverseBackend() {
	in := bufio.NewScanner(os.Stdin)
	var batch []uint64
	for in.Scan() {
		var req adapters.Request
		json.Unmarshal(in.Bytes(), &req)
		switch req.Type {
		case adapters.TypeHello:
			fmt.Printf(`{"id":%d,"result":{"version":1,"name":"reverse","stores":["continuity"],"capabilities":{"in_memory":true}}}`+"\n", req.ID)
		case adapters.TypeOpen:
			fmt.Printf(`{"id":%d,"result":{"handle":1}}`+"\n", req.ID)
		case adapters.TypeClose:
			fmt.Printf(`{"id":%d,"result":null}`+"\n", req.ID)
		default:
			batch = append(batch, req.ID)
			if len(batch) == 4 {
				for i := len(batch) - 1; i >= 0; i-- {
					fmt.Printf(`{"id":%d,"result":%d}`+"\n", batch[i], batch[i])
				}
				batch = nil
			}
		}
	}
}

// sloppyBackend answers each operation with the reply line its args'
// session_id names (load_session_snapshot): a reply that leaves out a
// field, or has one the protocol does not define.
func sloppyBackend() {
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		var req adapters.Request
		json.Unmarshal(in.Bytes(), &req)
		switch req.Type {
		case adapters.TypeHello:
			fmt.Printf(`{"id":%d,"result":{"version":1,"name":"sloppy","stores":["continuity"],"capabilities":{"in_memory":true}}}`+"\n", req.ID)
		case adapters.TypeOpen:
			fmt.Printf(`{"id":%d,"result":{"handle":1}}`+"\n", req.ID)
		default:
			var args struct {
				SessionID string `json:"session_id"`
			}
			json.Unmarshal(req.Args, &args)
			fmt.Printf(args.SessionID+"\n", req.ID)
		}
	}
}

// lateOpenBackend answers an open 300 ms late, with handle 42, and says on
// stderr which handles it is asked to close.
func lateOpenBackend() {
	in := bufio.NewScanner(os.Stdin)
	var mu sync.Mutex
	write := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Printf(format+"\n", args...)
	}
	for in.Scan() {
		var req adapters.Request
		json.Unmarshal(in.Bytes(), &req)
		switch req.Type {
		case adapters.TypeHello:
			write(`{"id":%d,"result":{"version":1,"name":"late-open","stores":["continuity"],"capabilities":{"in_memory":true}}}`, req.ID)
		case adapters.TypeOpen:
			go func() {
				time.Sleep(300 * time.Millisecond)
				write(`{"id":%d,"result":{"handle":42}}`, req.ID)
			}()
		case adapters.TypeClose:
			fmt.Fprintf(os.Stderr, "closed handle %d\n", req.Handle)
			write(`{"id":%d,"result":null}`, req.ID)
		}
	}
}

// nowTarget answers max_fencing_token with its clock's unix milliseconds.
type nowTarget struct{ clock clockwork.Clock }

func (n nowTarget) Apply(ctx context.Context, op spec.Op) (any, error) {
	return c.FencingToken(n.clock.Now().UnixMilli()), nil
}
func (nowTarget) Close() error { return nil }

// The exec Target sends the suite's clock as now_ms, and serve hands it to
// the store as the clock of its handle.
func TestTheKitsClockReachesTheStore(t *testing.T) {
	e := start(t, "now")
	clock := clockwork.NewFakeClockAt(suite.Epoch)
	tgt, err := e.Open(context.Background(), c.StoreName, spec.OpenOptions{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	s := c.Proxy{Target: tgt}
	for _, step := range []time.Duration{0, 1500 * time.Millisecond, time.Hour} {
		clock.Advance(step)
		got, err := s.MaxFencingToken(context.Background())
		if err != nil || got != c.FencingToken(clock.Now().UnixMilli()) {
			t.Fatalf("the store saw %d (%v), the kit's clock is at %d", got, err, clock.Now().UnixMilli())
		}
	}
}

func start(t *testing.T, backend string) *adapters.Exec {
	t.Helper()
	e, err := adapters.StartExec(context.Background(), adapters.ExecOptions{
		Command: []string{os.Args[0]}, Env: []string{backendEnv + "=" + backend}, Timeout: 5 * time.Second, Contracts: stores.Contracts()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

func TestRepliesInAnyOrderReachTheirCallers(t *testing.T) {
	e := start(t, "reverse")
	tgt, err := e.Open(context.Background(), c.StoreName, spec.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	got := make([]c.FencingToken, 4)
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := c.Proxy{Target: tgt}.MaxFencingToken(context.Background())
			got[i] = v
			if err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	seen := map[c.FencingToken]bool{}
	for _, v := range got {
		seen[v] = true
	}
	// Request ids 1 (hello) and 2 (open) are taken: the four calls are
	// 3..6, each answered with its own id.
	for id := c.FencingToken(3); id <= 6; id++ {
		if !seen[id] {
			t.Errorf("no call got the reply to request %d: %v", id, got)
		}
	}
	if e.Err() != nil {
		t.Error(e.Err())
	}
}

func TestExecSendsTheSuitesClockAsNowMS(t *testing.T) {
	e := start(t, "serve")
	if got := e.Info(); got.Name == "" || !reflect.DeepEqual(got.Stores, []string{"continuity", "runtime", "client"}) || !got.Capabilities.Files {
		t.Fatalf("hello: %+v", got)
	}
	clock := clockwork.NewFakeClockAt(suite.Epoch)
	tgt, err := e.Open(context.Background(), c.StoreName, spec.OpenOptions{Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	defer tgt.Close()
	if _, err := tgt.Apply(context.Background(), c.UpsertContinuityRecord{Record: c.Record{Identity: "a"}, Fence: 3}); err != nil {
		t.Fatal(err)
	}
	v, err := tgt.Apply(context.Background(), c.MaxFencingToken{})
	if err != nil || v != c.FencingToken(3) {
		t.Fatalf("max_fencing_token: %v %v", v, err)
	}
	_, err = tgt.Apply(context.Background(), c.UpsertContinuityRecord{Record: c.Record{Identity: "a"}, Fence: 2})
	if spec.KindOf(err) != c.ErrStaleFencingToken || !strings.Contains(err.Error(), "presented fence 2, current 3") {
		t.Fatalf("a contract error keeps its kind and message over the wire: %v", err)
	}
}

// A caller that stops waiting gets canceled (indefinite); the late reply is
// dropped, not taken for a protocol violation.
func TestACanceledCallIsIndefiniteAndItsLateReplyIsDropped(t *testing.T) {
	e := start(t, "reverse")
	tgt, err := e.Open(context.Background(), c.StoreName, spec.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err = tgt.Apply(ctx, c.MaxFencingToken{})
	if spec.KindOf(err) != spec.ErrCanceled || c.Contract.Definite(err) {
		t.Fatalf("want an indefinite canceled, got %v", err)
	}
	var wg sync.WaitGroup
	for range 3 { // completes the batch of four: the late reply comes too
		wg.Add(1)
		go func() {
			defer wg.Done()
			if _, err := tgt.Apply(context.Background(), c.MaxFencingToken{}); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if e.Err() != nil {
		t.Fatalf("a late reply was taken for a failure: %v", e.Err())
	}
}

// Strict decoding both ways: a reply (or a result in it) that leaves out a
// field, or has one the protocol does not define, is a protocol violation
// that names the field and the operation.
func TestExecRefusesMissingAndUnknownReplyFields(t *testing.T) {
	for _, tc := range []struct{ reply, want string }{
		{`{"id":%d,"result":{}}`, `missing field "data"`},
		{`{"id":%d,"result":{"data":null,"revision":"r"}}`, `unknown field "revision"`},
		// bytes in hex where base64 is due: the field is named, and hex
		{`{"id":%d,"result":{"data":"6f6e65"}}`, `field "data": "6f6e65" is not base64 (illegal base64 data at input byte 4); it looks like hex (of "one"): the protocol sends bytes as base64 ("b25l")`},
		{`{"id":%d,"error":{"kind":"not_found"}}`, `missing field "error.message"`},
		{`{"id":%d,"result":null,"note":"n"}`, `unknown field "note"`},
		{`{"id":%d}`, `none of "result", "error" and "yield"`},
		{`{"id":%d,"result":null,"error":{"kind":"io","message":"m"}}`, `more than one of "result", "error" and "yield"`},
	} {
		e := start(t, "sloppy")
		tgt, err := e.Open(context.Background(), c.StoreName, spec.OpenOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = tgt.Apply(context.Background(), c.LoadSessionSnapshot{SessionID: c.SessionID(tc.reply)})
		if spec.KindOf(err) != spec.ErrBackendFailure || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), "load_session_snapshot") {
			t.Errorf("reply %s: got %v; want a backend failure naming load_session_snapshot and %s", tc.reply, err, tc.want)
		}
	}
}

// An open whose caller stopped waiting is indefinite; when its late reply
// opened a handle after all, the adapter closes it: nothing the caller
// never saw stays open (and holds its database).
func TestAHandleALateOpenReplyOpenedIsClosed(t *testing.T) {
	var stderr syncBuffer
	e, err := adapters.StartExec(context.Background(), adapters.ExecOptions{
		Command: []string{os.Args[0]}, Env: []string{backendEnv + "=late-open"}, Timeout: 5 * time.Second,
		Contracts: stores.Contracts(), Stderr: &stderr})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := e.Open(ctx, c.StoreName, spec.OpenOptions{}); spec.KindOf(err) != spec.ErrCanceled {
		t.Fatalf("want a canceled open, got %v", err)
	}
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(stderr.String(), "closed handle 42"); {
		if time.Now().After(deadline) {
			t.Fatalf("the handle the late open reply opened was never closed; the backend's stderr:\n%s", stderr.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if e.Err() != nil {
		t.Fatalf("a late reply was taken for a failure: %v", e.Err())
	}
}

// syncBuffer is a bytes.Buffer many goroutines write.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestDecodeOpRoundTripsEveryOperation(t *testing.T) {
	prev := c.Record{Identity: "a", SessionID: "s"}
	values := []spec.Op{
		c.ResolveMany{Identities: []c.Identity{"a", "b"}},
		c.LoadSessionSnapshot{SessionID: "s"},
		c.SessionSnapshotMatchesCurrent{Candidate: c.SnapshotWrite{Identity: "a", Data: []byte{0, 1, 255}}},
		c.DeleteSessionSnapshotIfCurrentRevision{SessionID: "s", ExpectedRevision: "ab"},
		c.SaveSessionSnapshot{Write: c.SnapshotWrite{Identity: "a", FencingToken: 9, Data: []byte("x")}},
		c.UpsertContinuityRecord{Record: prev, Fence: 4},
		c.RollbackContinuityRecord{Attempt: prev, Previous: &prev, Fence: 4},
		c.DeleteContinuityRecord{Identity: "a", Fence: 1},
		c.MaxFencingToken{},
	}
	for _, contract := range stores.Contracts() {
		for _, op := range contract.Ops {
			found := false
			for _, v := range values {
				found = found || v.Name() == op.Name()
			}
			if !found && contract.Name == c.StoreName {
				t.Errorf("no round-trip value for %s", op.Name())
			}
		}
	}
	contract := c.Contract
	for _, op := range values {
		args, err := json.Marshal(op)
		if err != nil {
			t.Fatal(err)
		}
		got, err := contract.DecodeOp(op.Name(), args)
		if err != nil || !reflect.DeepEqual(got, op) {
			t.Errorf("%s: decoded %#v, %v; want %#v", op.Name(), got, err, op)
		}
	}
	if _, err := contract.DecodeOp("upsert_continuity_record", json.RawMessage(`{"record":{},"fence":1,"extra":2}`)); err == nil {
		t.Error("unknown args fields must be refused")
	}
	if _, err := contract.DecodeOp("no_such_op", nil); err == nil {
		t.Error("an unknown operation must be refused")
	}
}

func TestDecodeResultChecksTheType(t *testing.T) {
	for _, tc := range []struct {
		op   spec.Op
		raw  string
		want any
		ok   bool
	}{
		{c.MaxFencingToken{}, `7`, c.FencingToken(7), true},
		{c.MaxFencingToken{}, `"7"`, nil, false},
		{c.MaxFencingToken{}, `null`, nil, false},
		{c.SessionSnapshotMatchesCurrent{}, `true`, true, true},
		{c.SessionSnapshotMatchesCurrent{}, `null`, nil, false},
		{c.LoadSessionSnapshot{}, `null`, (*c.Snapshot)(nil), true},
		{c.LoadSessionSnapshot{}, `{"data":"eA=="}`, &c.Snapshot{Data: []byte("x")}, true},
		{c.LoadSessionSnapshot{}, `{"data":"eA==","more":1}`, nil, false},
		{c.UpsertContinuityRecord{}, `null`, nil, true},
		{c.UpsertContinuityRecord{}, ``, nil, true},
		{c.UpsertContinuityRecord{}, `true`, nil, false},
		{c.ResolveMany{}, `{"a":{"state":"uninitialized"}}`, map[c.Identity]c.Resolution{"a": {State: c.Uninitialized}}, true},
		{c.ResolveMany{}, `[1]`, nil, false},
	} {
		got, err := spec.DecodeResult(tc.op, json.RawMessage(tc.raw))
		if (err == nil) != tc.ok || (tc.ok && !reflect.DeepEqual(got, tc.want)) {
			t.Errorf("%s %s: got %#v, %v", tc.op.Name(), tc.raw, got, err)
		}
	}
}

// Serve answers what it cannot take with bad_request, naming what was
// wrong, and keeps serving.
func TestServeRefusesBadRequests(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- adapters.Serve(context.Background(), inR, outW, stores.Backend(stores.Options{InMemory: true}), adapters.ServeOptions{Log: io.Discard})
		outW.Close()
	}()
	replies := bufio.NewScanner(outR)
	ask := func(line string) string {
		t.Helper()
		if _, err := io.WriteString(inW, line+"\n"); err != nil {
			t.Fatal(err)
		}
		if !replies.Scan() {
			t.Fatalf("no reply to %s", line)
		}
		return replies.Text()
	}
	for _, tc := range []struct{ req, want string }{
		{`not json`, `{"id":0,"error":{"kind":"bad_request","message":"the request is not a JSON object: invalid character`},
		{`{"id":1,"type":"hello","version":2}`, `protocol version 2 asked, this backend speaks 1`},
		{`{"id":2,"type":"frobnicate"}`, `unknown request type \"frobnicate\"`},
		{`{"id":3,"type":"op","handle":99,"store":"continuity","op":"max_fencing_token"}`, `no open handle 99`},
		{`{"id":4,"type":"open","store":"nope","in_memory":true}`, `does not implement store \"nope\"`},
		{`{"id":5,"type":"open","store":"continuity"}`, `give either a path or in_memory`},
		{`{"id":6,"type":"open","store":"continuity","in_memory":true}`, `{"id":6,"result":{"handle":1}}`},
		{`{"id":7,"type":"op","handle":1,"store":"continuity","op":"no_such_op","args":{}}`, `continuity has no operation \"no_such_op\"`},
		{`{"id":8,"type":"op","handle":1,"store":"continuity","op":"upsert_continuity_record","args":{"fence":"x"}}`, `{"id":8,"error":{"kind":"bad_request","message":"continuity upsert_continuity_record: arguments: json: cannot unmarshal`},
		{`{"id":81,"type":"op","handle":1,"store":"continuity","op":"upsert_continuity_record","args":{"record":{"identity":"a","agent_runtime_id":"r","session_id":"s","generation":1,"checkpoint_version":0}}}`, `continuity upsert_continuity_record: arguments: missing field \"fence\"`},
		{`{"id":82,"type":"op","handle":1,"store":"continuity","op":"upsert_continuity_record","args":{"record":{"identity":"a"},"fence":1}}`, `continuity upsert_continuity_record: arguments: missing field \"record.agent_runtime_id\"`},
		{`{"id":83,"type":"op","handle":1,"store":"continuity","op":"max_fencing_token","args":{},"deadline_ms":5}`, `op request 83: json: unknown field \"deadline_ms\"`},
		{`{"id":9,"type":"arm_crash","point":"nowhere","nth":1}`, `no crash point \"nowhere\"`},
		{`{"id":10,"type":"op","handle":1,"store":"continuity","op":"max_fencing_token","args":{}}`, `{"id":10,"result":0}`},
		{`{"id":11,"type":"close","handle":1}`, `{"id":11,"result":null}`},
	} {
		if got := ask(tc.req); !strings.Contains(got, tc.want) {
			t.Errorf("%s\n got  %s\n want it to contain %s", tc.req, got, tc.want)
		}
	}
	inW.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// A request past the protocol's line limit is the kit's input to refuse:
// it is not sent, its error is bad_request marked not sent and names the
// limit, and the backend goes on serving (a size the protocol refuses is
// no failure of the backend's).
func TestARequestPastTheLineLimitIsNotSent(t *testing.T) {
	e, err := adapters.StartExec(context.Background(), adapters.ExecOptions{
		Command: []string{os.Args[0]}, Env: []string{backendEnv + "=serve"}, Timeout: 5 * time.Second, Contracts: stores.Contracts(), MaxLine: 4096})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	tgt, err := e.Open(context.Background(), c.StoreName, spec.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s := c.Proxy{Target: tgt}
	big := c.SnapshotWrite{Identity: "a", SessionID: "s", CheckpointVersion: 1, Data: make([]byte, 4096)}
	err = s.SaveSessionSnapshot(context.Background(), big)
	if !spec.IsNotSent(err) || spec.KindOf(err) != spec.ErrBadRequest || !strings.Contains(err.Error(), "past the protocol's line limit of 4096") {
		t.Fatalf("a request past the line limit answered %v", err)
	}
	small := big
	small.Data = []byte("fits")
	if err := s.SaveSessionSnapshot(context.Background(), small); err != nil {
		t.Fatalf("the next request, within the limit: %v", err)
	}
	if snap, err := s.LoadSessionSnapshot(context.Background(), "s"); err != nil || snap == nil || string(snap.Data) != "fits" {
		t.Fatalf("the snapshot reads %v, %v: the refused request was sent", snap, err)
	}
	if e.Err() != nil {
		t.Fatalf("the backend was blamed: %v", e.Err())
	}
}
