package main

import (
	"io"
	"testing"
	"time"

	"github.com/storecheck/storecheck/internal/stores"
	"github.com/storecheck/storecheck/linearizability"
)

func TestTmpMeasure2(t *testing.T) {
	h, _ := linearizability.ReadFile("/tmp/hists/client-c12-o4000-s2.json", stores.Contracts())
	s, _ := stores.Lookup(h.Store)
	res, _ := linearizability.Check(s.Model, h, 120*time.Second)
	t0 := time.Now()
	res.Visualize(io.Discard)
	t.Logf("visualize %v", time.Since(t0))
}
