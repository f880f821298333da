package linearizability

import (
	"compress/gzip"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/storecheck/storecheck/linearizability/model"
	"github.com/storecheck/storecheck/spec"
)

// Models by store, for the golden histories.
var goldenModels = map[string]model.Model{"continuity": model.Continuity{}, "runtime": model.Runtime{}, "client": model.Client{}}

// Each store's testdata holds histories known to be linearizable (ok/) and
// known not to be (illegal/), each one a bug class; the checker must agree.
func TestGoldenHistories(t *testing.T) {
	var contracts []spec.Contract
	for _, m := range goldenModels {
		contracts = append(contracts, m.Contract())
	}
	files, _ := filepath.Glob("testdata/*/*/*.json")
	if len(files) == 0 {
		t.Fatal("no golden histories")
	}
	for _, f := range files {
		t.Run(strings.TrimPrefix(f, "testdata/"), func(t *testing.T) {
			want := Verdict(map[string]Verdict{"ok": Linearizable, "illegal": Illegal}[filepath.Base(filepath.Dir(f))])
			h, err := ReadFile(f, contracts)
			if err != nil {
				t.Fatal(err)
			}
			res, err := Check(goldenModels[h.Store], h, 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			if res.Verdict != want {
				t.Fatalf("verdict %s, want %s", res.Verdict, want)
			}
			// An illegal history is explained: the operation no order can
			// place, and what the model allowed it.
			if want == Illegal {
				if len(res.Stuck) == 0 || res.Stuck[0].Entry == nil || len(res.Stuck[0].Allowed) == 0 {
					t.Fatalf("an illegal history with no explanation: %+v", res.Stuck)
				}
				text := res.Explain(goldenModels[h.Store].Contract())
				if !strings.Contains(text, res.Stuck[0].Entry.Op.Name()) || !strings.Contains(text, "allows only") {
					t.Fatalf("explanation: %s", text)
				}
				t.Log(text)
			}
			// A saved history reads back the same.
			saved := filepath.Join(t.TempDir(), "h.json")
			if err := h.WriteFile(saved); err != nil {
				t.Fatal(err)
			}
			again, err := ReadFile(saved, contracts)
			if err != nil {
				t.Fatal(err)
			}
			if len(again.Entries) != len(h.Entries) {
				t.Fatalf("round trip lost entries")
			}
			for i := range h.Entries {
				if !again.Entries[i].Outcome.Same(h.Entries[i].Outcome) || again.Entries[i].Op.Name() != h.Entries[i].Op.Name() {
					t.Fatalf("entry %d changed in a round trip", i)
				}
			}
		})
	}
}

func TestMalformedHistoriesAreRefused(t *testing.T) {
	contracts := []spec.Contract{model.Continuity{}.Contract()}
	for name, tc := range map[string]struct{ json, want string }{
		"unknown store":     {`{"store":"nope","entries":[]}`, `unknown store "nope"`},
		"unknown operation": {`{"store":"continuity","entries":[{"op":"frob","call":1,"return":2}]}`, `continuity has no operation "frob"`},
		"return before call": {`{"store":"continuity","entries":[{"op":"max_fencing_token","call":5,"return":2,"result":0}]}`,
			"returns at 2 before its call at 5"},
		"overlapping client": {`{"store":"continuity","entries":[{"op":"max_fencing_token","call":1,"return":4,"result":0},{"op":"max_fencing_token","call":2,"return":3,"result":0}]}`,
			"client 0 called it at 2 with an operation outstanding until 4"},
		"wrong result type": {`{"store":"continuity","entries":[{"op":"max_fencing_token","call":1,"return":2,"result":"x"}]}`,
			"max_fencing_token result: want a continuity.FencingToken"},
		"unknown field": {`{"store":"continuity","entries":[],"extra":1}`, `unknown field "extra"`},
	} {
		_, err := Read(strings.NewReader(tc.json), contracts)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want an error containing %q", name, err, tc.want)
		}
	}
}

