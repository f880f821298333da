package sqlitewal

import (
	"bytes"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	_ "modernc.org/sqlite"
)

// sqliteWAL makes a database in WAL mode with one transaction committed
// and checkpointed out of the way, then a second that adds three rows
// over several pages: its database file, the WAL before the second
// transaction, and the frames it appended, each as SQLite writes it (a
// frame's header, then its page).
func sqliteWAL(t *testing.T) (db, before []byte, writes []write) {
	dir := t.TempDir()
	path := filepath.Join(dir, "t.db")
	h, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)&_pragma=wal_autocheckpoint(0)")
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	h.SetMaxOpenConns(1)
	for _, q := range []string{
		"CREATE TABLE t(k INTEGER PRIMARY KEY, v TEXT)",
		"INSERT INTO t VALUES (1, 'one')",
	} {
		if _, err := h.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	read := func(p string) []byte {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	db, before = read(path), read(path+"-wal")
	if _, err := h.Exec("INSERT INTO t VALUES (2, ?), (3, ?), (4, ?)", strings.Repeat("a", 3000), strings.Repeat("b", 3000), strings.Repeat("c", 3000)); err != nil {
		t.Fatal(err)
	}
	after := read(path + "-wal")
	hd, ok := ParseHeader(after)
	if !ok || !bytes.Equal(db, read(path)) {
		t.Fatal("the WAL has no header SQLite accepts, or the database file changed")
	}
	for at := int64(len(before)); at+int64(hd.FrameSize()) <= int64(len(after)); at += int64(hd.FrameSize()) {
		writes = append(writes, write{at, after[at : at+FrameHeaderSize]}, write{at + FrameHeaderSize, after[at+FrameHeaderSize : at+int64(hd.FrameSize())]})
	}
	if len(writes) < 6 {
		t.Fatalf("the transaction wrote %d frames, want 3 or more", len(writes)/2)
	}
	return db, before, writes
}

type write struct {
	off  int64
	data []byte
}

func (w write) sectors() int { return int((w.off+int64(len(w.data))-1)/512 - w.off/512 + 1) }

// apply is the WAL with each write keeping the sectors its mask names.
func apply(before []byte, ws []write, masks []uint64) []byte {
	img := bytes.Clone(before)
	for i, w := range ws {
		for s := range w.sectors() {
			if masks[i]&(1<<s) == 0 {
				continue
			}
			lo := max((w.off/512+int64(s))*512, w.off)
			hi := min((w.off/512+int64(s)+1)*512, w.off+int64(len(w.data)))
			if hi > int64(len(img)) {
				img = append(img, make([]byte, hi-int64(len(img)))...)
			}
			copy(img[lo:], w.data[lo-w.off:hi-w.off])
		}
	}
	return img
}

// readBy opens the database with WAL image wal, as SQLite does after a
// crash, and answers what a reader sees.
func readBy(t *testing.T, db, wal []byte) string {
	dir := t.TempDir()
	path := filepath.Join(dir, "t.db")
	if err := os.WriteFile(path, db, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path+"-wal", wal, 0o600); err != nil {
		t.Fatal(err)
	}
	h, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	var n int
	var sum int64
	var keys, check string
	if err := h.QueryRow("SELECT count(*), coalesce(sum(length(v)), 0), coalesce(group_concat(k), '') FROM t").Scan(&n, &sum, &keys); err != nil {
		return "error: " + err.Error()
	}
	if err := h.QueryRow("PRAGMA integrity_check").Scan(&check); err != nil {
		return "error: " + err.Error()
	}
	return fmt.Sprintf("%d rows (%s), %d bytes, %s", n, keys, sum, check)
}

// sameRead checks key against SQLite itself: WAL images (crash states of a
// transaction's frames: every frame kept, every one lost, all but one
// sector, and random ones, each write's sectors kept in any subset) with
// one key must read the same. It answers how many reads it saw.
func sameRead(t *testing.T, key func([]byte) [32]byte) (int, error) {
	db, before, ws := sqliteWAL(t)
	r := rand.New(rand.NewPCG(27, 3))
	var states [][]uint64
	full := func() []uint64 {
		m := make([]uint64, len(ws))
		for i, w := range ws {
			m[i] = 1<<w.sectors() - 1
		}
		return m
	}
	states = append(states, full(), make([]uint64, len(ws)))
	for i, w := range ws {
		m := full()
		m[i] &^= 1 << r.IntN(w.sectors())
		states = append(states, m)
	}
	for range 40 {
		m := full()
		for i, w := range ws {
			switch r.IntN(4) {
			case 0:
				m[i] = 0
			case 1:
				m[i] = r.Uint64() & (1<<w.sectors() - 1)
			}
		}
		states = append(states, m)
	}
	reads := map[[32]byte]string{}
	distinct := map[string]bool{}
	for _, m := range states {
		img := apply(before, ws, m)
		got := readBy(t, db, img)
		distinct[got] = true
		k := key(img)
		if old, ok := reads[k]; ok && old != got {
			return len(distinct), fmt.Errorf("two WAL images of one key read differently: %q and %q", old, got)
		}
		reads[k] = got
	}
	return len(distinct), nil
}

// What Recover takes of a WAL is what SQLite reads: crash states with one
// key read the same through SQLite itself (the transaction's rows all
// there, or none), and both reads happen.
func TestRecoverReadsWhatSQLiteReads(t *testing.T) {
	n, err := sameRead(t, func(img []byte) [32]byte { return Recover(img).Key })
	if err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Errorf("the crash states read %d ways, want 2 (the commit taken or not)", n)
	}
}

// The check catches a key that tells no WAL state apart.
func TestAWrongKeyIsCaughtBySQLite(t *testing.T) {
	if _, err := sameRead(t, func([]byte) [32]byte { return [32]byte{} }); err == nil {
		t.Fatal("a key that puts every WAL state in one class passes")
	}
}
