package linearizability

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/storecheck/storecheck/spec"
)

// WriteFailure writes a failing (or inconclusive) check's folder under dir:
// the history, porcupine's visualization, and a summary with the command
// that reproduces the run and, for an illegal history, the explanation in
// words (Result.Explain, with contract's rules). It returns the folder.
func WriteFailure(dir string, h History, res Result, contract spec.Contract) (string, error) {
	folder := filepath.Join(dir, fmt.Sprintf("linearizability-%s-seed-%d", h.Store, h.Seed))
	if err := os.MkdirAll(folder, 0o755); err != nil {
		return "", err
	}
	// The history and its visualization are written side by side: the
	// visualization steps the model along every partial linearization,
	// and a failure is reported once both are there.
	var wg sync.WaitGroup
	var herr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		herr = h.WriteFile(filepath.Join(folder, "history.json"))
	}()
	verr := writeVisualization(filepath.Join(folder, "visualization.html"), res)
	wg.Wait()
	if err := errors.Join(herr, verr); err != nil {
		return "", err
	}
	summary := fmt.Sprintf("store: %s\nseed: %d\nverdict: %s\noperations: %d\nreproduce: %s\nre-check offline: storecheck check %s\n",
		h.Store, h.Seed, res.Summary(), len(h.Entries), h.Command, filepath.Join(folder, "history.json"))
	if res.Verdict == Illegal {
		summary += "\n" + res.Headline() + "\n" + res.Explain(contract)
	}
	return folder, os.WriteFile(filepath.Join(folder, "summary.txt"), []byte(summary), 0o644)
}

func writeVisualization(path string, res Result) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := res.Visualize(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
