package suite

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/storecheck/storecheck/spec"
	cli "github.com/storecheck/storecheck/spec/client"
)

// The event log. Its sequence numbers are the backend's: the specs learn
// each from the answer and present only numbers they read.
func clientEventSpecs(fx *clientFixture) {
	appendN := func(n int, typ func(int) string, data func(int) string) []int64 {
		GinkgoHelper()
		var seqs []int64
		for i := range n {
			seq, err := fx.s.AppendEvent(fx.ctx, typ(i), spec.RawJSON(data(i)))
			Expect(err).NotTo(HaveOccurred())
			seqs = append(seqs, seq)
		}
		return seqs
	}
	since := func(seq int64, limit uint32) []cli.Event {
		GinkgoHelper()
		evs, err := fx.s.EventsSince(fx.ctx, seq, limit)
		Expect(err).NotTo(HaveOccurred())
		return evs
	}

	Describe("append_event", func() {
		It("returns positive sequence numbers, each greater than every earlier one, whatever the numbering", Rules(cli.RuleEventSeq, cli.RuleEventHead), Bound("client.append_event.seq_increasing#last", spec.Above), func() {
			var last int64
			for i, seq := range appendN(5, func(int) string { return "tick" }, func(i int) string { return fmt.Sprint(i) }) {
				Expect(seq).To(BeNumerically(">", last), because(cli.RuleEventSeq, fmt.Sprintf("event %d: a positive number above %d", i, last)))
				last = seq
			}
			Expect(fx.head()).To(Equal(last), because(cli.RuleEventHead))
		})
		It("refuses data that is not JSON with invalid_argument and appends nothing, or keeps it verbatim", Rules(cli.RulePayloadJSON), func() {
			before := fx.state()
			seq, err := fx.s.AppendEvent(fx.ctx, "tick", spec.RawJSON(`{`))
			if err != nil {
				fx.refused(before, err, cli.ErrInvalidArgument)
				return
			}
			evs := since(0, 1)
			Expect(evs).To(HaveLen(1))
			Expect(evs[0].Seq).To(Equal(seq))
			Expect(string(evs[0].Data)).To(Equal(`{`), because(cli.RulePayloadJSON, "kept verbatim"))
		})
	})

	Describe("events_since", func() {
		It("returns the strictly later events in order, with type, data and time", Rules(cli.RuleEventsSince, cli.RuleTimePrecision), func() {
			var seqs []int64
			for i := range 4 {
				fx.clock.Advance(250 * time.Millisecond)
				seqs = append(seqs, appendN(1, func(int) string { return fmt.Sprint("type-", i) }, func(int) string { return fmt.Sprintf(`{"n":%d}`, i) })...)
			}
			evs := since(seqs[1], 10)
			Expect(evs).To(HaveLen(2), because(cli.RuleEventsSince, "the two events after the second"))
			for i, e := range evs {
				Expect(e.Seq).To(Equal(seqs[2+i]))
				Expect(e.Type).To(Equal(fmt.Sprint("type-", 2+i)))
				Expect(e.Data).To(MatchJSON(fmt.Sprintf(`{"n":%d}`, 2+i)))
				Expect(e.CreatedAt).To(keptAs(fx.at(time.Duration(3+i)*250*time.Millisecond)), because(cli.RuleEventsSince, "created when appended"))
			}
			Expect(since(seqs[3], 1)).To(BeEmpty(), because(cli.RuleEventsSince, "nothing after the last"))
			Expect(since(seqs[0]-1, 1)).To(HaveLen(1))
			Expect(since(seqs[0]-1, 1)[0].Seq).To(Equal(seqs[0]), because(cli.RuleEventsSince, "the first event is the first after any number below it"))
		})
		It("takes exactly limit events for a limit from 1 to 100 (99 and 100 asked of 102), and a prefix of at least 100 for one above (101) or any above 100, or for 0", Rules(cli.RuleEventsLimit), Bound("client.events_since.limit#exact", spec.Below, spec.At, spec.Above), func() {
			seqs := appendN(102, func(int) string { return "bulk" }, func(i int) string { return fmt.Sprint(i) })
			read := func(limit uint32) []int64 {
				GinkgoHelper()
				var out []int64
				for _, e := range since(0, limit) {
					out = append(out, e.Seq)
				}
				Expect(out).To(Equal(seqs[:len(out)]), because(cli.RuleEventsLimit, "a prefix of the events, in order"))
				return out
			}
			Expect(read(2)).To(HaveLen(2), because(cli.RuleEventsLimit))
			Expect(read(99)).To(HaveLen(99), because("client.events_since.limit#exact", "one below the bound: exactly 99"))
			Expect(read(100)).To(HaveLen(100), because("client.events_since.limit#exact", "at the bound: exactly 100"))
			Expect(len(read(101))).To(BeNumerically(">=", 100), because("client.events_since.limit#exact", "one above the bound: 100 or 101"))
			Expect(len(read(0))).To(BeNumerically("<=", 102), because(cli.RuleEventsLimit))
			Expect(len(read(501))).To(BeNumerically(">=", 100), because(cli.RuleEventsLimit, "a cap above 100 takes at least 100"))
		})
	})

	Describe("event_head", func() {
		It("is 0 with no events, then the last sequence number", Rules(cli.RuleEventHead), func() {
			Expect(fx.head()).To(BeZero(), because(cli.RuleEventHead))
			seq, err := fx.s.AppendEvent(fx.ctx, "one", spec.RawJSON(`null`))
			Expect(err).NotTo(HaveOccurred())
			Expect(fx.head()).To(Equal(seq), because(cli.RuleEventHead))
		})
	})
}
