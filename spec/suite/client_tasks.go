package suite

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/storecheck/storecheck/spec"
	cli "github.com/storecheck/storecheck/spec/client"
)

// Tasks: opened, settled once, listed and known.
func clientTaskSpecs(fx *clientFixture) {
	Describe("open_task", func() {
		It("opens a new task pending, now, with its chain, and answers true", func() {
			fx.clock.Advance(time.Second)
			Expect(fx.acted(fx.s.OpenTask(fx.ctx, cli.Causality{Task: taskA, ParentTask: "parent", Hop: 2, Attempt: 1}, cli.KindRelay))).To(BeTrue())
			t := fx.task(taskA)
			Expect(t).NotTo(BeNil())
			Expect(t.TaskID).To(Equal(taskA))
			Expect(t.Kind).To(Equal(cli.KindRelay))
			Expect(t.ParentTask).To(Equal("parent"))
			Expect([]int64{t.Hop, t.Attempt}).To(Equal([]int64{2, 1}))
			Expect(t.State).To(Equal(cli.TaskPending))
			Expect(t.OpenedAt).To(BeTemporally("==", fx.at(time.Second)))
			Expect(t.SettledAt).To(BeNil())
		})
		It("re-opening refreshes the chain, keeps state and opening time, never lowers the attempt, and answers false", func() {
			Expect(fx.acted(fx.s.OpenTask(fx.ctx, cli.Causality{Task: taskA, Attempt: 3}, cli.KindRoot))).To(BeTrue())
			fx.clock.Advance(time.Second)
			Expect(fx.acted(fx.s.OpenTask(fx.ctx, cli.Causality{Task: taskA, ParentTask: "p2", Hop: 4, Attempt: 1}, cli.KindRelay))).To(BeFalse())
			t := fx.task(taskA)
			Expect(t.Kind).To(Equal(cli.KindRelay))
			Expect(t.ParentTask).To(Equal("p2"))
			Expect(t.Hop).To(Equal(int64(4)))
			Expect(t.Attempt).To(Equal(int64(3)), "the attempt never runs backwards")
			Expect(t.OpenedAt).To(BeTemporally("==", fx.at(0)))
			Expect(t.State).To(Equal(cli.TaskPending))
			Expect(fx.acted(fx.s.OpenTask(fx.ctx, cli.Causality{Task: taskA, Attempt: 5}, cli.KindRoot))).To(BeFalse())
			Expect(fx.task(taskA).Attempt).To(Equal(int64(5)))
		})
		It("re-opening a settled task keeps its verdict and settle time", func() {
			Expect(fx.acted(fx.s.OpenTask(fx.ctx, cli.Causality{Task: taskA}, cli.KindRoot))).To(BeTrue())
			fx.clock.Advance(time.Second)
			Expect(fx.acted(fx.s.SettleTask(fx.ctx, taskA, cli.TaskCompleted))).To(BeTrue())
			fx.clock.Advance(time.Second)
			Expect(fx.acted(fx.s.OpenTask(fx.ctx, cli.Causality{Task: taskA, Attempt: 1}, cli.KindRoot))).To(BeFalse())
			t := fx.task(taskA)
			Expect(t.State).To(Equal(cli.TaskCompleted))
			Expect(t.SettledAt).To(HaveValue(BeTemporally("==", fx.at(time.Second))))
			Expect(fx.openTasks(0)).To(BeEmpty())
		})
		It("refuses a kind other than root or relay with invalid_argument", func() {
			_, err := fx.s.OpenTask(fx.ctx, cli.Causality{Task: taskA}, "complete")
			fx.refused(fx.state(), err, cli.ErrInvalidArgument)
		})
	})

	Describe("settle_task", func() {
		It("settles an open task with its verdict, now, and answers true", func() {
			Expect(fx.acted(fx.s.OpenTask(fx.ctx, cli.Causality{Task: taskA, Attempt: 2}, cli.KindRoot))).To(BeTrue())
			fx.clock.Advance(time.Second)
			Expect(fx.acted(fx.s.SettleTask(fx.ctx, taskA, cli.TaskFailed))).To(BeTrue())
			t := fx.task(taskA)
			Expect(t.State).To(Equal(cli.TaskFailed))
			Expect(t.SettledAt).To(HaveValue(BeTemporally("==", fx.at(time.Second))))
			Expect(t.Attempt).To(Equal(int64(2)))
			Expect(fx.openTasks(0)).To(BeEmpty())
		})
		It("lets the first terminal verdict win: a later one answers false and changes nothing", func() {
			Expect(fx.acted(fx.s.OpenTask(fx.ctx, cli.Causality{Task: taskA}, cli.KindRoot))).To(BeTrue())
			Expect(fx.acted(fx.s.SettleTask(fx.ctx, taskA, cli.TaskCompleted))).To(BeTrue())
			fx.clock.Advance(time.Second)
			before := fx.state()
			fx.declines(before)(fx.s.SettleTask(fx.ctx, taskA, cli.TaskCancelled))
			fx.declines(before)(fx.s.SettleTask(fx.ctx, taskA, cli.TaskCompleted))
			Expect(fx.task(taskA).State).To(Equal(cli.TaskCompleted))
		})
		It("creates the record of a task never opened: no kind, no parent, opened and settled now", func() {
			fx.clock.Advance(time.Second)
			Expect(fx.acted(fx.s.SettleTask(fx.ctx, taskB, cli.TaskCompleted))).To(BeTrue())
			t := fx.task(taskB)
			Expect(t).NotTo(BeNil())
			Expect(t.Kind).To(BeEmpty())
			Expect(t.ParentTask).To(BeEmpty())
			Expect([]int64{t.Hop, t.Attempt}).To(Equal([]int64{0, 0}))
			Expect(t.State).To(Equal(cli.TaskCompleted))
			Expect(t.OpenedAt).To(BeTemporally("==", fx.at(time.Second)))
			Expect(t.SettledAt).To(HaveValue(BeTemporally("==", fx.at(time.Second))))
			fx.declines(fx.state())(fx.s.SettleTask(fx.ctx, taskB, cli.TaskFailed))
		})
		It("refuses a verdict that is not terminal with invalid_argument", func() {
			Expect(fx.acted(fx.s.OpenTask(fx.ctx, cli.Causality{Task: taskA}, cli.KindRoot))).To(BeTrue())
			for _, v := range []cli.TaskState{cli.TaskPending, "done", ""} {
				_, err := fx.s.SettleTask(fx.ctx, taskA, v)
				fx.refused(fx.state(), err, cli.ErrInvalidArgument)
			}
		})
	})

	Describe("task", func() {
		It("returns nil for a task never opened or settled", func() {
			Expect(fx.task(taskA)).To(BeNil())
		})
	})

	Describe("open_tasks", func() {
		It("lists the tasks not settled, oldest opening first, then in the order opened, at most limit", func() {
			fx.clock.Advance(time.Second)
			Expect(fx.acted(fx.s.OpenTask(fx.ctx, cli.Causality{Task: "zulu"}, cli.KindRoot))).To(BeTrue())
			Expect(fx.acted(fx.s.OpenTask(fx.ctx, cli.Causality{Task: "alpha"}, cli.KindRoot))).To(BeTrue())
			Expect(fx.acted(fx.s.OpenTask(fx.ctx, cli.Causality{Task: "settled"}, cli.KindRoot))).To(BeTrue())
			fx.clock.Advance(-500 * time.Millisecond)
			Expect(fx.acted(fx.s.OpenTask(fx.ctx, cli.Causality{Task: "earlier"}, cli.KindRoot))).To(BeTrue())
			Expect(fx.acted(fx.s.SettleTask(fx.ctx, "settled", cli.TaskCompleted))).To(BeTrue())
			Expect(fx.acted(fx.s.SettleTask(fx.ctx, "never-opened", cli.TaskCompleted))).To(BeTrue())
			Expect(fx.openTasks(0)).To(Equal([]string{"earlier", "zulu", "alpha"}))
			Expect(fx.openTasks(2)).To(Equal([]string{"earlier", "zulu"}))
		})
		It("reads 100 tasks for a limit of 0", func() {
			for i := range 101 {
				Expect(fx.acted(fx.s.OpenTask(fx.ctx, cli.Causality{Task: fmt.Sprintf("t-%03d", i)}, cli.KindRoot))).To(BeTrue())
			}
			got := fx.openTasks(0)
			Expect(got).To(HaveLen(100))
			Expect(got[99]).To(Equal("t-099"))
			Expect(fx.openTasks(101)).To(HaveLen(101))
		})
	})

	Describe("task_is_known", func() {
		It("is true for a task that has or had a binding, or that an intent's envelope names", func() {
			Expect(fx.acted(fx.s.BindTask(fx.ctx, sessS, taskA))).To(BeTrue())
			Expect(fx.acted(fx.s.ReleaseBinding(fx.ctx, sessS, taskA))).To(BeTrue())
			Expect(fx.known(taskA)).To(BeTrue())
			fx.enqueue(opB, fx.env(taskB))
			Expect(fx.acted(fx.s.AcceptIntent(fx.ctx, opB, spec.RawJSON(`{}`)))).To(BeTrue())
			Expect(fx.known(taskB)).To(BeTrue())
		})
		It("is false for a task nothing names, or named other than as causality.task", func() {
			fx.enqueue(opA, spec.RawJSON(`{"task":"task-x","causality":{"parent_task":"task-y","task":7}}`))
			fx.enqueue(opB, spec.RawJSON(`["task-x"]`))
			Expect(fx.acted(fx.s.OpenTask(fx.ctx, cli.Causality{Task: "task-z"}, cli.KindRoot))).To(BeTrue())
			for _, t := range []string{"task-x", "task-y", "7", "task-z"} {
				Expect(fx.known(t)).To(BeFalse(), "task %s", t)
			}
		})
	})

	Describe("task_attempt", func() {
		It("is the highest attempt among the intents naming the task, and 0 when none does", func() {
			attempt := func(t string) int64 {
				GinkgoHelper()
				n, err := fx.s.TaskAttempt(fx.ctx, t)
				Expect(err).NotTo(HaveOccurred())
				return n
			}
			Expect(attempt(taskA)).To(BeZero())
			fx.enqueue(opA, fx.env(taskA))
			fx.enqueue(opB, fx.env(taskA))
			fx.enqueue(opC, fx.env(taskB))
			for range 3 {
				Expect(fx.acted(fx.s.BumpIntent(fx.ctx, opC, fx.at(0), "x"))).To(BeTrue())
			}
			Expect(fx.acted(fx.s.BumpIntent(fx.ctx, opB, fx.at(0), "x"))).To(BeTrue())
			Expect(fx.acted(fx.s.BumpIntent(fx.ctx, opB, fx.at(0), "x"))).To(BeTrue())
			Expect(attempt(taskA)).To(Equal(int64(2)))
			Expect(attempt(taskB)).To(Equal(int64(3)))
			Expect(attempt("task-z")).To(BeZero())
		})
	})
}
