package suite

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/storecheck/storecheck/spec"
	cli "github.com/storecheck/storecheck/spec/client"
)

// Session tuples under their (generation, seq) gate, and the bindings
// of sessions to tasks.
func clientSessionSpecs(fx *clientFixture) {
	Describe("upsert_session", func() {
		It("writes a new session, opens its binding and answers true", Rules("client.upsert_session.gate", "client.upsert_session.binds", "client.upsert_session.tuple_kept", cli.RuleUnixSeconds), func() {
			fx.clock.Advance(time.Second)
			v := fx.tuple(sessS, 1, 5, cli.AgentReady, cli.ResourceOpen)
			v.UpdatedAt = v.UpdatedAt.Add(250 * time.Millisecond)
			Expect(fx.upsert(taskA, v)).To(BeTrue())
			r := fx.session(taskA)
			Expect(r).NotTo(BeNil())
			Expect(r.SessionID).To(Equal(sessS))
			Expect(r.TaskID).To(Equal(taskA))
			Expect(r.UpdatedAt).To(keptAs(v.UpdatedAt), because(cli.RuleUnixSeconds))
			got := r.VersionedSession
			got.UpdatedAt = v.UpdatedAt
			Expect(got).To(Equal(v), because("client.upsert_session.tuple_kept"))
			Expect(fx.active()).To(Equal([]cli.LiveSession{{SessionID: sessS, TaskID: taskA}}), because("client.upsert_session.binds"))
			Expect(fx.known(taskA)).To(BeTrue())
		})
		It("files the session under the task when backend_ref names no task_id", Rules(cli.RuleSessionID), func() {
			v := fx.tuple("", 1, 1, cli.AgentIdle, cli.ResourceOpen)
			v.BackendRef = `{"backend":"exec"}`
			Expect(fx.upsert(taskA, v)).To(BeTrue())
			Expect(fx.session(taskA).SessionID).To(Equal(taskA))
			v.BackendRef = `not json`
			Expect(fx.upsert(taskB, v)).To(BeTrue())
			Expect(fx.session(taskB).SessionID).To(Equal(taskB))
			v.BackendRef = `{"task_id":null}`
			Expect(fx.upsert("task-c", v)).To(BeTrue())
			Expect(fx.session("task-c").SessionID).To(Equal("task-c"), because(cli.RuleSessionID, "a task_id that is not a string names none"))
		})
		It(`files the session under "" when backend_ref's task_id is the empty string`, Rules(cli.RuleSessionID), func() {
			v := fx.tuple("", 1, 1, cli.AgentIdle, cli.ResourceOpen)
			Expect(fx.upsert(taskA, v)).To(BeTrue())
			r := fx.session(taskA)
			Expect(r).NotTo(BeNil())
			Expect(r.SessionID).To(Equal(""), because(cli.RuleSessionID, `backend_parts takes any string, the empty one too`))
			Expect(fx.active()).To(Equal([]cli.LiveSession{{SessionID: "", TaskID: taskA}}))
			fx.declines(fx.state())(fx.s.UpsertSession(fx.ctx, taskB, fx.tuple("", 1, 1, cli.AgentIdle, cli.ResourceOpen)))
			Expect(fx.upsert(taskB, fx.tuple("", 1, 2, cli.AgentIdle, cli.ResourceOpen))).To(BeTrue(), because("client.upsert_session.gate", `one session "", under one gate`))
			Expect(fx.active()).To(Equal([]cli.LiveSession{{SessionID: "", TaskID: taskB}}))
			Expect(fx.acted(fx.s.BumpSessionVersion(fx.ctx, taskB, 1, 3))).To(BeTrue())
			Expect(fx.session(taskA).Seq).To(Equal(uint64(3)), because("client.get_session.through_binding", `task a still answers with session ""`))
		})
		It("writes only a strictly newer (generation, seq): an equal or older pair changes nothing and answers false", Rules("client.upsert_session.gate"), Bound("client.upsert_session.gate#pair", spec.Below, spec.At, spec.Above), func() {
			Expect(fx.upsert(taskA, fx.tuple(sessS, 1, 5, cli.AgentReady, cli.ResourceOpen))).To(BeTrue())
			before := fx.state()
			fx.declines(before)(fx.s.UpsertSession(fx.ctx, taskA, fx.tuple(sessS, 1, 5, cli.AgentWorking, cli.ResourceOpen)))
			fx.declines(before)(fx.s.UpsertSession(fx.ctx, taskA, fx.tuple(sessS, 1, 4, cli.AgentWorking, cli.ResourceOpen)))
			fx.declines(before)(fx.s.UpsertSession(fx.ctx, taskA, fx.tuple(sessS, 0, 9, cli.AgentWorking, cli.ResourceOpen)))
			Expect(fx.upsert(taskA, fx.tuple(sessS, 1, 6, cli.AgentWorking, cli.ResourceOpen))).To(BeTrue())
			Expect(fx.session(taskA).AgentState).To(Equal(cli.AgentWorking))
		})
		It("lets a newer generation win whatever its seq", Rules("client.upsert_session.gate"), func() {
			Expect(fx.upsert(taskA, fx.tuple(sessS, 1, 5, cli.AgentReady, cli.ResourceOpen))).To(BeTrue())
			Expect(fx.upsert(taskA, fx.tuple(sessS, 2, 0, cli.AgentBooting, cli.ResourceOpen))).To(BeTrue())
			r := fx.session(taskA)
			Expect([]uint64{r.Generation, r.Seq}).To(Equal([]uint64{2, 0}))
			Expect(r.AgentState).To(Equal(cli.AgentBooting))
		})
		It("moves the session to the task it is written for, closing its other open binding", Rules("client.upsert_session.binds"), func() {
			Expect(fx.upsert(taskA, fx.tuple(sessS, 1, 1, cli.AgentReady, cli.ResourceOpen))).To(BeTrue())
			Expect(fx.upsert(taskB, fx.tuple(sessS, 1, 2, cli.AgentReady, cli.ResourceOpen))).To(BeTrue())
			Expect(fx.active()).To(Equal([]cli.LiveSession{{SessionID: sessS, TaskID: taskB}}))
			Expect(fx.acted(fx.s.ReleaseBinding(fx.ctx, sessS, taskA))).To(BeFalse(), "the binding to the first task was closed")
			Expect(fx.session(taskA).SessionID).To(Equal(sessS), "the first task still reads its session")
		})
		It("opens no binding when the gate refuses the write", Rules("client.upsert_session.binds"), func() {
			Expect(fx.upsert(taskA, fx.tuple(sessS, 1, 5, cli.AgentReady, cli.ResourceOpen))).To(BeTrue())
			fx.declines(fx.state())(fx.s.UpsertSession(fx.ctx, taskB, fx.tuple(sessS, 1, 5, cli.AgentReady, cli.ResourceOpen)))
			Expect(fx.session(taskB)).To(BeNil())
			Expect(fx.known(taskB)).To(BeFalse())
		})
	})

	Describe("bump_session_version", func() {
		It("moves only the pair of the task's session, and its updated_at to now", Rules("client.bump_session_version.pair_only", cli.RuleUnixSeconds), func() {
			v := fx.tuple(sessS, 1, 5, cli.AgentIdle, cli.ResourceOpen)
			Expect(fx.upsert(taskA, v)).To(BeTrue())
			fx.clock.Advance(time.Minute)
			Expect(fx.acted(fx.s.BumpSessionVersion(fx.ctx, taskA, 1, 6))).To(BeTrue())
			r := fx.session(taskA)
			Expect([]uint64{r.Generation, r.Seq}).To(Equal([]uint64{1, 6}))
			Expect(r.UpdatedAt).To(keptAs(fx.at(time.Minute)), because("client.bump_session_version.pair_only", "updated now"))
			got, want := r.VersionedSession, v
			got.Generation, got.Seq, got.UpdatedAt = 0, 0, time.Time{}
			want.Generation, want.Seq, want.UpdatedAt = 0, 0, time.Time{}
			Expect(got).To(Equal(want), because("client.bump_session_version.pair_only", "the rest of the tuple stays"))
		})
		It("refuses an equal or older pair under the same gate, and takes a newer generation whatever its seq", Rules("client.bump_session_version.pair_only"), func() {
			Expect(fx.upsert(taskA, fx.tuple(sessS, 1, 5, cli.AgentIdle, cli.ResourceOpen))).To(BeTrue())
			before := fx.state()
			fx.declines(before)(fx.s.BumpSessionVersion(fx.ctx, taskA, 1, 5))
			fx.declines(before)(fx.s.BumpSessionVersion(fx.ctx, taskA, 1, 4))
			fx.declines(before)(fx.s.BumpSessionVersion(fx.ctx, taskA, 0, 99))
			Expect(fx.acted(fx.s.BumpSessionVersion(fx.ctx, taskA, 2, 0))).To(BeTrue())
			Expect(fx.session(taskA).Generation).To(Equal(uint64(2)))
		})
		It("answers false for a task with no session", Rules("client.bump_session_version.pair_only"), func() {
			fx.declines(fx.state())(fx.s.BumpSessionVersion(fx.ctx, taskB, 9, 9))
		})
	})

	Describe("get_session", func() {
		It("answers through one of the task's bindings, by one reading of SESSION_ID_FOR_TASK, the same for bump_session_version", Rules("client.get_session.through_binding", cli.RuleBindingChoice), func() {
			// Session s is bound to task a on upsert with bound_at 9s (its
			// tuple's updated_at); session t is bound to it later, by
			// bind_task at 5s. The most recent opening and the latest
			// bound_at then disagree, and releases show whether open
			// bindings come first.
			Expect(fx.upsert(taskA, fx.tuple(sessS, 1, 9, cli.AgentReady, cli.ResourceOpen))).To(BeTrue())
			Expect(fx.upsert(taskB, fx.tuple(sessT, 1, 1, cli.AgentReady, cli.ResourceOpen))).To(BeTrue())
			fx.clock.Advance(5 * time.Second)
			Expect(fx.acted(fx.s.BindTask(fx.ctx, sessT, taskA))).To(BeTrue())
			answer := func() string {
				GinkgoHelper()
				r := fx.session(taskA)
				Expect(r).NotTo(BeNil(), because("client.get_session.through_binding"))
				Expect(r.TaskID).To(Equal(taskA))
				return r.SessionID
			}
			var got []string
			got = append(got, answer())
			Expect(fx.acted(fx.s.ReleaseBinding(fx.ctx, sessT, taskA))).To(BeTrue())
			got = append(got, answer())
			Expect(fx.acted(fx.s.ReleaseBinding(fx.ctx, sessS, taskA))).To(BeTrue())
			got = append(got, answer())
			readings := map[string][]string{
				"open bindings first, the latest opened":   {sessT, sessS, sessT},
				"open bindings first, the latest bound_at": {sessS, sessS, sessS},
				"the latest opened":                        {sessT, sessT, sessT},
				"the latest bound_at":                      {sessS, sessS, sessS},
			}
			Expect(readings).To(ContainElement(got), because(cli.RuleBindingChoice, fmt.Sprintf("with both bindings open, with t's released, with both released: %v", got)))
			Expect(fx.acted(fx.s.BumpSessionVersion(fx.ctx, taskA, 3, 0))).To(BeTrue())
			r := fx.session(taskA)
			Expect([]any{r.SessionID, r.Generation}).To(Equal([]any{got[2], uint64(3)}), because(cli.RuleBindingChoice, "bump_session_version moves the session get_session answers"))
			if got[2] == sessS {
				Expect(fx.session(taskB).Generation).To(Equal(uint64(1)), because(cli.RuleBindingChoice, "and no other"))
			}
		})
		It("returns nil for a task with no binding, or bound to a session with no tuple", Rules("client.get_session.through_binding"), func() {
			Expect(fx.session(taskA)).To(BeNil())
			Expect(fx.acted(fx.s.BindTask(fx.ctx, "no-tuple", taskA))).To(BeTrue())
			Expect(fx.session(taskA)).To(BeNil())
		})
	})

	Describe("bind_task", func() {
		It("opens a binding and closes the session's other open binding", Rules("client.bind_task.opens", cli.RuleBindTwoStatements), func() {
			Expect(fx.upsert(taskA, fx.tuple(sessS, 1, 1, cli.AgentReady, cli.ResourceOpen))).To(BeTrue())
			Expect(fx.acted(fx.s.BindTask(fx.ctx, sessS, taskB))).To(BeTrue())
			Expect(fx.active()).To(Equal([]cli.LiveSession{{SessionID: sessS, TaskID: taskB}}))
			Expect(fx.acted(fx.s.ReleaseBinding(fx.ctx, sessS, taskA))).To(BeFalse(), "the first binding was closed by the second")
			Expect(fx.acted(fx.s.ReleaseBinding(fx.ctx, sessS, taskB))).To(BeTrue())
			Expect(fx.active()).To(Equal([]cli.LiveSession{{SessionID: sessS}}), "no binding left open")
		})
		It("answers false for a pair already open, and opens a released pair again", Rules("client.bind_task.opens"), func() {
			Expect(fx.upsert(taskA, fx.tuple(sessS, 1, 1, cli.AgentReady, cli.ResourceOpen))).To(BeTrue())
			fx.declines(fx.state())(fx.s.BindTask(fx.ctx, sessS, taskA))
			Expect(fx.acted(fx.s.ReleaseBinding(fx.ctx, sessS, taskA))).To(BeTrue())
			Expect(fx.acted(fx.s.BindTask(fx.ctx, sessS, taskA))).To(BeTrue())
			Expect(fx.active()).To(Equal([]cli.LiveSession{{SessionID: sessS, TaskID: taskA}}))
		})
		It("leaves other sessions' bindings to the same task open", Rules("client.bind_task.opens"), func() {
			Expect(fx.acted(fx.s.BindTask(fx.ctx, sessS, taskA))).To(BeTrue())
			Expect(fx.acted(fx.s.BindTask(fx.ctx, sessT, taskA))).To(BeTrue())
			Expect(fx.acted(fx.s.ReleaseBinding(fx.ctx, sessS, taskA))).To(BeTrue())
			Expect(fx.acted(fx.s.ReleaseBinding(fx.ctx, sessT, taskA))).To(BeTrue())
		})
	})

	Describe("release_binding", func() {
		It("releases an open binding once; a second call changes nothing", Rules("client.release_binding.once", "client.active_sessions.open_task"), func() {
			Expect(fx.upsert(taskA, fx.tuple(sessS, 1, 1, cli.AgentIdle, cli.ResourceOpen))).To(BeTrue())
			Expect(fx.acted(fx.s.ReleaseBinding(fx.ctx, sessS, taskA))).To(BeTrue())
			Expect(fx.active()).To(Equal([]cli.LiveSession{{SessionID: sessS}}))
			fx.declines(fx.state())(fx.s.ReleaseBinding(fx.ctx, sessS, taskA))
			Expect(fx.session(taskA).SessionID).To(Equal(sessS), "a released binding still answers for its task")
		})
		It("answers false for a pair never bound", Rules("client.release_binding.once"), func() {
			fx.declines(fx.state())(fx.s.ReleaseBinding(fx.ctx, sessS, taskB))
		})
	})

	Describe("active_sessions", func() {
		It("claims booting, ready and idle sessions whose resource is open, and reports closed ready or idle ones suspended", Rules("client.active_sessions.claimed", "client.active_sessions.open_task"), func() {
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
		It("never claims a session once it has exited", Rules("client.active_sessions.claimed"), func() {
			Expect(fx.upsert(taskA, fx.tuple(sessS, 1, 1, cli.AgentIdle, cli.ResourceClosed))).To(BeTrue())
			Expect(fx.active()).To(HaveLen(1))
			Expect(fx.upsert(taskA, fx.tuple(sessS, 1, 2, cli.AgentGone, cli.ResourceClosed))).To(BeTrue())
			Expect(fx.active()).To(BeEmpty())
		})
	})
}
