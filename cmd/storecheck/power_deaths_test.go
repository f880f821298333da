package main

import (
	"context"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/storecheck/storecheck/adapters"
	"github.com/storecheck/storecheck/conformance"
	"github.com/storecheck/storecheck/internal/stores"
	"github.com/storecheck/storecheck/spec"
)

// mappingBackend is the reference whose every handle on a file maps a side
// file beside its database (grown to two pages, never synced) and writes
// through the map's second page when it closes, as SQLite's mapped -shm is
// written. Before a power cut that is a write to memory; after one, the
// side file is empty again (its growth was never synced), the write is
// past its end, and the process dies of SIGBUS, between the cut and the
// kill that follows it.
type mappingBackend struct{ adapters.Driver }

func (b mappingBackend) Open(ctx context.Context, store string, o spec.OpenOptions) (adapters.Target, error) {
	t, err := b.Driver.Open(ctx, store, o)
	if err != nil || o.Path == "" {
		return t, err
	}
	f, err := os.OpenFile(o.Path+"-map", os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Close()
		return nil, err
	}
	defer f.Close()
	if err := f.Truncate(8192); err != nil {
		t.Close()
		return nil, err
	}
	mem, err := syscall.Mmap(int(f.Fd()), 0, 8192, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		t.Close()
		return nil, err
	}
	return mappedTarget{Target: t, side: o.Path + "-map", mem: mem}, nil
}

type mappedTarget struct {
	adapters.Target
	side string
	mem  []byte
}

func (t mappedTarget) Close() error {
	os.Stat(t.side) // the size the file has now, as SQLite's fstat asks
	t.mem[4096]++
	return t.Target.Close()
}

func mappingServe() int {
	return serve(os.Stdin, os.Stdout, os.Stderr, conformance.Adapter(mappingBackend{stores.Backend(stores.Options{})}))
}

// A backend process that dies of what a power cut does to it (a SIGBUS on
// a mapped file it writes after the cut) dies by the cut: the power-loss
// spec runs it in a process of its own, doomed before the cut, and the
// other specs go on. Before, the one process every spec ran on died, the
// run was a backend failure (exit 3), and every spec after it was not run.
func TestADeathThePowerCutCausesIsTheCuts(t *testing.T) {
	needFUSE(t)
	out, errs, code := storecheck(t, "file", "run", "--layers", "spec", "--store", "continuity", "--report-dir", t.TempDir(),
		"--", os.Args[0], "fake-backend", "maps_a_side_file")
	if code != exitPassed {
		t.Fatalf("exit %d, want 0: the cut's death is the cut's\n%s\n%s", code, out, errs)
	}
	m := tally("continuity", "spec").FindStringSubmatch(out)
	if m == nil || m[2] != "0" || m[3] != "0" || strings.Contains(out, "not run") {
		t.Fatalf("want every continuity spec run and passed, the power-loss spec among them:\n%s", out)
	}
}
