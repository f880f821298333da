package linearizability

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/storecheck/storecheck/reports"
	"github.com/storecheck/storecheck/spec"
)

// WriteFailure writes a failing (or inconclusive) check's folder under dir:
// the history, porcupine's visualization, and a summary with the command
// that checks the saved history again (recheck's line of the history's
// path; nil: storecheck check PATH), offered first for it is
// deterministic, then the one that reproduces the run and, for an illegal
// history, the explanation in words (Result.Explain, with contract's
// rules). It returns the folder.
func WriteFailure(dir string, h History, res Result, contract spec.Contract, recheck func(history string) string) (string, error) {
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
	history := filepath.Join(folder, "history.json")
	line := "storecheck check " + history
	if recheck != nil {
		line = recheck(history)
	}
	summary := fmt.Sprintf("store: %s\nseed: %d\nverdict: %s\noperations: %d\n%s: %s\nreproduce: %s\n",
		h.Store, h.Seed, res.Summary(), len(h.Entries), reports.RecheckLabel, line, h.Command)
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
