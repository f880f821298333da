package sqlitewal

import (
	"bytes"
	"database/sql"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// hotJournal makes a database in DELETE journal mode with a transaction
// in flight that spilled pages into the database file: its database file
// before the transaction, the one in flight, and its journal, hot.
func hotJournal(t *testing.T) (before, during, journal []byte) {
	dir := t.TempDir()
	path := filepath.Join(dir, "t.db")
	h, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(DELETE)&_pragma=synchronous(FULL)&_pragma=cache_size(2)")
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	h.SetMaxOpenConns(1)
	for i, q := range []string{"CREATE TABLE t(k INTEGER PRIMARY KEY, v TEXT)", "INSERT INTO t VALUES (1, ?), (2, ?), (3, ?)"} {
		args := []any{}
		if i == 1 {
			args = []any{strings.Repeat("x", 3000), strings.Repeat("y", 3000), strings.Repeat("z", 3000)}
		}
		if _, err := h.Exec(q, args...); err != nil {
			t.Fatal(err)
		}
	}
	before, _ = os.ReadFile(path)
	tx, err := h.Begin()
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	for k := 1; k <= 3; k++ {
		if _, err := tx.Exec("UPDATE t SET v = ? WHERE k = ?", strings.Repeat("w", 3500), k); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := tx.Exec("INSERT INTO t VALUES (4, ?), (5, ?)", strings.Repeat("v", 5000), strings.Repeat("u", 5000)); err != nil {
		t.Fatal(err)
	}
	during, _ = os.ReadFile(path)
	journal, _ = os.ReadFile(path + "-journal")
	if bytes.Equal(before, during) || len(journal) == 0 {
		t.Fatal("the transaction spilled nothing into the database file, or has no journal")
	}
	return before, during, journal
}

// HotRollback does what SQLite's rollback of a hot journal does: for
// crash states of the pages a transaction spilled (each 512-byte sector
// of the database file changed or not), the database file SQLite leaves
// after opening it is Apply's, byte for byte.
func TestHotRollbackIsWhatSQLiteRollsBack(t *testing.T) {
	before, during, journal := hotJournal(t)
	rb, ok := HotRollback(journal)
	if !ok || len(rb.Restored) == 0 {
		t.Fatalf("the hot journal is not read (%v), or restores nothing", ok)
	}
	r := rand.New(rand.NewPCG(27, 4))
	for trial := range 12 {
		img := bytes.Clone(before)
		if trial > 0 {
			img = append(img, make([]byte, max(0, len(during)-len(img)))...)
			for s := 0; s*512 < len(during); s++ {
				if trial == 1 || r.IntN(2) == 0 {
					copy(img[s*512:], during[s*512:min((s+1)*512, len(during))])
				}
			}
		}
		dir := t.TempDir()
		path := filepath.Join(dir, "t.db")
		os.WriteFile(path, img, 0o600)
		os.WriteFile(path+"-journal", journal, 0o600)
		h, err := sql.Open("sqlite", "file:"+path)
		if err != nil {
			t.Fatal(err)
		}
		var n int
		if err := h.QueryRow("SELECT count(*) FROM t").Scan(&n); err != nil || n != 3 {
			t.Errorf("trial %d: %d rows after the rollback (%v), want 3", trial, n, err)
		}
		h.Close()
		got, _ := os.ReadFile(path)
		if want := rb.Apply(img); !bytes.Equal(got, want) {
			t.Errorf("trial %d: SQLite left %d bytes, Apply %d, or other bytes", trial, len(got), len(want))
		}
	}
}
