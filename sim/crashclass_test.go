package sim

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math/big"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/storecheck/storecheck/fault"
	"github.com/storecheck/storecheck/fault/lossyfs"
	"github.com/storecheck/storecheck/fault/sqlitewal"
	"github.com/storecheck/storecheck/internal/bugs"
)

// walBuilder writes a WAL as SQLite does (wal.c: the header in one write
// at the first frame of a generation, then each frame's header and its
// page in two writes), little-endian checksums, with 512-byte pages so
// that each page write tears across two sectors.
type walBuilder struct {
	ps    int
	salt  [2]uint32
	sum   [2]uint32
	image []byte
}

func newWAL(ps int, salt1, salt2 uint32) (*walBuilder, lossyfs.Change) {
	w := &walBuilder{ps: ps, salt: [2]uint32{salt1, salt2}}
	h := make([]byte, sqlitewal.HeaderSize)
	be := binary.BigEndian
	be.PutUint32(h, 0x377f0682)
	be.PutUint32(h[4:], 3007000)
	be.PutUint32(h[8:], uint32(ps))
	be.PutUint32(h[16:], salt1)
	be.PutUint32(h[20:], salt2)
	w.sum = sqlitewal.Checksum(false, [2]uint32{}, h[:24])
	be.PutUint32(h[24:], w.sum[0])
	be.PutUint32(h[28:], w.sum[1])
	w.image = h
	return w, lossyfs.Change{Data: h}
}

// frame appends a frame of page pg (commit: the database's size after,
// 0 for none) and answers its two writes.
func (w *walBuilder) frame(pg, commit uint32, fill byte) []lossyfs.Change {
	be := binary.BigEndian
	fh := make([]byte, sqlitewal.FrameHeaderSize)
	be.PutUint32(fh, pg)
	be.PutUint32(fh[4:], commit)
	be.PutUint32(fh[8:], w.salt[0])
	be.PutUint32(fh[12:], w.salt[1])
	page := make([]byte, w.ps)
	for i := range page {
		page[i] = fill + byte(i%7)
	}
	w.sum = sqlitewal.Checksum(false, sqlitewal.Checksum(false, w.sum, fh[:8]), page)
	be.PutUint32(fh[16:], w.sum[0])
	be.PutUint32(fh[20:], w.sum[1])
	off := int64(len(w.image))
	w.image = append(append(w.image, fh...), page...)
	return []lossyfs.Change{{Off: off, Data: fh}, {Off: off + int64(len(fh)), Data: page}}
}

// syntheticCut is a cut of a database in WAL mode with a side file: the
// WAL has one committed frame durable and a transaction of three frames
// unsynced; the database file a page rewritten that the WAL's committed
// frames hold (page 1) and one they do not (page 3); the side file two
// writes, the second rewriting the first's bytes with the same ones.
func syntheticCut() (map[string]lossyfs.FileLog, []fateWrite) {
	ps := 512
	w, _ := newWAL(ps, 7, 9)
	w.frame(1, 3, 1)
	durable := slices.Clone(w.image)
	var wal []lossyfs.Change
	wal = append(wal, w.frame(2, 0, 2)...)
	wal = append(wal, w.frame(1, 0, 3)...)
	wal = append(wal, w.frame(3, 3, 4)...)
	db := make([]byte, 3*ps)
	for i := range db {
		db[i] = byte(i % 5)
	}
	page := func(n int, fill byte) lossyfs.Change {
		b := make([]byte, ps)
		for i := range b {
			b[i] = fill
		}
		return lossyfs.Change{Off: int64(n-1) * int64(ps), Data: b}
	}
	side := []lossyfs.Change{{Off: 0, Data: []byte("hello")}, {Off: 0, Data: []byte("hello")}}
	logs := map[string]lossyfs.FileLog{
		"s.db-wal": {Durable: durable, Changes: wal},
		"s.db":     {Durable: db, Changes: []lossyfs.Change{page(1, 9), page(3, 8)}},
		"side":     {Durable: nil, Changes: side},
	}
	var writes []fateWrite
	for _, f := range []string{"s.db", "s.db-wal", "side"} {
		for i, c := range logs[f].Changes {
			writes = append(writes, fateWrite{file: f, n: i + 1, sectors: c.Sectors()})
		}
	}
	return logs, writes
}

