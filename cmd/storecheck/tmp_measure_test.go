package main

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/storecheck/storecheck/internal/stores"
	"github.com/storecheck/storecheck/linearizability"
)

func TestTmpMeasure(t *testing.T) {
	files, _ := filepath.Glob("/tmp/hists/*.json")
	for _, f := range files {
		h, err := linearizability.ReadFile(f, stores.Contracts())
		if err != nil { t.Fatal(err) }
		s, _ := stores.Lookup(h.Store)
		t0 := time.Now()
		res, _ := linearizability.Check(s.Model, h, 120*time.Second)
		t1 := time.Now()
		_ = res.Headline() + res.Explain(s.Contract) + res.Excerpt(40)
		linearizability.WriteFailure(t.TempDir(), h, res, s.Contract)
		t2 := time.Now()
		part := &h
		if small := linearizability.Smallest(s.Model, h, 120*time.Second); small != nil { part = small }
		linearizability.ShortestPrefix(s.Model, *part, 120*time.Second)
		linearizability.WriteFailure(t.TempDir(), h, res, s.Contract)
		t3 := time.Now()
		c, n, o := t1.Sub(t0), t2.Sub(t1), t3.Sub(t2)
		t.Logf("%s: %d ops, %s; check %v; new report %v (%.2fx); old report %v (%.2fx)", filepath.Base(f), len(h.Entries), res.Verdict,
			c.Round(time.Millisecond), n.Round(time.Millisecond), float64(c+n)/float64(c), o.Round(time.Millisecond), float64(c+o)/float64(c))
	}
}
