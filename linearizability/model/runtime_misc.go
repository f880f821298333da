package model

// Session meta, attachments and the durability tier.

import (
	"maps"

	"github.com/storecheck/storecheck/spec"
	r "github.com/storecheck/storecheck/spec/runtime"
)

// stepMisc answers the operations on session meta, attachments and the durability tier; false: op is not one of them.
func (m Runtime) stepMisc(s RuntimeState, op spec.Op, now int64) ([]Branch, bool) {
	switch o := op.(type) {
	case r.DurabilityTierOp:
		if m.Tier == "" {
			return One(s, OK(r.Durable)), true
		}
		return One(s, OK(m.Tier)), true

	case r.SaveSessionMeta:
		if s.meta == string(o.Meta) {
			return One(s, OK(nil)), true
		}
		s.meta = string(o.Meta)
		return One(s.sealed(pMeta), OK(nil)), true

	case r.LoadSessionMeta:
		return One(s, OK(rawOut(s.meta))), true

	case r.StageAttachment:
		staged := func() State {
			n := s
			n.attachments = maps.Clone(s.attachments)
			if n.attachments == nil {
				n.attachments = map[string]rtAttachment{}
			}
			n.attachments[o.AttachmentID] = rtAttachment{Session: o.SessionID, Data: string(o.Data), Text: valueText(o.Data)}
			return n.sealed(pAttachments)
		}
		a, ok := s.attachments[o.AttachmentID]
		switch {
		case !ok:
			return One(staged(), OK(nil)), true
		case a.Committed:
			return One(s, OK(nil)), true
		}
		// Staged again before its commit: the first stays, or the latest
		// replaces it.
		return []Branch{{Outcome: OK(nil), Next: s, Rule: ruleFirstStaging}, {Outcome: OK(nil), Next: staged(), Rule: ruleFirstStaging}}, true

	case r.LoadAttachment:
		a, ok := s.attachments[o.AttachmentID]
		if !ok {
			return One(s, OK((*r.Attachment)(nil))), true
		}
		out := &r.Attachment{AttachmentID: o.AttachmentID, SessionID: a.Session, Data: []byte(a.Data)}
		if a.Committed {
			at := a.CommittedAt
			out.CommittedAtMs = &at
		}
		return One(s, OK(out)), true
	}
	return nil, false
}
