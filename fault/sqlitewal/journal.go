package sqlitewal

import (
	"bytes"
	"encoding/binary"
)

// A rollback journal, read as SQLite's hot-journal rollback reads it
// (sqlite.org/fileformat2.html, section 3 "The Rollback Journal"; pager.c's
// pager_playback): a header (the magic d9d505f920a163d7, the page count nRec,
// the checksum nonce, the database's size in pages before the transaction,
// the sector size, the page size), padded to the sector size, then nRec
// records of a page number, the page's original content and a checksum
// (the nonce plus every 200th byte of the page, from the page size less
// 200 down). Rollback truncates the database to its size before, then
// writes each record's page back, stopping at the first record whose
// checksum fails; SQLite treats a journal as hot after a crash when it
// exists, is not empty and starts with a byte that is not zero (the
// atomic-commit page, sqlite.org/atomiccommit.html, section 4.2 "Hot
// Rollback Journals").

var journalMagic = []byte{0xd9, 0xd5, 0x05, 0xf9, 0x20, 0xa1, 0x63, 0xd7}

// Rollback is what a hot journal's rollback does to the database: its size
// after (Pages of PageSize bytes) and the pages it writes back, with their
// contents.
type Rollback struct {
	PageSize int
	Pages    uint32
	Restored map[uint32][]byte
}

// HotRollback reads journal as a crash's rollback does: ok is false where
// this reading does not decide what SQLite does (no hot journal, a record
// count left to the file's size, a page size or sector size SQLite would
// refuse): then nothing may be assumed of it. A journal has a segment per
// sync of a transaction that spilled pages (each its own header at the
// next multiple of the sector size, pager.c's journalHdrOffset); the
// rollback reads them in turn until a header or a record fails.
func HotRollback(journal []byte) (Rollback, bool) {
	if len(journal) < 28 || journal[0] == 0 || !bytes.Equal(journal[:8], journalMagic) {
		return Rollback{}, false
	}
	be := binary.BigEndian
	rb := Rollback{Pages: be.Uint32(journal[16:]), PageSize: int(be.Uint32(journal[24:])), Restored: map[uint32][]byte{}}
	sector := int(be.Uint32(journal[20:]))
	ps := rb.PageSize
	if ps < 512 || ps > 65536 || ps&(ps-1) != 0 || sector < 32 || sector > 65536 || sector&(sector-1) != 0 {
		return Rollback{}, false
	}
	rec := 8 + ps
	for hdr := 0; hdr+sector <= len(journal) && bytes.Equal(journal[hdr:hdr+8], journalMagic); {
		nRec, nonce := be.Uint32(journal[hdr+8:]), be.Uint32(journal[hdr+12:])
		if nRec == 0xffffffff {
			return Rollback{}, false
		}
		off := hdr + sector
		for u := uint32(0); u < nRec; u++ {
			if off+rec > len(journal) {
				return rb, true
			}
			r := journal[off : off+rec]
			pg := be.Uint32(r)
			data := r[4 : 4+ps]
			sum := nonce
			for i := ps - 200; i > 0; i -= 200 {
				sum += uint32(data[i])
			}
			if pg == 0 || sum != be.Uint32(r[4+ps:]) {
				// pager_playback_one_page answers SQLITE_DONE: the
				// rollback ends here.
				return rb, true
			}
			if _, ok := rb.Restored[pg]; !ok {
				// A page is journaled once a transaction; were it twice,
				// the first record holds its content before.
				rb.Restored[pg] = data
			}
			off += rec
		}
		hdr = (off + sector - 1) / sector * sector
	}
	return rb, true
}

// Apply is the database image db after the rollback.
func (rb Rollback) Apply(db []byte) []byte {
	out := make([]byte, int(rb.Pages)*rb.PageSize)
	copy(out, db)
	for pg, data := range rb.Restored {
		if at := int(pg-1) * rb.PageSize; at < len(out) {
			copy(out[at:], data)
		}
	}
	return out
}
