package suite

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/storecheck/storecheck/spec"
	cli "github.com/storecheck/storecheck/spec/client"
)

// The event log.
func clientEventSpecs(fx *clientFixture) {
	Describe("append_event", func() {
		It("returns strictly increasing sequence numbers, the first being 1", func() {
			var last int64
			for i := range 5 {
				seq, err := fx.s.AppendEvent(fx.ctx, "tick", spec.RawJSON(fmt.Sprint(i)))
				Expect(err).NotTo(HaveOccurred())
				if i == 0 {
					Expect(seq).To(Equal(int64(1)))
				}
				Expect(seq).To(BeNumerically(">", last))
				last = seq
			}
			Expect(fx.head()).To(Equal(last))
		})
		It("refuses data that is not JSON with invalid_argument and appends nothing", func() {
			_, err := fx.s.AppendEvent(fx.ctx, "tick", spec.RawJSON(`{`))
			fx.refused(fx.state(), err, cli.ErrInvalidArgument)
		})
	})

	Describe("events_since", func() {
		It("returns the strictly later events in order, with type, data and time", func() {
			var seqs []int64
			for i := range 4 {
				fx.clock.Advance(250 * time.Millisecond)
				seq, err := fx.s.AppendEvent(fx.ctx, fmt.Sprint("type-", i), spec.RawJSON(fmt.Sprintf(`{"n":%d}`, i)))
				Expect(err).NotTo(HaveOccurred())
				seqs = append(seqs, seq)
			}
			evs, err := fx.s.EventsSince(fx.ctx, seqs[1], 0)
			Expect(err).NotTo(HaveOccurred())
			Expect(evs).To(HaveLen(2))
			for i, e := range evs {
				Expect(e.Seq).To(Equal(seqs[2+i]))
				Expect(e.Type).To(Equal(fmt.Sprint("type-", 2+i)))
				Expect(e.Data).To(MatchJSON(fmt.Sprintf(`{"n":%d}`, 2+i)))
				Expect(e.CreatedAt).To(BeTemporally("==", fx.at(time.Duration(3+i)*250*time.Millisecond)))
			}
			evs, err = fx.s.EventsSince(fx.ctx, seqs[3], 0)
			Expect(err).NotTo(HaveOccurred())
			Expect(evs).To(BeEmpty())
		})
		It("takes at most limit events: 0 means 100, and never more than 500", func() {
			for i := range 501 {
				_, err := fx.s.AppendEvent(fx.ctx, "bulk", spec.RawJSON(fmt.Sprint(i)))
				Expect(err).NotTo(HaveOccurred())
			}
			count := func(limit uint32) int {
				GinkgoHelper()
				evs, err := fx.s.EventsSince(fx.ctx, 0, limit)
				Expect(err).NotTo(HaveOccurred())
				return len(evs)
			}
			Expect(count(2)).To(Equal(2))
			Expect(count(0)).To(Equal(100))
			Expect(count(501)).To(Equal(500))
		})
	})

	Describe("event_head", func() {
		It("is 0 with no events, then the last sequence number", func() {
			Expect(fx.head()).To(BeZero())
			seq, err := fx.s.AppendEvent(fx.ctx, "one", spec.RawJSON(`null`))
			Expect(err).NotTo(HaveOccurred())
			Expect(fx.head()).To(Equal(seq))
		})
	})
}
