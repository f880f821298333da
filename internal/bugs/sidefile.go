package bugs

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/storecheck/storecheck/adapters"
	refcontinuity "github.com/storecheck/storecheck/reference/continuity"
	refruntime "github.com/storecheck/storecheck/reference/runtime"
	"github.com/storecheck/storecheck/reference/sqlitedb"
	"github.com/storecheck/storecheck/spec"
	c "github.com/storecheck/storecheck/spec/continuity"
	r "github.com/storecheck/storecheck/spec/runtime"
)

// The side-file bugs: a runtime store that keeps what it answers in files
// beside its database, as a backend with attachment blobs or a side log
// does, each getting one step of making a file durable wrong. SQLite makes
// its own files durable (it syncs them, and their folder after it creates
// a journal or a WAL); a file beside them is the backend's to make durable.
// Each breaks runtime.survives_power_loss (the seed's durability_tier
// Durable: every write the store acknowledged survives a power cut), and
// only a crash state of the forgetful file system's model (fault/lossyfs)
// shows it, named with each bug with its source:
//
//   - RuntimeAttachmentRenameNoDirSync writes each attachment's bytes to a
//     temp file, fsyncs it, renames it into place and never syncs the
//     folder: POSIX promises the rename nothing until the folder is synced
//     (Linux's fsync(2): "an explicit fsync() on a file descriptor for the
//     directory is also needed"); a cut under the posix entry model undoes
//     it. ALICE (OSDI 2014) found this in most of the systems it studied.
//   - RuntimeAttachmentUnsynced writes the bytes in place and syncs only
//     the folder: POSIX promises unsynced data nothing (fsync), and a cut
//     loses it.
//   - RuntimeAttachmentCacheOrdered keeps the bytes in SQLite, durable,
//     and a cache of them beside it, a data file and then a marker saying
//     the data file is whole, neither synced, trusting the marker as if
//     the two writes persist in order: a disk may persist writes between
//     two syncs in any subset (sqlite.org/atomiccommit.html, "Hardware
//     Assumptions"; SQLite's crash VFS, src/test6.c), so a cut may keep the
//     marker and lose the data. A cut that loses both is harmless.
//   - RuntimeAttachmentSyncRetried keeps the bytes in a side log it holds
//     open, a record appended and fsynced at each first staging, and when
//     the fsync fails retries it and answers ok: Linux drops the dirty
//     data of a failed fsync and the retry succeeds without it
//     (PostgreSQL's "fsyncgate", 2018; Linux's
//     Documentation/filesystems/vfs.rst on writeback errors), so a cut
//     loses the staging. (Not the session meta: the seed's
//     save_session_meta swallows its store's errors and answers Ok, so an
//     ok there acknowledges nothing.)
//
// The same store done right (sideCorrect: temp file, fsync, rename, folder
// fsync; sideLogCorrect: a failed fsync answered as an error) passes every
// crash state.
var (
	RuntimeAttachmentRenameNoDirSync, RuntimeAttachmentUnsynced Bug
	RuntimeAttachmentCacheOrdered, RuntimeAttachmentSyncRetried Bug
)

// sideHow is how a side-file store makes its files durable.
type sideHow int

const (
	sideCorrect sideHow = iota
	sideNoDirSync
	sideNoSync
	sideCacheOrdered
	sideLogCorrect
	sideSyncRetried
)

func init() {
	RuntimeAttachmentRenameNoDirSync = sideFileBug("runtime_attachment_rename_no_dir_sync", sideNoDirSync)
	RuntimeAttachmentUnsynced = sideFileBug("runtime_attachment_unsynced", sideNoSync)
	RuntimeAttachmentCacheOrdered = sideFileBug("runtime_attachment_cache_ordered", sideCacheOrdered)
	RuntimeAttachmentSyncRetried = sideFileBug("runtime_attachment_sync_retried", sideSyncRetried)
}

// sideFileBug registers the runtime reference with its side files made
// durable as how says.
func sideFileBug(name string, how sideHow) Bug {
	needsPowerCut[name] = true
	return register(name, r.StoreName, func(ctx context.Context, o spec.OpenOptions) (adapters.Target, error) {
		return openSideFiles(ctx, o, how)
	})
}

// openSideFiles opens the runtime reference with side files made durable
// as how says (sideCorrect: right). In memory there is no file beside
// the database: it is the reference.
func openSideFiles(ctx context.Context, o spec.OpenOptions, how sideHow) (adapters.Target, error) {
	s, err := refruntime.Open(ctx, refruntime.Options{Path: o.Path, Clock: o.Clock})
	if err != nil {
		return nil, err
	}
	if o.Path == "" {
		return sqlitedb.Target[r.Store](s, r.Apply), nil
	}
	sf := &sideFiles{Store: s, dir: filepath.Dir(o.Path), how: how}
	if how == sideLogCorrect || how == sideSyncRetried {
		if err := sf.openLog(); err != nil {
			s.Close()
			return nil, err
		}
	}
	return sqlitedb.Target[r.Store](sf, r.Apply), nil
}

