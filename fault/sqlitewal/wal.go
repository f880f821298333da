// Package sqlitewal reads a SQLite WAL file as SQLite's recovery does:
// which frames it takes, and so what a reader sees. It is how the
// exhaustive mode (package sim) tells apart the crash states of a WAL
// that SQLite can tell apart, and no others.
//
// The format (sqlite.org/fileformat2.html, section 4 "The Write-Ahead Log"
// (walformat); wal.c's header comment): a 32-byte header (magic 0x377f0682
// or 0x377f0683, its low bit the checksums' byte order, big-endian when
// set; version 3007000; page size; checkpoint sequence; salt-1, salt-2;
// checksum-1, checksum-2 of its first 24 bytes), then frames of a 24-byte
// header (page number; for a commit frame the database's size in pages,
// else 0; salt-1, salt-2; cumulative checksum-1, -2) and a page. "A frame
// is considered valid if and only if the following conditions are true:
// the salt-1 and salt-2 values in the frame-header match salt values in
// the wal-header; the checksum values in the final 8 bytes of the
// frame-header exactly match the checksum computed consecutively on the
// first 24 bytes of the WAL header and the first 8 bytes and the content
// of all frames up to and including the current frame." Recovery
// (walIndexRecover) reads frames in order while each is valid, stops at
// the first that is not, and keeps those up to the last valid commit
// frame: a reader sees nothing past it.
package sqlitewal

import (
	"crypto/sha256"
	"encoding/binary"
)

// HeaderSize and FrameHeaderSize are the WAL's and a frame's header sizes.
const (
	HeaderSize      = 32
	FrameHeaderSize = 24
	version         = 3007000
)

// Header is a WAL header that SQLite accepts.
type Header struct {
	BigEndian    bool
	PageSize     int
	Salt1, Salt2 uint32
	// Sum is the header's checksum: the seed of the first frame's.
	Sum [2]uint32
}

// FrameSize is a frame's size: its header and a page.
func (h Header) FrameSize() int { return FrameHeaderSize + h.PageSize }

// FrameAt is the offset of frame n (from 1).
func (h Header) FrameAt(n int) int64 { return HeaderSize + int64(n-1)*int64(h.FrameSize()) }

// ParseHeader reads a WAL header: ok is false when SQLite would ignore the
// WAL (too short, a wrong magic, version, page size or checksum).
func ParseHeader(b []byte) (Header, bool) {
	if len(b) < HeaderSize {
		return Header{}, false
	}
	be := binary.BigEndian
	magic := be.Uint32(b)
	if magic&^1 != 0x377f0682 || be.Uint32(b[4:]) != version {
		return Header{}, false
	}
	h := Header{BigEndian: magic&1 == 1, PageSize: int(be.Uint32(b[8:])), Salt1: be.Uint32(b[16:]), Salt2: be.Uint32(b[20:])}
	if h.PageSize == 1 {
		h.PageSize = 65536 // "the value 1 means 65536" (fileformat2.html)
	}
	if h.PageSize < 512 || h.PageSize > 65536 || h.PageSize&(h.PageSize-1) != 0 {
		return Header{}, false
	}
	h.Sum = Checksum(h.BigEndian, [2]uint32{}, b[:24])
	if h.Sum[0] != be.Uint32(b[24:]) || h.Sum[1] != be.Uint32(b[28:]) {
		return Header{}, false
	}
	return h, true
}

// Checksum is SQLite's WAL checksum of data (a multiple of 8 bytes) from
// s (fileformat2.html, "Checksum Algorithm"): s0 += x[i] + s1; s1 +=
// x[i+1] + s0, over the 32-bit words x in the WAL's byte order.
func Checksum(bigEndian bool, s [2]uint32, data []byte) [2]uint32 {
	var order binary.ByteOrder = binary.LittleEndian
	if bigEndian {
		order = binary.BigEndian
	}
	s0, s1 := s[0], s[1]
	for i := 0; i+8 <= len(data); i += 8 {
		s0 += order.Uint32(data[i:]) + s1
		s1 += order.Uint32(data[i+4:]) + s0
	}
	return [2]uint32{s0, s1}
}

// Frame is a frame's verdict: whether it is valid after a chain ending in
// sum, and if so the chain's new end, its page and, for a commit frame,
// the database's size in pages.
type Frame struct {
	Valid  bool
	Sum    [2]uint32
	Page   uint32
	Commit uint32
}

// CheckFrame checks frame (FrameSize bytes; fewer: not whole, so not
// valid) after a chain ending in sum, as walDecodeFrame does.
func (h Header) CheckFrame(sum [2]uint32, frame []byte) Frame {
	if len(frame) < h.FrameSize() {
		return Frame{}
	}
	be := binary.BigEndian
	pg := be.Uint32(frame)
	if pg == 0 || be.Uint32(frame[8:]) != h.Salt1 || be.Uint32(frame[12:]) != h.Salt2 {
		return Frame{}
	}
	s := Checksum(h.BigEndian, sum, frame[:8])
	s = Checksum(h.BigEndian, s, frame[FrameHeaderSize:h.FrameSize()])
	if s[0] != be.Uint32(frame[16:]) || s[1] != be.Uint32(frame[20:]) {
		return Frame{}
	}
	return Frame{Valid: true, Sum: s, Page: pg, Commit: be.Uint32(frame[4:])}
}

// Read is what SQLite's recovery takes of a WAL image: its header, and
// the frames up to the last valid commit frame (Frames of them, the pages
// they hold in Pages); ok false when it ignores the WAL.
type Read struct {
	OK     bool
	Header Header
	Frames int
	Pages  []uint32
	// Key is a digest of what a reader sees: the header's bytes and the
	// frames taken, byte for byte; two images with one key are read the
	// same.
	Key [32]byte
}

// Recover reads image as walIndexRecover does.
func Recover(image []byte) Read {
	h, ok := ParseHeader(image)
	if !ok {
		return Read{Key: sha256.Sum256([]byte("no wal"))}
	}
	r := Read{OK: true, Header: h}
	sum := h.Sum
	var pages []uint32
	for n := 1; ; n++ {
		at := h.FrameAt(n)
		if at+int64(h.FrameSize()) > int64(len(image)) {
			break
		}
		f := h.CheckFrame(sum, image[at:at+int64(h.FrameSize())])
		if !f.Valid {
			break
		}
		sum = f.Sum
		pages = append(pages, f.Page)
		if f.Commit != 0 {
			r.Frames, r.Pages = n, append([]uint32(nil), pages...)
		}
	}
	r.Key = sha256.Sum256(image[:h.FrameAt(r.Frames+1)])
	return r
}
