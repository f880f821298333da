package suite

import (
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	cli "github.com/storecheck/storecheck/spec/client"
)

// The caches: out heads, prose and config, the latest put winning.
func clientCacheSpecs(fx *clientFixture) {
	Describe("put_out_head", func() {
		outHead := func(t string) *string {
			GinkgoHelper()
			v, err := fx.s.OutHead(fx.ctx, t)
			Expect(err).NotTo(HaveOccurred())
			return v
		}
		It("keeps one preview of each head, the same for the same head, the latest put winning", Rules(cli.RuleHeadPreview, "client.put_out_head.latest_wins"), func() {
			first, second := "first head", strings.Repeat("é", 150)+strings.Repeat("x", 60)
			Expect(outHead(taskA)).To(BeNil(), because("client.put_out_head.latest_wins", "nil for a task never put"))
			Expect(fx.s.PutOutHead(fx.ctx, taskA, first)).To(Succeed())
			p1 := outHead(taskA)
			Expect(p1).NotTo(BeNil(), because(cli.RuleHeadPreview, "a put keeps a preview"))
			Expect(fx.s.PutOutHead(fx.ctx, taskA, second)).To(Succeed())
			Expect(fx.s.PutOutHead(fx.ctx, taskB, second)).To(Succeed())
			Expect(fx.s.PutOutHead(fx.ctx, "task-c", first)).To(Succeed())
			p2 := outHead(taskB)
			Expect(p2).NotTo(BeNil())
			Expect(outHead(taskA)).To(HaveValue(Equal(*p2)), because("client.put_out_head.latest_wins", "task a holds the preview of its latest head, the one task b holds"))
			Expect(outHead("task-c")).To(HaveValue(Equal(*p1)), because(cli.RuleHeadPreview, "the same head, the same preview"))
		})
	})

	Describe("put_prose", func() {
		It("reads back the role's prose, spec hash and time cached, the latest put winning", Rules("client.put_prose.latest_wins"), func() {
			p, err := fx.s.Prose(fx.ctx, "reviewer")
			Expect(err).NotTo(HaveOccurred())
			Expect(p).To(BeNil())
			Expect(fx.s.PutProse(fx.ctx, "reviewer", "old prose", "h1")).To(Succeed())
			fx.clock.Advance(3 * time.Second)
			Expect(fx.s.PutProse(fx.ctx, "reviewer", "new prose", "h2")).To(Succeed())
			p, err = fx.s.Prose(fx.ctx, "reviewer")
			Expect(err).NotTo(HaveOccurred())
			Expect(p).NotTo(BeNil())
			Expect(p.Prose).To(Equal("new prose"))
			Expect(p.SpecHash).To(Equal("h2"))
			Expect(p.CachedAt).To(keptAs(fx.at(3*time.Second)), because("client.put_prose.latest_wins", "cached now"))
		})
	})

	Describe("put_config", func() {
		It("reads back the value of a key, the latest put winning, and nil for a key never put", Rules("client.put_config.latest_wins"), func() {
			Expect(fx.s.PutConfig(fx.ctx, "server", "a")).To(Succeed())
			Expect(fx.s.PutConfig(fx.ctx, "server", "b")).To(Succeed())
			v, err := fx.s.Config(fx.ctx, "server")
			Expect(err).NotTo(HaveOccurred())
			Expect(v).To(HaveValue(Equal("b")))
			v, err = fx.s.Config(fx.ctx, "missing")
			Expect(err).NotTo(HaveOccurred())
			Expect(v).To(BeNil())
		})
	})
}