// allStates calls fn with every crash state of writes: each write's
// sectors kept in every subset.
func allStates(writes []fateWrite, fn func(lossyfs.Fates)) {
	var walk func(i int, f lossyfs.Fates)
	walk = func(i int, f lossyfs.Fates) {
		if i == len(writes) {
			fn(f)
			return
		}
		w := writes[i]
		for m := range 1 << w.sectors {
			if m == 0 {
				walk(i+1, f)
				continue
			}
			k := lossyfs.Kept{File: w.file, N: w.n}
			if m != 1<<w.sectors-1 {
				for s := range w.sectors {
					if m&(1<<s) != 0 {
						k.Sectors = append(k.Sectors, s)
					}
				}
			}
			walk(i+1, append(slices.Clone(f), k))
		}
	}
	walk(0, nil)
}

// checkClasses holds the enumeration's classes against the states
// themselves: every crash state's class computed directly (classKey, no
// reduction but the definitions), the classes must be those the
// enumeration gives, each with as many states, each representative in
// its own.
func checkClasses(logs map[string]lossyfs.FileLog, writes []fateWrite, entryOps []string) (cutClasses, error) {
	entries := len(entryOps)
	cc, err := classesOf(logs, writes, entryOps)
	if err != nil {
		return cc, err
	}
	truth := map[string]int64{}
	states := int64(0)
	allStates(writes, func(f lossyfs.Fates) {
		for keep := 0; keep <= entries; keep++ {
			truth[classKey(logs, writes, entryOps, f, keep)]++
			states++
		}
	})
	if cc.States.Cmp(big.NewInt(states)) != 0 {
		return cc, fmt.Errorf("the enumeration counts %v states, there are %d", cc.States, states)
	}
	if cc.Classes.Cmp(big.NewInt(int64(len(truth)))) != 0 {
		return cc, fmt.Errorf("the enumeration has %v classes, the states fall in %d", cc.Classes, len(truth))
	}
	seen := map[string]bool{}
	var bad error
	cc.counted(1<<30, func(f lossyfs.Fates, keep int, count *big.Int) bool {
		k := classKey(logs, writes, entryOps, f, keep)
		switch {
		case seen[k]:
			bad = fmt.Errorf("two representatives (the second %v, keep %d) in one class", f, keep)
		case count.Cmp(big.NewInt(truth[k])) != 0:
			bad = fmt.Errorf("the class of %v (keep %d) has %d states, the enumeration says %v", f, keep, truth[k], count)
		}
		seen[k] = true
		return bad == nil
	})
	return cc, bad
}

// The classes of a cut are exactly the sets of crash states that leave
// files read the same (checked against every state of a small cut: a WAL
// transaction of 3 frames, a database page its WAL holds and one it does
// not, a side file rewritten with the same bytes), each representative
// adversarial: the WAL class of the lost commit keeps all its frames but
// a sector.
func TestCrashClassesAreTheStatesReadTheSame(t *testing.T) {
	logs, writes := syntheticCut()
	cc, err := checkClasses(logs, writes, []string{"create side"})
	if err != nil {
		t.Fatal(err)
	}
	// The WAL: the commit taken or not (2); page 1 of the database, held
	// by the WAL's frames either way: 1 class; page 3, held only when the
	// commit is taken: 1, else 2 (lost, kept: one sector); the side file:
	// its bytes or none (the second write changes nothing): 2; two
	// prefixes of the entry ops. The states: 13 sectors (the WAL's 9, the
	// database's 2, the side file's 2), each kept or not, times 2.
	if want := int64((2 + 1) * 2 * 2); cc.Classes.Int64() != want {
		t.Errorf("%v classes, want %d", cc.Classes, want)
	}
	if cc.States.Cmp(big.NewInt(1<<14)) != 0 {
		t.Errorf("%v states, want 2^14", cc.States)
	}
	first := true
	cc.each(1, func(f lossyfs.Fates, keep int) bool {
		sectors := 0
		for _, k := range f {
			if k.File != "s.db-wal" {
				continue
			}
			if len(k.Sectors) > 0 {
				sectors += len(k.Sectors)
				continue
			}
			sectors += logs[k.File].Changes[k.N-1].Sectors()
		}
		if first && sectors != 8 {
			t.Errorf("the first class's representative keeps %d of the WAL's 9 sectors (%v), want all but one", sectors, f)
		}
		first = false
		return true
	})
}

