package bugs

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
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
//   - RuntimeMetaSyncRetried keeps the session meta in a side log, appended
//     and fsynced at each save, and when the fsync fails retries it and
//     answers ok: Linux drops the dirty data of a failed fsync and the
//     retry succeeds without it (PostgreSQL's "fsyncgate", 2018; Linux's
//     Documentation/filesystems/vfs.rst on writeback errors), so a cut
//     loses the save.
//
// The same store done right (sideCorrect: temp file, fsync, rename, folder
// fsync; a failed fsync answered as an error) passes every crash state.
var (
	RuntimeAttachmentRenameNoDirSync, RuntimeAttachmentUnsynced Bug
	RuntimeAttachmentCacheOrdered, RuntimeMetaSyncRetried       Bug
)

// sideHow is how a side-file store makes its files durable.
type sideHow int

const (
	sideCorrect sideHow = iota
	sideNoDirSync
	sideNoSync
	sideCacheOrdered
	sideSyncRetried
)

func init() {
	RuntimeAttachmentRenameNoDirSync = sideFileBug("runtime_attachment_rename_no_dir_sync", sideNoDirSync)
	RuntimeAttachmentUnsynced = sideFileBug("runtime_attachment_unsynced", sideNoSync)
	RuntimeAttachmentCacheOrdered = sideFileBug("runtime_attachment_cache_ordered", sideCacheOrdered)
	RuntimeMetaSyncRetried = sideFileBug("runtime_meta_sync_retried", sideSyncRetried)
}

// sideFileBug registers the runtime reference with its side files made
// durable as how says.
func sideFileBug(name string, how sideHow) Bug {
	needsPowerCut[name] = true
	return register(name, r.StoreName, func(ctx context.Context, o spec.OpenOptions) (adapters.Target, error) {
		return OpenSideFiles(ctx, o, how)
	})
}

// OpenSideFiles opens the runtime reference with side files made durable
// as how says (sideCorrect: right). In memory there is no file beside
// the database: it is the reference.
func OpenSideFiles(ctx context.Context, o spec.OpenOptions, how sideHow) (adapters.Target, error) {
	s, err := refruntime.Open(ctx, refruntime.Options{Path: o.Path, Clock: o.Clock})
	if err != nil {
		return nil, err
	}
	if o.Path == "" {
		return sqlitedb.Target[r.Store](s, r.Apply), nil
	}
	return sqlitedb.Target[r.Store](&sideFiles{Store: s, dir: filepath.Dir(o.Path), how: how}, r.Apply), nil
}

// SideFilesCorrect is the side-file store done right, for the tests that
// show each side-file bug is its one wrong step.
func SideFilesCorrect(ctx context.Context, o spec.OpenOptions) (adapters.Target, error) {
	return OpenSideFiles(ctx, o, sideCorrect)
}

// sideFiles is the runtime reference with attachment bytes and the
// session meta answered from files beside its database: each variant is
// the store done right (sideCorrect) but for its one wrong step.
type sideFiles struct {
	*refruntime.Store
	dir string
	how sideHow
	// log is the meta log, open from the first save until Close, as a
	// side log a store keeps open (a sync fault may then name it).
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
	if old == nil && s.how != sideCacheOrdered {
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
	if s.how == sideCacheOrdered {
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

// metaLog is the side log of session meta saves: each a line of its own,
// begun and ended by a newline so that a record after a hole a lost write
// left still reads.
func (s *sideFiles) metaLog() string { return filepath.Join(s.dir, "meta.log") }

func (s *sideFiles) SaveSessionMeta(ctx context.Context, meta spec.RawJSON) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.log == nil {
		f, err := os.OpenFile(s.metaLog(), os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
		if err != nil {
			return fmt.Errorf("%w: meta log: %v", spec.ErrIO, err)
		}
		s.log = f
	}
	f := s.log
	// Held until the save is durable: no reader, in any process, sees a
	// save before a cut can no longer lose it.
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("%w: meta log: %v", spec.ErrIO, err)
	}
	defer syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
	if _, err := f.WriteString("\n" + hex.EncodeToString(meta) + "\n"); err != nil {
		return fmt.Errorf("%w: meta log: %v", spec.ErrIO, err)
	}
	if err := f.Sync(); err != nil {
		if !errors.Is(err, syscall.EIO) || s.how != sideSyncRetried {
			return fmt.Errorf("%w: meta log: %v", spec.ErrIO, err)
		}
		// The bug: the failed sync is retried, and its success trusted.
		if err := f.Sync(); err != nil {
			return fmt.Errorf("%w: meta log: %v", spec.ErrIO, err)
		}
	}
	// The log's own name, the first save's create.
	if err := syncDir(s.dir); err != nil {
		return fmt.Errorf("%w: meta log: %v", spec.ErrIO, err)
	}
	return nil
}

func (s *sideFiles) LoadSessionMeta(ctx context.Context) (spec.RawJSON, error) {
	f, err := os.Open(s.metaLog())
	if errors.Is(err, os.ErrNotExist) {
		return s.Store.LoadSessionMeta(ctx)
	}
	if err != nil {
		return nil, fmt.Errorf("%w: meta log: %v", spec.ErrIO, err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH); err != nil {
		return nil, fmt.Errorf("%w: meta log: %v", spec.ErrIO, err)
	}
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("%w: meta log: %v", spec.ErrIO, err)
	}
	// The last whole record: a torn one, or a hole a lost write left,
	// reads as no record.
	var last spec.RawJSON
	for _, line := range bytes.Split(b, []byte("\n")) {
		if m, err := hex.DecodeString(string(line)); err == nil && len(m) > 0 && json.Valid(m) {
			last = m
		}
	}
	if last == nil {
		return s.Store.LoadSessionMeta(ctx)
	}
	return last, nil
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