// Every failing part of an illegal history is explained, smallest first,
// each with the operation no order can place (its client, arguments and
// answer), what the contract allowed it, and the rule.
func TestEveryFailingPartIsExplainedSmallestFirst(t *testing.T) {
	claim := func(client int, session, owner string, call int) string {
		return fmt.Sprintf(`{"client": %d, "op": "try_claim_session_execution_lease", "args": {"session_id": %q, "owner_id": %q, "lease_ttl_ms": 1000}, "now_ms": 1000, "call": %d, "return": %d, "result": {"session_id": %q, "owner_id": %q, "lease_token": "%s:%s:1000:1", "fencing_token": 1, "claimed_at_ms": 1000, "expires_at_ms": 2000}}`,
			client, session, owner, call, call+1, session, owner, session, owner)
	}
	// Session t's part (three claims, every one granted) comes first in
	// the history; session s's (two) is the smaller.
	entries := []string{claim(0, "t", "a", 1), claim(1, "t", "b", 3), claim(2, "t", "c", 5), claim(3, "s", "a", 7), claim(4, "s", "b", 9)}
	m := model.Runtime{}
	h, err := Read(strings.NewReader(`{"store": "runtime", "entries": [`+strings.Join(entries, ",\n")+`]}`), []spec.Contract{m.Contract()})
	if err != nil {
		t.Fatal(err)
	}
	res, err := Check(m, h, 10*time.Second)
	if err != nil || res.Verdict != Illegal {
		t.Fatalf("verdict %s, %v", res.Verdict, err)
	}
	text := res.Explain(m.Contract())
	one := strings.Index(text, "part 1 of 2 (2 operations): client 4's try_claim_session_execution_lease {\"session_id\":\"s\",\"owner_id\":\"b\"")
	two := strings.Index(text, "part 2 of 2 (3 operations): client 1's try_claim_session_execution_lease {\"session_id\":\"t\",\"owner_id\":\"b\"")
	if one < 0 || two < one {
		t.Fatalf("the failing parts are not both explained, smallest first:\n%s", text)
	}
	if strings.Count(text, "the contract allows only") != 2 || strings.Count(text, "\n  rule ") < 2 {
		t.Errorf("a part without what the contract allows, or without its rule:\n%s", text)
	}
	if head := res.Headline(); !strings.Contains(head, "client 4's try_claim_session_execution_lease answered") || !strings.Contains(head, "and 1 more parts") {
		t.Errorf("headline: %s", head)
	}
}

// A hard history (testdata/hard, see BenchmarkCheckHardHistory) is
// linearizable under the capabilities it was recorded with.
func TestHardHistoryIsLinearizable(t *testing.T) {
	h := hardHistory(t)
	res, err := Check(model.For(model.Continuity{}, h.Capabilities), h, time.Minute)
	if err != nil || res.Verdict != Linearizable {
		t.Fatalf("verdict %s (%v), want %s", res.Verdict, err, Linearizable)
	}
}

func hardHistory(t testing.TB) History {
	return gzipHistory(t, "testdata/hard/continuity-python-opaque.json.gz", model.Continuity{}.Contract())
}

// gzipHistory reads the gzipped history at path, of contract's store.
func gzipHistory(t testing.TB, path string, contract spec.Contract) History {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	h, err := Read(z, []spec.Contract{contract})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// A bad_request answer keeps the backend's words in the saved history,
// and the check's explanation shows them and blames no rule of the
// contract: the request was refused, not the operation (a crash point
// reached but not declared).
func TestABadRequestIsExplainedByItsMessageAndNoRule(t *testing.T) {
	const why = `crash point "max_fencing_token/typo" reached but not declared`
	m := model.Continuity{}
	entry := `{"client": 0, "op": "max_fencing_token", "args": {}, "now_ms": 0, "call": 1, "return": 2, "error": "bad_request", "message": "` + strings.ReplaceAll(why, `"`, `\"`) + `"}`
	h, err := Read(strings.NewReader(`{"store": "continuity", "entries": [`+entry+`]}`), []spec.Contract{m.Contract()})
	if err != nil {
		t.Fatal(err)
	}
	saved, err := h.MarshalJSON()
	if err != nil || !strings.Contains(string(saved), `"message":`) {
		t.Fatalf("the saved history drops the message: %s %v", saved, err)
	}
	res, err := Check(m, h, 10*time.Second)
	if err != nil || res.Verdict != Illegal {
		t.Fatalf("verdict %s, %v", res.Verdict, err)
	}
	text := res.Explain(m.Contract())
	if !strings.Contains(text, "answered bad_request (its message: "+why+")") || !strings.Contains(res.Headline(), why) {
		t.Errorf("the backend's words are not shown:\n%s\n%s", res.Headline(), text)
	}
	if !strings.Contains(text, "broken: no rule of the contract") || strings.Contains(text, "continuity.max_fencing_token.") {
		t.Errorf("a refused request blames the operation's rules:\n%s", text)
	}

	// Nor by the rule that decides the answer the contract allows there (a
	// save for another session than its identity's record: not_found, by
	// record_must_match).
	upsert := `{"client": 0, "op": "upsert_continuity_record", "args": {"record": {"identity": "agent-0", "agent_runtime_id": "rt-0", "session_id": "session-0", "generation": 1, "checkpoint_version": 0}, "fence": 0}, "now_ms": 0, "call": 1, "return": 2}`
	save := `{"client": 0, "op": "save_session_snapshot", "args": {"write": {"identity": "agent-0", "session_id": "session-1", "generation": 1, "checkpoint_version": 3, "fencing_token": 0, "data": ""}}, "now_ms": 0, "call": 3, "return": 4, "error": "bad_request", "message": "refused"}`
	h, err = Read(strings.NewReader(`{"store": "continuity", "entries": [`+upsert+`, `+save+`]}`), []spec.Contract{m.Contract()})
	if err != nil {
		t.Fatal(err)
	}
	if res, err = Check(m, h, 10*time.Second); err != nil || res.Verdict != Illegal {
		t.Fatalf("verdict %s, %v", res.Verdict, err)
	}
	if text := res.Headline() + "\n" + res.Explain(m.Contract()); !strings.Contains(text, "allows only not_found") || strings.Contains(text, "continuity.save_session_snapshot.") {
		t.Errorf("a refused save names the save's rules:\n%s", text)
	}
}
