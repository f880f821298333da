package model

// The caches: out heads and their previews, prose, config.

import (
	"hash/fnv"

	"github.com/storecheck/storecheck/spec"
	cli "github.com/storecheck/storecheck/spec/client"
)

type cprose struct {
	Prose, SpecHash string
	Cached          int64
}

// stepCaches answers the operations on caches; false: op is not one of them.
func (m Client) stepCaches(s ClientState, op spec.Op, now int64) ([]Branch, bool) {
	switch o := op.(type) {
	case cli.PutOutHead:
		head := o.Head
		var dh uint64
		s.outHeads, dh = put("out_head", s.outHeads, o.TaskID, &head)
		s.h ^= dh
		return One(s, OK(nil)), true

	case cli.GetOutHead:
		head, ok := s.outHeads[o.TaskID]
		if !ok {
			return One(s, OK((*string)(nil))), true
		}
		if p, ok := s.previews[head]; ok {
			return One(s, OK(&p)), true
		}
		ref := cli.HeadPreview(head)
		return []Branch{{Outcome: OK(&ref), Next: s, Rule: cli.RuleHeadPreview, Match: func(got Outcome) (map[string]string, bool) {
			p, ok := got.Result.(*string)
			if got.Kind != "" || !ok || p == nil {
				return nil, false
			}
			return map[string]string{previewHole(head): *p}, true
		}}}, true

	case cli.PutProse:
		p := cprose{Prose: o.Prose, SpecHash: o.SpecHash, Cached: now}
		var dh uint64
		s.prose, dh = put("prose", s.prose, o.Role, &p)
		s.h ^= dh
		return One(s, OK(nil)), true

	case cli.GetProse:
		p, ok := s.prose[o.Role]
		if !ok {
			return One(s, OK((*cli.Prose)(nil))), true
		}
		return s.timed(func(d int64) any { return &cli.Prose{Prose: p.Prose, SpecHash: p.SpecHash, CachedAt: at(p.Cached, d)} }), true

	case cli.PutConfig:
		v := o.Value
		var dh uint64
		s.config, dh = put("config", s.config, o.Key, &v)
		s.h ^= dh
		return One(s, OK(nil)), true

	case cli.GetConfig:
		if v, ok := s.config[o.Key]; ok {
			return One(s, OK(&v)), true
		}
		return One(s, OK((*string)(nil))), true
	}
	return nil, false
}

// previewHole is the hole of the backend's preview of head, until a read
// shows it (client.put_out_head.preview).
func previewHole(head string) string {
	h := fnv.New64a()
	h.Write([]byte(head))
	return Hole("preview", int64(h.Sum64()>>2))
}
