package reference_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	refclient "github.com/storecheck/storecheck/reference/client"
	refcontinuity "github.com/storecheck/storecheck/reference/continuity"
	refruntime "github.com/storecheck/storecheck/reference/runtime"
)

// BenchmarkOpenExisting is the cost of opening each reference store on a
// file that holds its schema: a simulated process opens its store at every
// start and restart, so an open was a sixth of the simulator's CPU.
func BenchmarkOpenExisting(b *testing.B) {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("/dev/shm", "openbench-")
	defer os.RemoveAll(dir)
	for _, tc := range []struct {
		name string
		open func(path string) (interface{ Close() error }, error)
	}{
		{"continuity", func(p string) (interface{ Close() error }, error) {
			return refcontinuity.Open(ctx, refcontinuity.Options{Path: p})
		}},
		{"runtime", func(p string) (interface{ Close() error }, error) {
			return refruntime.Open(ctx, refruntime.Options{Path: p})
		}},
		{"client", func(p string) (interface{ Close() error }, error) {
			return refclient.Open(ctx, refclient.Options{Path: p})
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			path := filepath.Join(dir, tc.name+".db")
			s, err := tc.open(path)
			if err != nil {
				b.Fatal(err)
			}
			s.Close()
			for b.Loop() {
				s, err := tc.open(path)
				if err != nil {
					b.Fatal(err)
				}
				s.Close()
			}
		})
	}
}
