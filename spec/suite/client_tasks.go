package suite

import (
	"fmt"
	"math"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/storecheck/storecheck/spec"
	cli "github.com/storecheck/storecheck/spec/client"
)

// Tasks: opened, settled once, listed and known.
func clientTaskSpecs(fx *clientFixture) {
	Describe("open_task", func() {
		It("opens a new task pending, now, with its chain, and answers true", Rules("client.open_task.new"), func() {
			fx.clock.Advance(time.Second)
			Expect(fx.acted(fx.s.OpenTask(fx.ctx, cli.Causality{Task: taskA, ParentTask: "parent", Hop: 2, Attempt: 1}, cli.KindRelay))).To(BeTrue())
			t := fx.task(taskA)
			Expect(t).NotTo(BeNil())
			Expect(t.TaskID).To(Equal(taskA))
			Expect(t.Kind).To(Equal(cli.KindRelay))
			Expect(t.ParentTask).To(Equal("parent"))
			Expect([]int64{t.Hop, t.Attempt}).To(Equal([]int64{2, 1}))
			Expect(t.State).To(Equal(cli.TaskPending))
			Expect(t.OpenedAt).To(keptAs(fx.at(time.Second)), because("client.open_task.new", "opened now"))
			Expect(t.SettledAt).To(BeNil())
		})
		It("re-opening refreshes the chain, keeps state and opening time, never lowers the attempt, and answers true", Rules(cli.RuleOpenTaskRefresh), Bound("client.open_task.refresh#attempt", spec.Below, spec.At, spec.Above), func() {
			Expect(fx.acted(fx.s.OpenTask(fx.ctx, cli.Causality{Task: taskA, Attempt: 3}, cli.KindRoot))).To(BeTrue())
			fx.clock.Advance(time.Second)
			Expect(fx.acted(fx.s.OpenTask(fx.ctx, cli.Causality{Task: taskA, ParentTask: "p2", Hop: 4, Attempt: 2}, cli.KindRelay))).To(BeTrue(),
				because(cli.RuleOpenTaskRefresh, "a refresh writes the record"))
			t := fx.task(taskA)
			Expect(t.Kind).To(Equal(cli.KindRelay))
			Expect(t.ParentTask).To(Equal("p2"))
			Expect(t.Hop).To(Equal(int64(4)))
			Expect(t.Attempt).To(Equal(int64(3)), because(cli.RuleOpenTaskRefresh, "the attempt never runs backwards"))
			Expect(t.OpenedAt).To(keptAs(fx.at(0)), because(cli.RuleOpenTaskRefresh, "the opening time stays"))
			Expect(t.State).To(Equal(cli.TaskPending))
			Expect(fx.acted(fx.s.OpenTask(fx.ctx, cli.Causality{Task: taskA, Attempt: 3}, cli.KindRoot))).To(BeTrue())
			Expect(fx.task(taskA).Attempt).To(Equal(int64(3)), because(cli.RuleOpenTaskRefresh, "the stored attempt presented again stays"))
			Expect(fx.acted(fx.s.OpenTask(fx.ctx, cli.Causality{Task: taskA, Attempt: 4}, cli.KindRoot))).To(BeTrue())
			Expect(fx.task(taskA).Attempt).To(Equal(int64(4)), because(cli.RuleOpenTaskRefresh, "an attempt one above is taken"))
		})
		// No seed bounds the attempt, but a store may keep it in fewer bits
		// than the seed's u32 and INTEGER (issue 26 item 6): an attempt past
		// what 16 bits keep reads back as given, and a lower one presented
		// after it does not take its place.
		It("keeps an attempt past what 16 bits keep: 65,537 reads 65,537", Rules("client.open_task.new", cli.RuleOpenTaskRefresh), func() {
			Expect(fx.acted(fx.s.OpenTask(fx.ctx, cli.Causality{Task: taskA, Attempt: spec.Counter16 + 2}, cli.KindRoot))).To(BeTrue())
			Expect(fx.task(taskA).Attempt).To(Equal(int64(spec.Counter16+2)), "task")
			Expect(fx.acted(fx.s.OpenTask(fx.ctx, cli.Causality{Task: taskA, Attempt: 3}, cli.KindRoot))).To(BeTrue())
			Expect(fx.task(taskA).Attempt).To(Equal(int64(spec.Counter16+2)), because(cli.RuleOpenTaskRefresh, "the larger attempt stays"))
		})
		It("re-opening a settled task keeps its verdict and settle time, and answers true", Rules(cli.RuleOpenTaskRefresh), func() {
			Expect(fx.acted(fx.s.OpenTask(fx.ctx, cli.Causality{Task: taskA}, cli.KindRoot))).To(BeTrue())
			fx.clock.Advance(time.Second)
			Expect(fx.acted(fx.s.SettleTask(fx.ctx, taskA, cli.TaskCompleted))).To(BeTrue())
			fx.clock.Advance(time.Second)
			Expect(fx.acted(fx.s.OpenTask(fx.ctx, cli.Causality{Task: taskA, Attempt: 1}, cli.KindRoot))).To(BeTrue(),
				because(cli.RuleOpenTaskRefresh, "a refresh writes the record"))
			t := fx.task(taskA)
			Expect(t.State).To(Equal(cli.TaskCompleted), because(cli.RuleOpenTaskRefresh, "the verdict stays"))
			Expect(t.SettledAt).To(HaveValue(keptAs(fx.at(time.Second))))
			Expect(t.Attempt).To(Equal(int64(1)))
			Expect(fx.openTasks(0)).To(BeEmpty())
		})
		It("takes a kind other than root or relay as given, or refuses it with invalid_argument", Rules(cli.RuleOpenTaskKinds), func() {
			before := fx.state()
			opened, err := fx.s.OpenTask(fx.ctx, cli.Causality{Task: taskA}, "complete")
			if err != nil {
				fx.refused(before, err, cli.ErrInvalidArgument)
				return
			}
			Expect(opened).To(BeTrue(), because(cli.RuleOpenTaskKinds, "a kind taken opens the task"))
			Expect(fx.task(taskA).Kind).To(Equal("complete"), because(cli.RuleOpenTaskKinds, "kept as given"))
		})
	})

	Describe("settle_task", func() {
		It("settles an open task with its verdict, now, and answers true", Rules("client.settle_task.first_wins"), func() {
			Expect(fx.acted(fx.s.OpenTask(fx.ctx, cli.Causality{Task: taskA, Attempt: 2}, cli.KindRoot))).To(BeTrue())
			fx.clock.Advance(time.Second)
			Expect(fx.acted(fx.s.SettleTask(fx.ctx, taskA, cli.TaskFailed))).To(BeTrue())
			t := fx.task(taskA)
			Expect(t.State).To(Equal(cli.TaskFailed))
			Expect(t.SettledAt).To(HaveValue(keptAs(fx.at(time.Second))), because("client.settle_task.first_wins", "settled now"))
			Expect(t.Attempt).To(Equal(int64(2)))
			Expect(fx.openTasks(0)).To(BeEmpty())
		})
		It("lets the first terminal verdict win: a later one answers false and changes nothing", Rules("client.settle_task.first_wins"), func() {
			Expect(fx.acted(fx.s.OpenTask(fx.ctx, cli.Causality{Task: taskA}, cli.KindRoot))).To(BeTrue())
			Expect(fx.acted(fx.s.SettleTask(fx.ctx, taskA, cli.TaskCompleted))).To(BeTrue())
			fx.clock.Advance(time.Second)
			before := fx.state()
			fx.declines(before)(fx.s.SettleTask(fx.ctx, taskA, cli.TaskCancelled))
			fx.declines(before)(fx.s.SettleTask(fx.ctx, taskA, cli.TaskCompleted))
			Expect(fx.task(taskA).State).To(Equal(cli.TaskCompleted))
		})
		It("creates the record of a task never opened: no kind, no parent, opened and settled now", Rules("client.settle_task.never_opened"), func() {
			fx.clock.Advance(time.Second)
			Expect(fx.acted(fx.s.SettleTask(fx.ctx, taskB, cli.TaskCompleted))).To(BeTrue())
			t := fx.task(taskB)
			Expect(t).NotTo(BeNil())
			Expect(t.Kind).To(BeEmpty())
			Expect(t.ParentTask).To(BeEmpty())
			Expect([]int64{t.Hop, t.Attempt}).To(Equal([]int64{0, 0}))
			Expect(t.State).To(Equal(cli.TaskCompleted))
			Expect(t.OpenedAt).To(keptAs(fx.at(time.Second)))
			Expect(t.SettledAt).To(HaveValue(keptAs(fx.at(time.Second))))
			fx.declines(fx.state())(fx.s.SettleTask(fx.ctx, taskB, cli.TaskFailed))
		})
		It("takes a verdict other than completed, failed or cancelled as given, or refuses it with invalid_argument", Rules(cli.RuleSettleVerdictWords), func() {
			for i, v := range []cli.TaskState{cli.TaskPending, "done", ""} {
				task := fmt.Sprint("task-", i)
				Expect(fx.acted(fx.s.OpenTask(fx.ctx, cli.Causality{Task: task}, cli.KindRoot))).To(BeTrue())
				before := fx.state()
				settled, err := fx.s.SettleTask(fx.ctx, task, v)
				if err != nil {
					fx.refused(before, err, cli.ErrInvalidArgument)
					continue
				}
				Expect(settled).To(BeTrue(), because(cli.RuleSettleVerdictWords, fmt.Sprintf("verdict %q taken settles the open task", v)))
				t := fx.task(task)
				Expect(t.State).To(Equal(v), because(cli.RuleSettleVerdictWords, "kept as given"))
				Expect(t.SettledAt).NotTo(BeNil())
				Expect(fx.openTasks(0)).NotTo(ContainElement(task), because("client.settle_task.first_wins", "a settled task is not open"))
			}
		})
		It("answers invalid_argument or false to a verdict outside its words for a task already settled, and changes nothing", Rules(cli.RuleRefusalOrder, cli.RuleSettleVerdictWords), func() {
			Expect(fx.acted(fx.s.SettleTask(fx.ctx, taskA, cli.TaskCompleted))).To(BeTrue())
			before := fx.state()
			settled, err := fx.s.SettleTask(fx.ctx, taskA, "done")
			if err != nil {
				fx.refused(before, err, cli.ErrInvalidArgument)
				return
			}
			Expect(settled).To(BeFalse(), because(cli.RuleRefusalOrder, "the first verdict won"))
			Expect(fx.state()).To(Equal(before))
		})
	})

	Describe("task", func() {
		It("returns nil for a task never opened or settled", Rules("client.task.read"), func() {
			Expect(fx.task(taskA)).To(BeNil())
		})
	})

	Describe("open_tasks", func() {
		It("lists the tasks not settled, oldest opening first, then in the order opened, at most limit", Rules("client.open_tasks.order", cli.RuleOpenTasksLimit, cli.RuleTimePrecision), func() {
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
		It("reads 100 tasks for a limit of 0 (of 99, 100 and 101 open), and at most 500 for any limit (499, 500 and 501 asked of 501 open)", Rules(cli.RuleOpenTasksLimit),
			Bound("client.open_tasks.limit#default", spec.Below, spec.At, spec.Above), Bound("client.open_tasks.limit#cap", spec.Below, spec.At, spec.Above), func() {
				const deflt, limitCap = "client.open_tasks.limit#default", "client.open_tasks.limit#cap"
				opened := 0
				fill := func(to int) {
					GinkgoHelper()
					for ; opened < to; opened++ {
						Expect(fx.acted(fx.s.OpenTask(fx.ctx, cli.Causality{Task: bulkID(opened)}, cli.KindRoot))).To(BeTrue())
					}
				}
				read := func(limit uint32, want int, bound, what string) {
					GinkgoHelper()
					firstRows(fx.openTasks(limit), want, bound, fmt.Sprintf("%s, limit %d", what, limit))
				}
				fill(99)
				read(0, 99, deflt, "99 open, one below the default")
				fill(100)
				read(0, 100, deflt, "100 open, at the default")
				fill(101)
				read(0, 100, deflt, "101 open, one above the default")
				fill(501)
				read(499, 499, limitCap, "501 open, one below the cap")
				read(500, 500, limitCap, "501 open, at the cap")
				read(501, 500, limitCap, "501 open, one above the cap")
				read(math.MaxUint32, 500, limitCap, "501 open, the largest limit (which a backend narrowing it to 32 signed bits reads as -1, no limit to SQLite)")
			})
	})

	Describe("task_is_known", func() {
		It("is true for a task that has or had a binding, or that an intent's envelope names", Rules("client.task_is_known.binding_or_intent", cli.RuleKnownTwoStatements), func() {
			Expect(fx.acted(fx.s.BindTask(fx.ctx, sessS, taskA))).To(BeTrue())
			Expect(fx.acted(fx.s.ReleaseBinding(fx.ctx, sessS, taskA))).To(BeTrue())
			Expect(fx.known(taskA)).To(BeTrue())
			fx.enqueue(opB, fx.env(taskB))
			Expect(fx.acted(fx.s.AcceptIntent(fx.ctx, opB, spec.RawJSON(`{}`)))).To(BeTrue())
			Expect(fx.known(taskB)).To(BeTrue())
		})
		It("is false for a task nothing names, or named other than as causality.task", Rules("client.task_is_known.binding_or_intent", cli.RuleEnvelopeTask), func() {
			fx.enqueue(opA, spec.RawJSON(`{"task":"task-x","causality":{"parent_task":"task-y","task":7}}`))
			fx.enqueue(opB, spec.RawJSON(`["task-x"]`))
			Expect(fx.acted(fx.s.OpenTask(fx.ctx, cli.Causality{Task: "task-z"}, cli.KindRoot))).To(BeTrue())
			for _, t := range []string{"task-x", "task-y", "7", "task-z"} {
				Expect(fx.known(t)).To(BeFalse(), "task %s", t)
			}
		})
		It("counts an envelope naming causality.task twice by either occurrence", Rules(cli.RuleEnvelopeTask), func() {
			fx.enqueue(opA, spec.RawJSON(`{"causality":{"task":"task-first","task":"task-last"}}`))
			first, last := fx.known("task-first"), fx.known("task-last")
			Expect(first != last).To(BeTrue(), because(cli.RuleEnvelopeTask, fmt.Sprintf("one occurrence counts (first %v, last %v)", first, last)))
			Expect(fx.known("task-other")).To(BeFalse())
		})
	})

	Describe("task_attempt", func() {
		It("is the highest attempt among the intents naming the task, and 0 when none does", Rules("client.task_attempt.max"), func() {
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
