package suite

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/storecheck/storecheck/spec"
	cli "github.com/storecheck/storecheck/spec/client"
)

// Faults recorded against a task.
func clientFaultSpecs(fx *clientFixture) {
	Describe("insert_fault", func() {
		It("returns increasing ids, and list_faults returns the task's faults in insertion order", Rules(cli.RuleFaultID, "client.list_faults.order", cli.RuleUnixSeconds), Bound("client.insert_fault.id_increasing#last", spec.Above), func() {
			fault := func(t, reason string) cli.Fault {
				return cli.Fault{TaskID: t, SessionID: sessS, Generation: 1, Seq: 2, DesiredJSON: `{}`, ObservedJSON: `{"x":1}`,
					Intent: "complete", Attempt: 3, BackendRef: `{"backend":"acp"}`, Kind: "mismatch", Reason: reason,
					State: "open", CreatedAt: fx.at(1234 * time.Millisecond)}
			}
			var ids []int64
			var want []cli.Fault
			for i, fl := range []cli.Fault{fault(taskA, "first"), fault(taskB, "other task"), fault(taskA, "second")} {
				fl.ID = 999
				id, err := fx.s.InsertFault(fx.ctx, fl)
				Expect(err).NotTo(HaveOccurred())
				if i > 0 {
					Expect(id).To(BeNumerically(">", ids[i-1]), because(cli.RuleFaultID, fmt.Sprintf("fault %d", i)))
				}
				ids = append(ids, id)
				fl.ID = id
				if fl.TaskID == taskA {
					want = append(want, fl)
				}
			}
			got, err := fx.s.ListFaults(fx.ctx, taskA)
			Expect(err).NotTo(HaveOccurred())
			Expect(got).To(HaveLen(2))
			for i := range got {
				Expect(got[i].CreatedAt).To(keptAs(want[i].CreatedAt), because(cli.RuleUnixSeconds))
				got[i].CreatedAt = want[i].CreatedAt
			}
			Expect(got).To(Equal(want), because("client.list_faults.order", "each as inserted, with the id it was given"))
			none, err := fx.s.ListFaults(fx.ctx, "task-z")
			Expect(err).NotTo(HaveOccurred())
			Expect(none).To(BeEmpty())
		})
	})
}
