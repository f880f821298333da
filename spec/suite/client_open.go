package suite

import (
	"crypto/sha256"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/storecheck/storecheck/spec"
	cli "github.com/storecheck/storecheck/spec/client"
)

// Two handles on one file, and opening: the schema gate, reopening, a
// locked database.
func clientOpenSpecs(fx *clientFixture) {
	Describe("two handles on one database", func() {
		It("keep the outbox, the session gate, the bindings and the first verdict across handles, as two processes would", func() {
			need(fx.h.Capabilities.SharedFiles, "shared-files", "two handles on one file")
			t := fx.open(fx.path)
			fx.enqueue(opA, fx.env(taskA))
			Expect(fx.acted(t.EnqueueIntent(fx.ctx, opA, fx.env(taskB)))).To(BeFalse())
			Expect(fx.acted(t.AcceptIntent(fx.ctx, opA, spec.RawJSON(`{"by":"t"}`)))).To(BeTrue())
			Expect(fx.acted(fx.s.BumpIntent(fx.ctx, opA, fx.at(0), "late"))).To(BeFalse())
			Expect(fx.intent(opA).State).To(Equal(cli.IntentAccepted))

			Expect(fx.upsert(taskA, fx.tuple(sessS, 1, 5, cli.AgentReady, cli.ResourceOpen))).To(BeTrue())
			Expect(fx.acted(t.UpsertSession(fx.ctx, taskA, fx.tuple(sessS, 1, 5, cli.AgentWorking, cli.ResourceOpen)))).To(BeFalse())
			Expect(fx.acted(t.UpsertSession(fx.ctx, taskB, fx.tuple(sessS, 1, 6, cli.AgentReady, cli.ResourceOpen)))).To(BeTrue())
			Expect(fx.active()).To(Equal([]cli.LiveSession{{SessionID: sessS, TaskID: taskB}}))

			Expect(fx.acted(t.SettleTask(fx.ctx, taskA, cli.TaskCompleted))).To(BeTrue())
			Expect(fx.acted(fx.s.SettleTask(fx.ctx, taskA, cli.TaskFailed))).To(BeFalse())
			Expect(fx.task(taskA).State).To(Equal(cli.TaskCompleted))
		})
	})

	Describe("open", func() {
		// foreign writes a SQLite file as the kit lays it out in
		// spec/client: a schema_meta row (when marker is not nil) and
		// another table with a row.
		foreign := func(path string, marker *string, version int64) []byte {
			GinkgoHelper()
			db, err := sql.Open("sqlite", "file:"+path)
			Expect(err).NotTo(HaveOccurred())
			defer db.Close()
			_, err = db.ExecContext(fx.ctx, `CREATE TABLE intents(op_id TEXT PRIMARY KEY, env_json TEXT); INSERT INTO intents VALUES ('old', '{}')`)
			Expect(err).NotTo(HaveOccurred())
			if marker != nil {
				_, err = db.ExecContext(fx.ctx, cli.SchemaMetaDDL)
				Expect(err).NotTo(HaveOccurred())
				_, err = db.ExecContext(fx.ctx, `INSERT INTO schema_meta(marker, version) VALUES (?, ?)`, *marker, version)
				Expect(err).NotTo(HaveOccurred())
			}
			Expect(db.Close()).To(Succeed())
			b, err := os.ReadFile(path)
			Expect(err).NotTo(HaveOccurred())
			return b
		}
		refusedAtOpen := func(path string, before []byte, names ...string) {
			GinkgoHelper()
			st, err := fx.h.Client(fx.ctx, Options{Path: path, Clock: fx.clock})
			if err == nil {
				st.Close()
			}
			Expect(err).To(MatchError(cli.ErrSchemaMismatch))
			for _, n := range names {
				Expect(err.Error()).To(ContainSubstring(n), "the error names both schemas")
			}
			after, rerr := os.ReadFile(path)
			Expect(rerr).NotTo(HaveOccurred())
			Expect(sha256.Sum256(after)).To(Equal(sha256.Sum256(before)), "the refused file is byte for byte as it was")
		}
		str := func(s string) *string { return &s }
		mine := fmt.Sprintf("%s version %d", cli.SchemaMarker, cli.SchemaVersion)

		It("refuses a file of another marker with schema_mismatch, naming both, and changes nothing in it", func() {
			need(fx.h.Capabilities.ClientSchemaTable, "client-schema-table", "the schema gate at open")
			path := filepath.Join(GinkgoT().TempDir(), "server.db")
			before := foreign(path, str("onlyne-server"), cli.SchemaVersion)
			refusedAtOpen(path, before, fmt.Sprintf("onlyne-server version %d", cli.SchemaVersion), mine)
		})
		It("refuses a file of another version of its marker with schema_mismatch, naming both, and changes nothing in it", func() {
			need(fx.h.Capabilities.ClientSchemaTable, "client-schema-table", "the schema gate at open")
			path := filepath.Join(GinkgoT().TempDir(), "old.db")
			old := int64(cli.SchemaVersion - 1)
			before := foreign(path, str(cli.SchemaMarker), old)
			refusedAtOpen(path, before, fmt.Sprintf("%s version %d", cli.SchemaMarker, old), mine)
			path = filepath.Join(GinkgoT().TempDir(), "newer.db")
			before = foreign(path, str(cli.SchemaMarker), cli.SchemaVersion+1)
			refusedAtOpen(path, before, fmt.Sprintf("%s version %d", cli.SchemaMarker, cli.SchemaVersion+1), mine)
		})
		It("refuses a SQLite file that holds tables but no marker", func() {
			need(fx.h.Capabilities.ClientSchemaTable, "client-schema-table", "the schema gate at open")
			path := filepath.Join(GinkgoT().TempDir(), "unmarked.db")
			before := foreign(path, nil, 0)
			refusedAtOpen(path, before, "version 0", mine)
		})
		It("writes its own marker and version into a new file, and opens that file again", func() {
			need(fx.h.Capabilities.ClientSchemaTable, "client-schema-table", "the schema gate at open")
			Expect(fx.s.Close()).To(Succeed())
			db, err := sql.Open("sqlite", "file:"+fx.path)
			Expect(err).NotTo(HaveOccurred())
			var marker string
			var version int64
			Expect(db.QueryRowContext(fx.ctx, `SELECT marker, version FROM schema_meta`).Scan(&marker, &version)).To(Succeed())
			Expect(db.Close()).To(Succeed())
			Expect([]any{marker, version}).To(Equal([]any{cli.SchemaMarker, int64(cli.SchemaVersion)}))
			fx.s = fx.open(fx.path)
			fx.enqueue(opA, fx.env(taskA))
		})
		It("finds everything it acknowledged after it is closed and opened again", func() {
			need(fx.h.Capabilities.Files, "files", "survival across reopen")
			fx.enqueue(opA, fx.env(taskA))
			Expect(fx.acted(fx.s.BumpIntent(fx.ctx, opA, fx.at(2500*time.Millisecond), "x"))).To(BeTrue())
			Expect(fx.upsert(taskA, fx.tuple(sessS, 1, 5, cli.AgentReady, cli.ResourceClosed))).To(BeTrue())
			Expect(fx.acted(fx.s.SettleTask(fx.ctx, taskB, cli.TaskCompleted))).To(BeTrue())
			_, err := fx.s.AppendEvent(fx.ctx, "one", spec.RawJSON(`{}`))
			Expect(err).NotTo(HaveOccurred())
			before := fx.state()
			Expect(fx.s.Close()).To(Succeed())
			fx.s = fx.open(fx.path)
			Expect(fx.state()).To(Equal(before))
			seq, err := fx.s.AppendEvent(fx.ctx, "two", spec.RawJSON(`{}`))
			Expect(err).NotTo(HaveOccurred())
			Expect(seq).To(BeNumerically(">", before.EventHead))
		})
		It("waits for a database another connection holds write-locked, no longer than the caller's deadline", func() {
			waitsForALockedDatabase(fx.h, fx.fresh, fx.h.Client, func(st cli.Store) {
				Expect(fx.acted(st.EnqueueIntent(fx.ctx, opA, fx.env(taskA)))).To(BeTrue())
			})
		})
	})
}