// A wrong reduction (every WAL state one class) is caught by the check.
func TestAWrongWALReductionIsCaught(t *testing.T) {
	defer func(old func(string, lossyfs.FileLog, []dim) (dim, error)) { walReduction = old }(walReduction)
	walReduction = func(file string, lg lossyfs.FileLog, regs []dim) (dim, error) {
		d, err := walDim(file, lg, regs)
		if err != nil || len(d.vars) < 2 {
			return d, err
		}
		one := d.vars[0]
		one.count = d.total()
		d.vars = []variant{one}
		return d, nil
	}
	logs, writes := syntheticCut()
	if _, err := checkClasses(logs, writes, nil); err == nil {
		t.Fatal("the check passes a reduction that puts every WAL state in one class")
	} else {
		t.Logf("caught: %v", err)
	}
	if lossyfs.Available() != nil {
		return
	}
	if err := realCutCheck(t); err == nil {
		t.Fatal("the check of a real cut passes a reduction that puts every WAL state in one class")
	} else {
		t.Logf("caught on a real cut: %v", err)
	}
}

// The images the classes are computed from are those a cut leaves: for
// drawn fates (each write kept, lost or torn in some of its sectors) over
// overlapping writes, a write past the end and a truncation of one file
// and the writes of a new one, the files on the mount after the cut are
// imagesOf's.
func TestTheImagesInMemoryAreWhatACutLeaves(t *testing.T) {
	d := mountForTest(t)
	r := rand.New(rand.NewPCG(27, 1))
	for trial := range 12 {
		dir := filepath.Join(d.Dir, fmt.Sprintf("run%d", trial))
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		f, err := os.Create(filepath.Join(dir, "f"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := f.Write(bytes.Repeat([]byte("s"), 2000)); err != nil || f.Sync() != nil {
			t.Fatal(err)
		}
		g, err := os.Create(filepath.Join(dir, "g"))
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range []struct {
			h   *os.File
			off int64
			n   int
			b   byte
		}{{f, 100, 700, 'a'}, {f, 300, 100, 'b'}, {f, 1500, 1200, 'c'}, {g, 0, 600, 'd'}, {g, 1000, 50, 'e'}, {f, 2600, 10, 'f'}} {
			if _, err := w.h.WriteAt(bytes.Repeat([]byte{w.b}, w.n), w.off); err != nil {
				t.Fatal(err)
			}
			if w.b == 'c' && trial%2 == 1 {
				if err := f.Truncate(1900); err != nil {
					t.Fatal(err)
				}
			}
		}
		u, err := d.Unsynced(dir)
		if err != nil {
			t.Fatal(err)
		}
		logs, err := d.Logs(dir)
		if err != nil {
			t.Fatal(err)
		}
		fates := lossyfs.DrawFates(r, u, nil)
		want := imagesOf(logs, map[string]bool{"f": true, "g": true}, fates)
		if _, err := d.Cut(dir, fates); err != nil {
			t.Fatal(err)
		}
		f.Close()
		g.Close()
		if err := d.Thaw(dir); err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"f", "g"} {
			got, err := os.ReadFile(filepath.Join(dir, name))
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want[name]) {
				t.Errorf("trial %d, fates %v: %s is %d bytes after the cut, %d in memory, or other bytes", trial, fates, name, len(got), len(want[name]))
			}
		}
	}
}

// journalCut is a cut of a database under a synced hot rollback journal
// (512-byte pages): the journal holds pages 1 and 2 of 3; the database
// file has page 1 rewritten, page 3 rewritten and a page 4 appended, none
// synced.
func journalCut() (map[string]lossyfs.FileLog, []fateWrite) {
	ps := 512
	db := make([]byte, 3*ps)
	for i := range db {
		db[i] = byte(i % 11)
	}
	be := binary.BigEndian
	j := make([]byte, ps)
	copy(j, []byte{0xd9, 0xd5, 0x05, 0xf9, 0x20, 0xa1, 0x63, 0xd7})
	be.PutUint32(j[8:], 2)   // nRec
	be.PutUint32(j[12:], 77) // nonce
	be.PutUint32(j[16:], 3)  // pages before
	be.PutUint32(j[20:], 512)
	be.PutUint32(j[24:], uint32(ps))
	for _, pg := range []int{1, 2} {
		r := make([]byte, 8+ps)
		be.PutUint32(r, uint32(pg))
		copy(r[4:], db[(pg-1)*ps:pg*ps])
		sum := uint32(77)
		for i := ps - 200; i > 0; i -= 200 {
			sum += uint32(r[4+i])
		}
		be.PutUint32(r[4+ps:], sum)
		j = append(j, r...)
	}
	page := func(n int, fill byte) lossyfs.Change {
		return lossyfs.Change{Off: int64(n-1) * int64(ps), Data: bytes.Repeat([]byte{fill}, ps)}
	}
	logs := map[string]lossyfs.FileLog{
		"j.db":         {Durable: db, Changes: []lossyfs.Change{page(1, 0xaa), page(3, 0xbb), page(4, 0xcc)}},
		"j.db-journal": {Durable: j},
	}
	var writes []fateWrite
	for i, c := range logs["j.db"].Changes {
		writes = append(writes, fateWrite{file: "j.db", n: i + 1, sectors: c.Sectors()})
	}
	return logs, writes
}

