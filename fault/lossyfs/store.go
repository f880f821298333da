package lossyfs

import (
	"context"
	"os"
	"slices"
	"syscall"

	gofs "github.com/hanwen/go-fuse/v2/fs"
	"github.com/hanwen/go-fuse/v2/fuse"
)

// Pages handed to the kernel at a sync (FUSE_NOTIFY_STORE), so that it
// reads them from its own cache instead of asking the server.
//
// Without the kernel's writeback cache (which the crash model rules out:
// the server would see a transaction's writes only at the sync, never one
// at a time), a write that covers part of a page leaves that page not up
// to date in the kernel's cache, and every later read of it is a READ
// round trip; so is the next write into it split in two. SQLite's WAL
// frames (24 bytes of header, then a page) never line up with the
// kernel's pages, so every WAL page was read back from the server.
//
// FUSE requests over BenchmarkPowerLossDisk's 12 seeds (disk=lossyfs),
// before -> after (counted with go-fuse's debug log; perf record -e
// fuse:fuse_request_send -a counts them without touching the server):
//
//	           continuity     runtime        client
//	WRITE      6708 -> 6513   5861 -> 5287   8575 -> 7761
//	READ       1859 -> 96     1264 -> 96     2082 -> 96
//	GETATTR     551 -> 513     588 -> 549     807 -> 756
//	FSYNC       443            977           1029
//	OPEN        339            323            537
//	SETATTR     363            346            548
//	RELEASE     387            371            585
//	OPENDIR     144            204            181 (and as many RELEASEDIR)
//	FSYNCDIR    120            180            157
//	other       295            294            294 (LOOKUP, FORGET, CREATE, UNLINK, ...)
//	all       11353 -> 9357  10612 -> 8831  14976 -> 12126
//
// The 96 READs left are the -shm's pages, mapped; the WRITEs saved are
// each transaction's first frame, no longer split at the WAL's last page.
//
// At a successful sync, the server stores every page the file's writes
// left partly written since the kernel last had it whole, as the backing
// file now holds it. Why that cannot hand the kernel stale bytes:
//   - The kernel holds the file's inode lock across the FSYNC request
//     (fuse_fsync), as across a write (fuse_cache_write_iter): no write or
//     truncation of the file runs meanwhile, so the backing file holds
//     what its pages do, and no page of it is locked by a write (the store
//     would wait for it). No lock of the server's is held while it
//     stores: a READ that locks a page must be answered for it to go on.
//   - A page the kernel may have up to date (read from the server, stored,
//     written whole, or below the file's size when the server began to
//     track it) is never stored: it may be mapped and changed through the
//     mapping, which the backing file does not see until the kernel writes
//     it back. A page not up to date cannot be mapped (a fault reads it
//     first, and the server sees that READ). A file whose mapped pages the
//     kernel wrote back (a WRITE with no process: FUSE_WRITE_CACHE, as for
//     SQLite's -shm) is never stored at all. What remains is a race: a
//     fault that reads a page at the very moment a sync of the same file
//     stores it, the faulting process writing it before the store lands.
//   - A cut changes the backing files behind the kernel: a thaw waits for
//     every store under way (l.stores) before it drops the folder's pages,
//     and a store that starts later reads what the cut left.

var pageSize = int64(os.Getpagesize())

// pages is what the server knows of a file's pages in the kernel's cache.
type pages struct {
	// base: the file's size when it was first tracked; the kernel may
	// hold any page below it.
	base int64
	// warm are the pages at or past base the kernel may hold up to date;
	// partial, those written in part since, that it cannot.
	warm, partial map[int64]bool
	// mapped: the kernel wrote back mapped pages of the file.
	mapped bool
}

func (p *pages) isWarm(pg int64) bool { return pg*pageSize < p.base || p.warm[pg] }

// read notes a READ of [off, off+n): the kernel has those pages now (the
// ones below base it may have had already: not kept, so that reading a
// large file does not grow warm).
func (p *pages) read(off int64, n int) {
	for pg := max(off, p.base) / pageSize; pg*pageSize < off+int64(n); pg++ {
		if p.isWarm(pg) {
			continue
		}
		if p.warm == nil {
			p.warm = map[int64]bool{}
		}
		p.warm[pg] = true
		delete(p.partial, pg)
	}
}

// wrote notes a write of [off, off+n): a page it covers whole is up to date
// in the kernel, one it covers in part is not, unless it was.
func (p *pages) wrote(ctx context.Context, off int64, n int) {
	if c, ok := ctx.(*fuse.Context); ok && c.Pid == 0 {
		p.mapped, p.partial = true, nil
	}
	if p.mapped || n <= 0 {
		return
	}
	end := off + int64(n)
	for pg := off / pageSize; pg*pageSize < end; pg++ {
		if off <= pg*pageSize && (pg+1)*pageSize <= end {
			p.read(pg*pageSize, int(pageSize))
			continue
		}
		if !p.isWarm(pg) {
			if p.partial == nil {
				p.partial = map[int64]bool{}
			}
			p.partial[pg] = true
		}
	}
}

// toStore takes the pages to store at a sync, in order, and counts them
// warm.
func (p *pages) toStore() []int64 {
	if p.mapped || len(p.partial) == 0 {
		return nil
	}
	out := make([]int64, 0, len(p.partial))
	for pg := range p.partial {
		out = append(out, pg)
	}
	slices.Sort(out)
	for _, pg := range out {
		p.read(pg*pageSize, int(pageSize))
	}
	return out
}

// store hands the kernel pages pgs of f (up to the end of the file), as
// the backing file holds them, a run of adjacent pages at a time. No lock
// of the server's is held.
func (l *lossy) store(node *gofs.Inode, f *file, pgs []int64) {
	if node == nil || len(pgs) == 0 {
		return
	}
	l.stores.RLock()
	defer l.stores.RUnlock()
	for i := 0; i < len(pgs); {
		j := i + 1
		for j < len(pgs) && pgs[j] == pgs[j-1]+1 && j-i < maxStorePages {
			j++
		}
		buf := make([]byte, int64(j-i)*pageSize)
		f.mu.Lock()
		n, err := 0, error(syscall.EBADF)
		if f.fd >= 0 {
			n, err = syscall.Pread(f.fd, buf, pgs[i]*pageSize)
		}
		f.mu.Unlock()
		if err != nil || n <= 0 {
			return
		}
		// An error (ENOENT: the kernel forgot the inode) only costs the
		// READs the store would have saved.
		node.WriteCache(pgs[i]*pageSize, buf[:n])
		i = j
	}
}

// maxStorePages bounds one store (the kernel takes up to its max_write).
const maxStorePages = 32
