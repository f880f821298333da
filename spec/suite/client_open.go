package suite

import (
	"crypto/sha256"
	"database/sql"
	"fmt"
	"io/fs"
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
		It("keep the outbox, the session gate, the bindings and the first verdict across handles, as two processes would", Rules(cli.RuleOneTransaction), func() {
			need(fx.h.Capabilities.SharedFiles, spec.CapSharedFiles, "two handles on one file")
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
		// A foreign file is written one of two ways: by the backend itself,
		// in its own layout (Harness.WriteClientSchema), or by the kit, as
		// spec/client lays the marker out (client_schema_table). Each gate
		// spec runs with every way the backend declares.
		type writer struct {
			name  string
			write func(path, marker string, version int)
		}
		kitWrites := func(path string, marker *string, version int) {
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
		}
		writers := func() []writer {
			GinkgoHelper()
			var out []writer
			if fx.h.WriteClientSchema != nil {
				out = append(out, writer{"written by the backend (client_schema_writer)", func(path, marker string, version int) {
					GinkgoHelper()
					Expect(fx.h.WriteClientSchema(path, marker, version)).To(Succeed(), "write_foreign_schema %s version %d", marker, version)
				}})
			}
			if fx.h.Capabilities.ClientSchemaTable {
				out = append(out, writer{"written by the kit (client_schema_table)", func(path, marker string, version int) {
					kitWrites(path, &marker, version)
				}})
			}
			if len(out) == 0 {
				Skip(spec.MissingCapability(spec.CapClientSchemaWriter, "the schema gate at open") + " (nor does it declare " + spec.CapClientSchemaTable + ")")
			}
			return out
		}
		// fingerprint is what is at path, byte for byte: a file, or every
		// file of a folder.
		fingerprint := func(path string) map[string][32]byte {
			GinkgoHelper()
			out := map[string][32]byte{}
			Expect(filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
				if err != nil || d.IsDir() {
					return err
				}
				b, err := os.ReadFile(p)
				out[p] = sha256.Sum256(b)
				return err
			})).To(Succeed())
			return out
		}
		refusedAtOpen := func(w writer, path string) {
			GinkgoHelper()
			before := fingerprint(path)
			st, err := fx.h.Client(fx.ctx, spec.OpenOptions{Path: path, Clock: fx.clock})
			if err == nil {
				st.Close()
			}
			Expect(err).To(MatchError(cli.ErrSchemaMismatch), because("client.schema_mismatch", w.name))
			Expect(fingerprint(path)).To(Equal(before), because("client.schema_mismatch", w.name+": the refused file is byte for byte as it was"))
		}
		foreign := func(name string) string { return filepath.Join(GinkgoT().TempDir(), name) }

		It("refuses a file of another marker with schema_mismatch, and changes nothing in it", Rules("client.schema_mismatch", "client.schema_layout"), func() {
			for _, w := range writers() {
				path := foreign("server.db")
				w.write(path, "onlyne-server", cli.SchemaVersion)
				refusedAtOpen(w, path)
			}
		})
		It("refuses a file of another version of its marker with schema_mismatch, and changes nothing in it", Rules("client.schema_mismatch", "client.schema_layout"), func() {
			for _, w := range writers() {
				for _, v := range []int{cli.SchemaVersion - 1, cli.SchemaVersion + 1} {
					path := foreign(fmt.Sprintf("version-%d.db", v))
					w.write(path, cli.SchemaMarker, v)
					refusedAtOpen(w, path)
				}
			}
		})
		It("opens a file of its own marker and version, as the backend writes one", Rules("client.schema_layout"), func() {
			need(fx.h.WriteClientSchema != nil, spec.CapClientSchemaWriter, "a file the backend writes itself")
			path := foreign("mine.db")
			Expect(fx.h.WriteClientSchema(path, cli.SchemaMarker, cli.SchemaVersion)).To(Succeed())
			st := fx.open(path)
			Expect(fx.acted(st.EnqueueIntent(fx.ctx, opA, fx.env(taskA)))).To(BeTrue(), because("client.schema_layout", "the file the writer wrote with the store's own marker and version opens"))
		})
		It("refuses a SQLite file that holds tables but no marker", Rules("client.schema_unmarked"), func() {
			need(fx.h.Capabilities.ClientSchemaTable, spec.CapClientSchemaTable, "a file without the kit's marker table")
			path := foreign("unmarked.db")
			kitWrites(path, nil, 0)
			refusedAtOpen(writer{name: "written by the kit without schema_meta"}, path)
		})
		It("writes its own marker and version into a new file, and opens that file again", Rules("client.schema_new_file"), func() {
			Expect(fx.s.Close()).To(Succeed())
			if fx.h.Capabilities.ClientSchemaTable {
				db, err := sql.Open("sqlite", "file:"+fx.path)
				Expect(err).NotTo(HaveOccurred())
				var marker string
				var version int64
				Expect(db.QueryRowContext(fx.ctx, `SELECT marker, version FROM schema_meta`).Scan(&marker, &version)).To(Succeed())
				Expect(db.Close()).To(Succeed())
				Expect([]any{marker, version}).To(Equal([]any{cli.SchemaMarker, int64(cli.SchemaVersion)}), because("client.schema_new_file"))
			}
			need(fx.h.Capabilities.Files, spec.CapFiles, "opening a file again")
			fx.s = fx.open(fx.path)
			fx.enqueue(opA, fx.env(taskA))
		})
		It("finds everything it acknowledged after it is closed and opened again", Rules("client.durable"), Bound("client.append_event.seq_increasing#last", spec.Above), func() {
			need(fx.h.Capabilities.Files, spec.CapFiles, "survival across reopen")
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
		It("waits for a database another connection holds write-locked, and gives up by its timeout_ms plus a slack of "+spec.LockedOpenSlack.String(), Rules("client.open_locked"), func() {
			waitsForALockedDatabase(fx.h, fx.fresh, fx.h.Client, func(st cli.Store) {
				Expect(fx.acted(st.EnqueueIntent(fx.ctx, opA, fx.env(taskA)))).To(BeTrue())
			})
		})
	})

	Describe("power loss", func() {
		It("finds everything it acknowledged after a power cut that loses everything it never synced", Rules("client.survives_power_loss"), func() {
			path, cut := powerCutFile(&fx.h, cli.Contract)
			Expect(fx.s.Close()).To(Succeed())
			fx.s = fx.open(path)
			fx.enqueue(opA, fx.env(taskA))
			Expect(fx.acted(fx.s.BumpIntent(fx.ctx, opA, fx.at(2500*time.Millisecond), "x"))).To(BeTrue())
			Expect(fx.upsert(taskA, fx.tuple(sessS, 1, 5, cli.AgentReady, cli.ResourceClosed))).To(BeTrue())
			Expect(fx.acted(fx.s.SettleTask(fx.ctx, taskB, cli.TaskCompleted))).To(BeTrue())
			_, err := fx.s.AppendEvent(fx.ctx, "one", spec.RawJSON(`{}`))
			Expect(err).NotTo(HaveOccurred())
			before := fx.state()
			cut(fx.s.Close)
			fx.s = fx.open(path)
			Expect(fx.state()).To(Equal(before), because("client.survives_power_loss"))
			seq, err := fx.s.AppendEvent(fx.ctx, "two", spec.RawJSON(`{}`))
			Expect(err).NotTo(HaveOccurred())
			Expect(seq).To(BeNumerically(">", before.EventHead))
		})
	})
}