// Under a synced hot journal, the database pages its rollback writes back
// and those past the size it truncates to are one class whatever they
// hold (pages 1 and 4: one class each; page 3: two); with the journal's
// name not yet durable, nothing is assumed of it (2 each).
func TestPagesAHotJournalRestoresAreOneClass(t *testing.T) {
	logs, writes := journalCut()
	cc, err := checkClasses(logs, writes, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cc.Classes.Int64() != 2 {
		t.Errorf("%v classes under the hot journal, want 2", cc.Classes)
	}
	cc, err = checkClasses(logs, writes, []string{"create j.db-journal"})
	if err != nil {
		t.Fatal(err)
	}
	if cc.Classes.Int64() != 2*2*2*2 {
		t.Errorf("%v classes with the journal's name not durable, want 16", cc.Classes)
	}
}

// On a real cut (the continuity reference's commit, cut at its WAL's
// sync: 2^20 states or more), every sampled crash state's class, computed
// directly, is one of the enumeration's, whose representatives are each in
// a class of their own.
func TestARealCutsStatesFallInItsClasses(t *testing.T) {
	if err := realCutCheck(t); err != nil {
		t.Fatal(err)
	}
}

// realCutCheck is that check: an error names a state in no class.
func realCutCheck(t *testing.T) error {
	t.Helper()
	d := mountForTest(t)
	ctx := context.Background()
	x := &exhauster{subj: continuitySubject, b: referenceBackend(bugs.Bug{}), d: d, p: ExhaustParams{Ops: 2, Choices: 1}.withDefaults()}
	w := x.workloadOf([]int{0, 0})
	points, failed, err := x.probe(ctx, w, lossyfs.EntriesPOSIX)
	if err != nil || failed != nil {
		t.Fatal(err, failed)
	}
	syncs, err := x.syncPoints(ctx, w, lossyfs.EntriesPOSIX, fault.FatedFiles(points[len(points)-1].unsynced))
	if err != nil || len(syncs) == 0 {
		t.Fatalf("no sync point: %v", err)
	}
	pt := syncs[0]
	writes := writesOf(pt.unsynced)
	cc, err := classesOf(pt.logs, writes, pt.entryOps)
	if err != nil || len(writes) < 3 || cc.States.Cmp(big.NewInt(1<<20)) < 0 {
		t.Fatalf("%d writes, %v states: %v", len(writes), cc.States, err)
	}
	reps := map[string]bool{}
	cc.each(1<<20, func(f lossyfs.Fates, keep int) bool {
		k := classKey(pt.logs, writes, pt.entryOps, f, keep)
		if reps[k] {
			t.Errorf("two representatives in one class: %v", f)
		}
		reps[k] = true
		return true
	})
	r := rand.New(rand.NewPCG(27, 5))
	var all lossyfs.Fates
	for _, w := range writes {
		all = append(all, lossyfs.Kept{File: w.file, N: w.n})
	}
	for i := range 300 {
		f := lossyfs.DrawFates(r, pt.unsynced, fault.NoFate)
		switch {
		case i == 0:
			f = all // the commit whole
		case r.IntN(4) == 0:
			f = nil
		}
		if k := classKey(pt.logs, writes, pt.entryOps, f, r.IntN(len(pt.entryOps)+1)); !reps[k] {
			return fmt.Errorf("the state %v falls in no class of the enumeration's %v", f, cc.Classes)
		}
	}
	t.Logf("%d writes, %v states in %v classes", len(writes), cc.States, cc.Classes)
	return nil
}
