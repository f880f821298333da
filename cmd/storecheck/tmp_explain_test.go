package main

import (
	"io"
	"os"
	"testing"
	"time"

	"github.com/storecheck/storecheck/internal/bugs"
	"github.com/storecheck/storecheck/internal/stores"
	"github.com/storecheck/storecheck/linearizability"
)

func TestTmpExplain(t *testing.T) {
	for _, name := range []string{"runtime_lease_claim_outside_tx", "client_settle_check_outside_tx"} {
		b, _ := bugs.ByName(name)
		s, _ := stores.Lookup(b.Store())
		be := stores.Backend(stores.Options{Bug: b})
		open, handles := opener(be, s, t.TempDir())
		rc := linearizability.Config{Seed: 2, Handles: handles}.WithDefaults()
		h, err := linearizability.Run(t.Context(), s.Contract, open, s.Workload(), rc)
		if err != nil { t.Fatal(err) }
		t0 := time.Now()
		res, _ := linearizability.Check(s.Model, h, 60e9)
		t1 := time.Now()
		_ = res.Headline() + res.Explain(s.Contract) + res.Excerpt(40)
		t2 := time.Now()
		h.WriteFile(t.TempDir() + "/h.json")
		t3 := time.Now()
		for range 10 { res.Visualize(io.Discard) }
		t4 := time.Now()
		f, _ := os.Create(t.TempDir()+"/v.html"); res.Visualize(f); f.Close()
		t5 := time.Now()
		t.Logf("%s: check %v explain %v history %v visualize %v visualize-file %v", name, t1.Sub(t0), t2.Sub(t1), t3.Sub(t2), t4.Sub(t3), t5.Sub(t4))
	}
}
