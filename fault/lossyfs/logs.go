package lossyfs

import (
	"bytes"
	"syscall"
)

// A file's log, as the server keeps it, handed to the program: what the
// file was at its last sync and each change since, with its bytes. With
// it a crash state's images can be computed in memory, with no run: it is
// how the exhaustive mode (package sim) tells crash states that leave the
// same bytes apart from those that do not.

// FileLog is one file's durable image and its changes since.
type FileLog struct {
	// Durable is the file as a cut that keeps none of its changes leaves
	// it (its last sync's image, with what a failed sync dropped never
	// in it).
	Durable []byte `json:"durable"`
	// Changes are its unsynced writes and truncations, in order: the Nth
	// (from 1) is the one a Kept with N names.
	Changes []Change `json:"changes"`
}

// Change is one unsynced write or truncation.
type Change struct {
	Trunc bool   `json:"trunc,omitempty"`
	Off   int64  `json:"off"` // a write's offset; a truncation's new size
	Data  []byte `json:"data,omitempty"`
	// Dropped: a failed sync dropped it, so no cut keeps it.
	Dropped bool `json:"dropped,omitempty"`
}

// Sectors is how many sectors (SectorSize) the change covers, as
// Disk.Unsynced says it: 0 for a truncation, -1 when dropped.
func (c Change) Sectors() int {
	return change{dropped: c.Dropped, trunc: c.Trunc, off: c.Off, data: c.Data}.sectors()
}

// Logs is the log of each file of folder dir that is open or has unsynced
// changes, by its path relative to dir (files no longer named left out).
func (d *Disk) Logs(dir string) (map[string]FileLog, error) {
	sub, err := d.folderOf(dir)
	if err != nil {
		return nil, err
	}
	r, err := d.call(request{Op: "logs", Dir: sub})
	return r.Logs, err
}

// ProbeAtSync is CrashAtSyncKeeping with every write lost and every entry
// op undone, the strike keeping the folder's logs as they were just before
// it (Cut.Logs, from Struck).
func (d *Disk) ProbeAtSync(dir, file string, nth int) error {
	return d.arm(dir, armRequest{File: file, Nth: nth, Explicit: true, Logs: true})
}

// logsLocked is the log of each named file of folder sub. l.cut is held.
func (l *lossy) logsLocked(sub string) map[string]FileLog {
	names := l.names(sub)
	out := map[string]FileLog{}
	l.filesMu.Lock()
	defer l.filesMu.Unlock()
	for ino, f := range l.files {
		name, ok := names[ino]
		if !ok || f.sub != sub {
			continue
		}
		f.mu.Lock()
		if lg, err := f.fileLog(); err == nil {
			out[name] = lg
		}
		f.mu.Unlock()
	}
	return out
}

// fileLog is f's log: the current image with every change undone, newest
// first (as forget does), and the changes. f.mu is held.
func (f *file) fileLog() (FileLog, error) {
	var st syscall.Stat_t
	if err := syscall.Fstat(f.fd, &st); err != nil {
		return FileLog{}, err
	}
	img := make([]byte, st.Size)
	if _, err := syscall.Pread(f.fd, img, 0); err != nil && st.Size > 0 {
		return FileLog{}, err
	}
	for i := len(f.log) - 1; i >= 0; i-- {
		c := f.log[i]
		img = resize(img, c.size)
		if len(c.old) > 0 {
			img = resize(img, max(int64(len(img)), c.oldAt+int64(len(c.old))))
			copy(img[c.oldAt:], c.old)
		}
	}
	lg := FileLog{Durable: bytes.Clone(img)}
	for _, c := range f.log {
		if c.durable {
			// The change that stands for what a failed sync dropped: no
			// change of the file's own, and never kept.
			lg.Changes = append(lg.Changes, Change{Dropped: true, Trunc: true, Off: c.size})
			continue
		}
		lg.Changes = append(lg.Changes, Change{Trunc: c.trunc, Off: c.off, Data: bytes.Clone(c.data), Dropped: c.dropped})
	}
	return lg, nil
}
