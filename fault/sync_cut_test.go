package fault_test

import (
	"reflect"
	"testing"

	"github.com/storecheck/storecheck/fault"
	"github.com/storecheck/storecheck/fault/lossyfs"
)

// A cut at a sync with its outcome given keeps it in a schedule, refuses
// what no cut could keep, and shrinks as a power cut's fates do.
func TestASyncCutKeepsItsOutcome(t *testing.T) {
	f := fault.SyncCut{File: "c.db-wal", Nth: 2, Kept: lossyfs.Fates{{File: "c.db-wal", N: 1, Sectors: []int{0}}}, KeepEntries: 1}
	const want = `{"type":"sync_cut","file":"c.db-wal","nth":2,"kept":[{"file":"c.db-wal","n":1,"sectors":[0]}],"keep_entries":1}`
	b, err := fault.Marshal(f)
	if err != nil || string(b) != want {
		t.Fatalf("written as %s (%v), want %s", b, err, want)
	}
	if back, err := fault.Unmarshal(b); err != nil || !reflect.DeepEqual(back, f) {
		t.Fatalf("read back as %v (%v)", back, err)
	}
	for _, bad := range []string{`{"type":"sync_cut","nth":1}`, `{"type":"sync_cut","file":"w","nth":-1}`,
		`{"type":"sync_cut","file":"w","kept":[{"file":"w","n":0}]}`, `{"type":"sync_cut","file":"w","keep_entries":-1}`} {
		if f, err := fault.Unmarshal([]byte(bad)); err == nil {
			t.Errorf("%s read as %v", bad, f)
		}
	}
	var k *fault.Kind
	for _, kind := range fault.Kinds() {
		if kind.Name == "sync_cut" {
			k = kind
		}
	}
	if k == nil || k.Draw != nil || !k.ForgetfulDisk {
		t.Fatalf("the kind: %+v, want one never drawn, on a forgetful disk", k)
	}
}
