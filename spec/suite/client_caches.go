package suite

import (
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
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
		It("reads back what was stored, the latest put winning", func() {
			Expect(outHead(taskA)).To(BeNil())
			Expect(fx.s.PutOutHead(fx.ctx, taskA, "first head")).To(Succeed())
			Expect(fx.s.PutOutHead(fx.ctx, taskA, "second head")).To(Succeed())
			Expect(fx.s.PutOutHead(fx.ctx, taskB, "other")).To(Succeed())
			Expect(outHead(taskA)).To(HaveValue(Equal("second head")))
			Expect(outHead(taskB)).To(HaveValue(Equal("other")))
		})
		It("keeps a head of 200 code points whole and cuts a longer one to its first 200 and an ellipsis", func() {
			exact := strings.Repeat("é", 200)
			Expect(fx.s.PutOutHead(fx.ctx, taskA, exact)).To(Succeed())
			Expect(outHead(taskA)).To(HaveValue(Equal(exact)))
			long := strings.Repeat("é", 150) + strings.Repeat("x", 60)
			Expect(fx.s.PutOutHead(fx.ctx, taskB, long)).To(Succeed())
			Expect(outHead(taskB)).To(HaveValue(Equal(strings.Repeat("é", 150) + strings.Repeat("x", 50) + "…")))
		})
	})

	Describe("put_prose", func() {
		It("reads back the role's prose, spec hash and time cached, the latest put winning", func() {
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
			Expect(p.CachedAt).To(BeTemporally("==", fx.at(3*time.Second)))
		})
	})

	Describe("put_config", func() {
		It("reads back the value of a key, the latest put winning, and nil for a key never put", func() {
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
