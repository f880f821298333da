package suite

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	cli "github.com/storecheck/storecheck/spec/client"
)

// Session tuples under their (generation, seq) gate, and the bindings
// of sessions to tasks.
func clientSessionSpecs(fx *clientFixture) {
	Describe("upsert_session", func() {
		It("writes a new session, opens its binding and answers true", func() {
			fx.clock.Advance(time.Second)
			v := fx.tuple(sessS, 1, 5, cli.AgentReady, cli.ResourceOpen)
			Expect(fx.upsert(taskA, v)).To(BeTrue())
			r := fx.session(taskA)
			Expect(r).NotTo(BeNil())
			Expect(r.SessionID).To(Equal(sessS))
			Expect(r.TaskID).To(Equal(taskA))
			Expect(r.UpdatedAt).To(BeTemporally("==", v.UpdatedAt))
			got := r.VersionedSession
			got.UpdatedAt = v.UpdatedAt
			Expect(got).To(Equal(v))
			Expect(fx.active()).To(Equal([]cli.LiveSession{{SessionID: sessS, TaskID: taskA}}))
			Expect(fx.known(taskA)).To(BeTrue())
		})
		It("files the session under the task when backend_ref names no task_id", func() {
			v := fx.tuple("", 1, 1, cli.AgentIdle, cli.ResourceOpen)
			v.BackendRef = `{"backend":"exec"}`
			Expect(fx.upsert(taskA, v)).To(BeTrue())
			Expect(fx.session(taskA).SessionID).To(Equal(taskA))
			v.BackendRef = `not json`
			Expect(fx.upsert(taskB, v)).To(BeTrue())
			Expect(fx.session(taskB).SessionID).To(Equal(taskB))
		})
		It("writes only a strictly newer (generation, seq): an equal or older pair changes nothing and answers false", func() {
			Expect(fx.upsert(taskA, fx.tuple(sessS, 1, 5, cli.AgentReady, cli.ResourceOpen))).To(BeTrue())
			before := fx.state()
			fx.declines(before)(fx.s.UpsertSession(fx.ctx, taskA, fx.tuple(sessS, 1, 5, cli.AgentWorking, cli.ResourceOpen)))
			fx.declines(before)(fx.s.UpsertSession(fx.ctx, taskA, fx.tuple(sessS, 1, 4, cli.AgentWorking, cli.ResourceOpen)))
			fx.declines(before)(fx.s.UpsertSession(fx.ctx, taskA, fx.tuple(sessS, 0, 9, cli.AgentWorking, cli.ResourceOpen)))
			Expect(fx.upsert(taskA, fx.tuple(sessS, 1, 6, cli.AgentWorking, cli.ResourceOpen))).To(BeTrue())
			Expect(fx.session(taskA).AgentState).To(Equal(cli.AgentWorking))
		})
		It("lets a newer generation win whatever its seq", func() {
			Expect(fx.upsert(taskA, fx.tuple(sessS, 1, 5, cli.AgentReady, cli.ResourceOpen))).To(BeTrue())
			Expect(fx.upsert(taskA, fx.tuple(sessS, 2, 0, cli.AgentBooting, cli.ResourceOpen))).To(BeTrue())
			r := fx.session(taskA)
			Expect([]uint64{r.Generation, r.Seq}).To(Equal([]uint64{2, 0}))
			Expect(r.AgentState).To(Equal(cli.AgentBooting))
		})
		It("moves the session to the task it is written for, closing its other open binding", func() {
			Expect(fx.upsert(taskA, fx.tuple(sessS, 1, 1, cli.AgentReady, cli.ResourceOpen))).To(BeTrue())
			Expect(fx.upsert(taskB, fx.tuple(sessS, 1, 2, cli.AgentReady, cli.ResourceOpen))).To(BeTrue())
			Expect(fx.active()).To(Equal([]cli.LiveSession{{SessionID: sessS, TaskID: taskB}}))
			Expect(fx.acted(fx.s.ReleaseBinding(fx.ctx, sessS, taskA))).To(BeFalse(), "the binding to the first task was closed")
			Expect(fx.session(taskA).SessionID).To(Equal(sessS), "the first task still reads its session")
		})
		It("opens no binding when the gate refuses the write", func() {
			Expect(fx.upsert(taskA, fx.tuple(sessS, 1, 5, cli.AgentReady, cli.ResourceOpen))).To(BeTrue())
			fx.declines(fx.state())(fx.s.UpsertSession(fx.ctx, taskB, fx.tuple(sessS, 1, 5, cli.AgentReady, cli.ResourceOpen)))
			Expect(fx.session(taskB)).To(BeNil())
			Expect(fx.known(taskB)).To(BeFalse())
		})
	})

	Describe("bump_session_version", func() {
		It("moves only the pair of the task's session, and its updated_at to now", func() {
			v := fx.tuple(sessS, 1, 5, cli.AgentIdle, cli.ResourceOpen)
			Expect(fx.upsert(taskA, v)).To(BeTrue())
			fx.clock.Advance(time.Minute)
			Expect(fx.acted(fx.s.BumpSessionVersion(fx.ctx, taskA, 1, 6))).To(BeTrue())
			r := fx.session(taskA)
			Expect([]uint64{r.Generation, r.Seq}).To(Equal([]uint64{1, 6}))
			Expect(r.UpdatedAt).To(BeTemporally("==", fx.at(time.Minute)))
			got, want := r.VersionedSession, v
			got.Generation, got.Seq, got.UpdatedAt = 0, 0, time.Time{}
			want.Generation, want.Seq, want.UpdatedAt = 0, 0, time.Time{}
			Expect(got).To(Equal(want), "the rest of the tuple stays")
		})
		It("refuses an equal or older pair under the same gate, and takes a newer generation whatever its seq", func() {
			Expect(fx.upsert(taskA, fx.tuple(sessS, 1, 5, cli.AgentIdle, cli.ResourceOpen))).To(BeTrue())
			before := fx.state()
			fx.declines(before)(fx.s.BumpSessionVersion(fx.ctx, taskA, 1, 5))
			fx.declines(before)(fx.s.BumpSessionVersion(fx.ctx, taskA, 1, 4))
			fx.declines(before)(fx.s.BumpSessionVersion(fx.ctx, taskA, 0, 99))
			Expect(fx.acted(fx.s.BumpSessionVersion(fx.ctx, taskA, 2, 0))).To(BeTrue())
			Expect(fx.session(taskA).Generation).To(Equal(uint64(2)))
		})
		It("answers false for a task with no session", func() {
			fx.declines(fx.state())(fx.s.BumpSessionVersion(fx.ctx, taskB, 9, 9))
		})
	})

	Describe("get_session", func() {
		It("answers through the task's open binding, else its latest one", func() {
			Expect(fx.upsert(taskA, fx.tuple(sessS, 1, 1, cli.AgentReady, cli.ResourceOpen))).To(BeTrue())
			Expect(fx.upsert(taskB, fx.tuple(sessT, 1, 1, cli.AgentReady, cli.ResourceOpen))).To(BeTrue())
			Expect(fx.acted(fx.s.BindTask(fx.ctx, sessT, taskA))).To(BeTrue())
			r := fx.session(taskA)
			Expect(r.SessionID).To(Equal(sessT), "the latest open binding of the task")
			Expect(r.TaskID).To(Equal(taskA))
			Expect(fx.acted(fx.s.ReleaseBinding(fx.ctx, sessT, taskA))).To(BeTrue())
			Expect(fx.session(taskA).SessionID).To(Equal(sessS), "an open binding wins over a later released one")
			Expect(fx.acted(fx.s.ReleaseBinding(fx.ctx, sessS, taskA))).To(BeTrue())
			Expect(fx.session(taskA).SessionID).To(Equal(sessT), "with none open, the latest binding")
		})
		It("returns nil for a task with no binding, or bound to a session with no tuple", func() {
			Expect(fx.session(taskA)).To(BeNil())
			Expect(fx.acted(fx.s.BindTask(fx.ctx, "no-tuple", taskA))).To(BeTrue())
			Expect(fx.session(taskA)).To(BeNil())
		})
	})

	Describe("bind_task", func() {
		It("opens a binding and closes the session's other open binding", func() {
			Expect(fx.upsert(taskA, fx.tuple(sessS, 1, 1, cli.AgentReady, cli.ResourceOpen))).To(BeTrue())
			Expect(fx.acted(fx.s.BindTask(fx.ctx, sessS, taskB))).To(BeTrue())
			Expect(fx.active()).To(Equal([]cli.LiveSession{{SessionID: sessS, TaskID: taskB}}))
			Expect(fx.acted(fx.s.ReleaseBinding(fx.ctx, sessS, taskA))).To(BeFalse(), "the first binding was closed by the second")
			Expect(fx.acted(fx.s.ReleaseBinding(fx.ctx, sessS, taskB))).To(BeTrue())
			Expect(fx.active()).To(Equal([]cli.LiveSession{{SessionID: sessS}}), "no binding left open")
		})
		It("answers false for a pair already open, and opens a released pair again", func() {
			Expect(fx.upsert(taskA, fx.tuple(sessS, 1, 1, cli.AgentReady, cli.ResourceOpen))).To(BeTrue())
			fx.declines(fx.state())(fx.s.BindTask(fx.ctx, sessS, taskA))
			Expect(fx.acted(fx.s.ReleaseBinding(fx.ctx, sessS, taskA))).To(BeTrue())
			Expect(fx.acted(fx.s.BindTask(fx.ctx, sessS, taskA))).To(BeTrue())
			Expect(fx.active()).To(Equal([]cli.LiveSession{{SessionID: sessS, TaskID: taskA}}))
		})
		It("leaves other sessions' bindings to the same task open", func() {
			Expect(fx.acted(fx.s.BindTask(fx.ctx, sessS, taskA))).To(BeTrue())
			Expect(fx.acted(fx.s.BindTask(fx.ctx, sessT, taskA))).To(BeTrue())
			Expect(fx.acted(fx.s.ReleaseBinding(fx.ctx, sessS, taskA))).To(BeTrue())
			Expect(fx.acted(fx.s.ReleaseBinding(fx.ctx, sessT, taskA))).To(BeTrue())
		})
	})

	Describe("release_binding", func() {
		It("releases an open binding once; a second call changes nothing", func() {
			Expect(fx.upsert(taskA, fx.tuple(sessS, 1, 1, cli.AgentIdle, cli.ResourceOpen))).To(BeTrue())
			Expect(fx.acted(fx.s.ReleaseBinding(fx.ctx, sessS, taskA))).To(BeTrue())
			Expect(fx.active()).To(Equal([]cli.LiveSession{{SessionID: sessS}}))
			fx.declines(fx.state())(fx.s.ReleaseBinding(fx.ctx, sessS, taskA))
			Expect(fx.session(taskA).SessionID).To(Equal(sessS), "a released binding still answers for its task")
		})
		It("answers false for a pair never bound", func() {
			fx.declines(fx.state())(fx.s.ReleaseBinding(fx.ctx, sessS, taskB))
		})
	})

	Describe("active_sessions", func() {
		It("claims booting, ready and idle sessions whose resource is open, and reports closed ready or idle ones suspended", func() {
			for _, row := range []struct{ sid, agent, resource string }{
				{"s1-booting-open", cli.AgentBooting, cli.ResourceOpen},
				{"s2-ready-open", cli.AgentReady, cli.ResourceOpen},
				{"s3-idle-open", cli.AgentIdle, cli.ResourceOpen},
				{"s4-working-open", cli.AgentWorking, cli.ResourceOpen},
				{"s5-gone-open", cli.AgentGone, cli.ResourceOpen},
				{"s6-booting-closed", cli.AgentBooting, cli.ResourceClosed},
				{"s7-ready-closed", cli.AgentReady, cli.ResourceClosed},
				{"s8-idle-closed", cli.AgentIdle, cli.ResourceClosed},
				{"s9-gone-closed", cli.AgentGone, cli.ResourceClosed},
			} {
				Expect(fx.upsert("task-"+row.sid, fx.tuple(row.sid, 1, 1, row.agent, row.resource))).To(BeTrue())
			}
			Expect(fx.acted(fx.s.ReleaseBinding(fx.ctx, "s3-idle-open", "task-s3-idle-open"))).To(BeTrue())
			Expect(fx.active()).To(Equal([]cli.LiveSession{
				{SessionID: "s1-booting-open", TaskID: "task-s1-booting-open"},
				{SessionID: "s2-ready-open", TaskID: "task-s2-ready-open"},
				{SessionID: "s3-idle-open"},
				{SessionID: "s7-ready-closed", TaskID: "task-s7-ready-closed", Suspended: true},
				{SessionID: "s8-idle-closed", TaskID: "task-s8-idle-closed", Suspended: true},
			}))
		})
		It("never claims a session once it has exited", func() {
			Expect(fx.upsert(taskA, fx.tuple(sessS, 1, 1, cli.AgentIdle, cli.ResourceClosed))).To(BeTrue())
			Expect(fx.active()).To(HaveLen(1))
			Expect(fx.upsert(taskA, fx.tuple(sessS, 1, 2, cli.AgentGone, cli.ResourceClosed))).To(BeTrue())
			Expect(fx.active()).To(BeEmpty())
		})
	})
}