// SideFilesCorrect and SideLogCorrect are the side-file stores done right
// (blobs; a side log), for the tests that show each side-file bug is its
// one wrong step.
func SideFilesCorrect(ctx context.Context, o spec.OpenOptions) (adapters.Target, error) {
	return openSideFiles(ctx, o, sideCorrect)
}

func SideLogCorrect(ctx context.Context, o spec.OpenOptions) (adapters.Target, error) {
	return openSideFiles(ctx, o, sideLogCorrect)
}

// RuntimeDeleteJournal is the runtime reference in SQLite's default
// journal mode, DELETE (synchronous FULL, its default too): no bug, as the
// runtime seed shows no connection setup, for the tests that hold the
// crash model to what FULL guarantees.
func RuntimeDeleteJournal(ctx context.Context, o spec.OpenOptions) (adapters.Target, error) {
	s, err := refruntime.Open(ctx, refruntime.Options{Path: o.Path, Clock: o.Clock, JournalMode: "DELETE"})
	if err != nil {
		return nil, err
	}
	return sqlitedb.Target[r.Store](s, r.Apply), nil
}

// sideFiles is the runtime reference with attachment bytes answered from
// files beside its database (blobs, or a log): each variant is the store
// done right (sideCorrect, sideLogCorrect) but for its one wrong step.
type sideFiles struct {
	*refruntime.Store
	dir string
	how sideHow
	// log is the attachment log (sideLogCorrect, sideSyncRetried), open
	// from Open to Close, as a side log a store keeps open (a sync fault
	// may then name it).
	mu  sync.Mutex
	log *os.File
}

func (s *sideFiles) Close() error {
	s.mu.Lock()
	if s.log != nil {
		s.log.Close()
		s.log = nil
	}
	s.mu.Unlock()
	return s.Store.Close()
}

// blob is the file of an attachment's bytes: named by their sha256, as a
// content-addressed blob store's manifest names it, so two stagings of an
// id never write one file with two contents.
func (s *sideFiles) blob(data []byte) string {
	sum := sha256.Sum256(data)
	return filepath.Join(s.dir, "blob-"+hex.EncodeToString(sum[:8]))
}

func (s *sideFiles) StageAttachment(ctx context.Context, session, id string, data []byte) error {
	old, err := s.Store.LoadAttachment(ctx, id)
	if err != nil {
		return err
	}
	if old == nil && s.logged() {
		// The record before the row that names it.
		if err := s.appendRecord(id, data); err != nil {
			return err
		}
	} else if old == nil && s.how != sideCacheOrdered {
		// The bytes before the row that names them: a crash between
		// leaves a blob no row names.
		if err := s.writeBlob(s.blob(data), data); err != nil {
			return fmt.Errorf("%w: attachment blob: %v", spec.ErrIO, err)
		}
	}
	if err := s.Store.StageAttachment(ctx, session, id, data); err != nil {
		return err
	}
	if old == nil && s.how == sideCacheOrdered {
		// The cache after the row: the row holds the bytes, durable, and
		// the cache is only trusted once its marker says it is whole.
		s.writeCache(id, data)
	}
	return nil
}

func (s *sideFiles) LoadAttachment(ctx context.Context, id string) (*r.Attachment, error) {
	a, err := s.Store.LoadAttachment(ctx, id)
	if err != nil || a == nil {
		return a, err
	}
	if s.logged() {
		a.Data = s.record(id, a.Data)
	} else if s.how == sideCacheOrdered {
		cache := s.cacheOf(id)
		if mark, _ := os.ReadFile(cache + ".ok"); string(mark) == "ok" {
			b, _ := os.ReadFile(cache)
			a.Data = b
		}
	} else {
		// The answer is the blob's, whatever the row holds; a blob the
		// disk lost reads as nothing.
		b, _ := os.ReadFile(s.blob(a.Data))
		a.Data = b
	}
	if a.Data == nil {
		a.Data = []byte{}
	}
	return a, nil
}

