package linearizability

import (
	"fmt"
	"os"
	"path/filepath"
)

// WriteFailure writes a failing (or inconclusive) check's folder under dir:
// the history, porcupine's visualization, and a summary with the command
// that reproduces the run. It returns the folder.
func WriteFailure(dir string, h History, res Result) (string, error) {
	folder := filepath.Join(dir, fmt.Sprintf("linearizability-%s-seed-%d", h.Store, h.Seed))
	if err := os.MkdirAll(folder, 0o755); err != nil {
		return "", err
	}
	if err := h.WriteFile(filepath.Join(folder, "history.json")); err != nil {
		return "", err
	}
	f, err := os.Create(filepath.Join(folder, "visualization.html"))
	if err != nil {
		return "", err
	}
	if err := res.Visualize(f); err != nil {
		f.Close()
		return "", err
	}
	if err := f.Close(); err != nil {
		return "", err
	}
	summary := fmt.Sprintf("store: %s\nseed: %d\nverdict: %s\noperations: %d\nreproduce: %s\nre-check offline: storecheck check %s\n",
		h.Store, h.Seed, res.Summary(), len(h.Entries), h.Command, filepath.Join(folder, "history.json"))
	return folder, os.WriteFile(filepath.Join(folder, "summary.txt"), []byte(summary), 0o644)
}