// writeBlob puts data at path as how says: a temp file synced, renamed
// into place, the folder synced (right); the folder's sync left out
// (sideNoDirSync); or the file written in place with no sync of its own
// (sideNoSync).
func (s *sideFiles) writeBlob(path string, data []byte) error {
	if s.how == sideNoSync {
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return err
		}
		return syncDir(s.dir)
	}
	// The first temp name free: a writer beside it (another process), or
	// one a crash left, has the others; the same every run, as the trace
	// names it.
	var f *os.File
	var tmp string
	for n := 1; f == nil; n++ {
		tmp = fmt.Sprintf("%s.tmp-%d", path, n)
		var err error
		if f, err = os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644); err != nil && !errors.Is(err, os.ErrExist) {
			return err
		}
	}
	_, err := f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	if s.how == sideNoDirSync {
		return nil
	}
	return syncDir(s.dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// cacheOf is the cache file of attachment id (its marker is beside it,
// ".ok").
func (s *sideFiles) cacheOf(id string) string {
	return filepath.Join(s.dir, "cache-"+hex.EncodeToString([]byte(id)))
}

// writeCache writes id's cache, then its marker, neither synced; only the
// first writer of an id writes them (O_EXCL), so a reader never sees a
// marker over a cache another writer is rewriting. A cache it cannot
// write is no cache: the row answers.
func (s *sideFiles) writeCache(id string, data []byte) {
	cache := s.cacheOf(id)
	f, err := os.OpenFile(cache, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return
	}
	_, err = f.Write(data)
	f.Close()
	if err == nil {
		os.WriteFile(cache+".ok", []byte("ok"), 0o644)
	}
}

// logged reports whether the store keeps attachment bytes in its log.
func (s *sideFiles) logged() bool { return s.how == sideLogCorrect || s.how == sideSyncRetried }

// logPath is the attachment log: a record a line, begun and ended by a
// newline so that a record after a hole a lost write left still reads.
func (s *sideFiles) logPath() string { return filepath.Join(s.dir, "attachments.log") }

// openLog opens (creating) the log, its name made durable.
func (s *sideFiles) openLog() error {
	f, err := os.OpenFile(s.logPath(), os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("%w: attachment log: %v", spec.ErrIO, err)
	}
	if err := syncDir(s.dir); err != nil {
		f.Close()
		return fmt.Errorf("%w: attachment log: %v", spec.ErrIO, err)
	}
	s.log = f
	return nil
}

// appendRecord appends id's bytes to the log and syncs it. The lock is
// held until the record is durable: no reader, in any process, sees it
// before a cut can no longer lose it.
func (s *sideFiles) appendRecord(id string, data []byte) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	fd := int(s.log.Fd())
	if err := syscall.Flock(fd, syscall.LOCK_EX); err != nil {
		return fmt.Errorf("%w: attachment log: %v", spec.ErrIO, err)
	}
	defer syscall.Flock(fd, syscall.LOCK_UN)
	if _, err := s.log.WriteString("\n" + hex.EncodeToString([]byte(id)) + " " + hex.EncodeToString(data) + "\n"); err != nil {
		return fmt.Errorf("%w: attachment log: %v", spec.ErrIO, err)
	}
	err := s.log.Sync()
	if err != nil && errors.Is(err, syscall.EIO) && s.how == sideSyncRetried {
		// The bug: the failed sync is retried, and its success trusted.
		err = s.log.Sync()
	}
	if err != nil {
		return fmt.Errorf("%w: attachment log: %v", spec.ErrIO, err)
	}
	return nil
}

// record is the bytes the log holds for id: those of its record whose
// bytes the row names (a real store's manifest would keep their digest;
// the reference's row keeps the bytes themselves), or none when the disk
// lost it.
func (s *sideFiles) record(id string, named []byte) []byte {
	f, err := os.Open(s.logPath())
	if err != nil {
		return []byte{}
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH); err != nil {
		return []byte{}
	}
	b, _ := io.ReadAll(f)
	want := hex.EncodeToString([]byte(id)) + " " + hex.EncodeToString(named)
	for _, line := range bytes.Split(b, []byte("\n")) {
		if string(line) == want {
			return bytes.Clone(named)
		}
	}
	return []byte{}
}

// ContinuityJournalMemory is the continuity reference with SQLite's
// rollback journal kept in memory (journal_mode=MEMORY) where the seed
// sets WAL (its conn setup: "PRAGMA journal_mode=WAL"): a commit then
// overwrites the database's pages in place with no journal on disk to
// roll them back, and SQLite's documentation warns that if "the
// application crashes in the middle of a transaction when the MEMORY
// journaling mode is set, then the database file will very likely go
// corrupt" (its journal_mode pragma). A power cut at the commit's sync,
// which keeps some of its page writes and loses others (each write its own
// fate), leaves a commit half applied, or a database SQLite cannot read:
// it breaks continuity.survives_power_loss. Writes persisted only whole, or
// only in order, as before issue 27's crash model, it would pass.
var ContinuityJournalMemory Bug

func init() {
	needsPowerCut["continuity_journal_memory"] = true
	ContinuityJournalMemory = register("continuity_journal_memory", c.StoreName, func(ctx context.Context, o spec.OpenOptions) (adapters.Target, error) {
		s, err := refcontinuity.Open(ctx, refcontinuity.Options{Path: o.Path, JournalMode: "MEMORY"})
		if err != nil {
			return nil, err
		}
		return sqlitedb.Target[c.Store](s, c.Apply), nil
	})
}
