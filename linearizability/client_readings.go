package linearizability

import (
	"context"
	"time"

	"github.com/jonboulle/clockwork"

	"github.com/storecheck/storecheck/adapters"
	"github.com/storecheck/storecheck/spec"
	cli "github.com/storecheck/storecheck/spec/client"
)

// OtherClientReadings is a client store Target that answers as a backend
// that reads the seed's silences otherwise than the reference does (see
// spec/client's rule table): its event sequence numbers run 1010, 1020,
// 1030... (client.append_event.seq_increasing), its fault ids 107, 114,
// 121... (client.insert_fault.id_increasing), its out-head preview keeps 20
// code points and marks a cut with " [more]" (client.put_out_head.preview),
// and it keeps every time to the whole second (client.time_precision,
// client.unix_seconds). It wraps t, a store of the reference's readings
// opened with SecondsClock; the kit's checks must pass it as they pass the
// reference.
func OtherClientReadings(t adapters.Target) adapters.Target { return otherReadings{t} }

// SecondsClock is clock read to the whole second: the clock a store that
// keeps times to the second sees.
func SecondsClock(clock clockwork.Clock) clockwork.Clock { return secondsClock{clock} }

type secondsClock struct{ clockwork.Clock }

func (s secondsClock) Now() time.Time { return s.Clock.Now().Truncate(time.Second) }

type otherReadings struct{ adapters.Target }

// Arm and Crash reach the wrapped Target: the simulator crashes it at its
// crash points, and kills it, as it does the reference.
func (r otherReadings) Arm(point string) error { return adapters.Arm(r.Target, point) }
func (r otherReadings) Crash() error           { return adapters.Crash(r.Target) }

func seqOut(n int64) int64 { return 1000 + 10*n }

// seqIn is the reference's number below which every event of the other
// numbering lies at or below q.
func seqIn(q int64) int64 {
	if q < 1010 {
		return 0
	}
	return (q - 1000) / 10
}

func faultOut(n int64) int64 { return 100 + 7*n }

func otherPreview(head string) string {
	r := []rune(head)
	if len(r) <= 20 {
		return head
	}
	return string(r[:20]) + " [more]"
}

func sec(t time.Time) time.Time { return t.Truncate(time.Second) }

func secIntents(in []cli.Intent) []cli.Intent {
	out := make([]cli.Intent, len(in))
	for i, x := range in {
		x.NextAttemptAt, x.CreatedAt, x.UpdatedAt = sec(x.NextAttemptAt), sec(x.CreatedAt), sec(x.UpdatedAt)
		out[i] = x
	}
	return out
}

func secTask(t cli.Task) cli.Task {
	t.OpenedAt = sec(t.OpenedAt)
	if t.SettledAt != nil {
		s := sec(*t.SettledAt)
		t.SettledAt = &s
	}
	return t
}

func (r otherReadings) Apply(ctx context.Context, op spec.Op) (any, error) {
	switch o := op.(type) {
	case cli.BumpIntent:
		o.NextAttemptAt = sec(o.NextAttemptAt)
		op = o
	case cli.DeferIntent:
		o.NextAttemptAt = sec(o.NextAttemptAt)
		op = o
	case cli.DueIntents:
		o.Now = sec(o.Now)
		op = o
	case cli.EventsSince:
		o.Seq = seqIn(o.Seq)
		op = o
	case cli.PutOutHead:
		o.Head = otherPreview(o.Head)
		op = o
	case cli.UpsertSession:
		o.Version.UpdatedAt = sec(o.Version.UpdatedAt)
		op = o
	case cli.InsertFault:
		o.Fault.CreatedAt = sec(o.Fault.CreatedAt)
		op = o
	}
	res, err := r.Target.Apply(ctx, op)
	if err != nil {
		return res, err
	}
	switch v := res.(type) {
	case *cli.Intent:
		if v != nil {
			x := secIntents([]cli.Intent{*v})[0]
			return &x, nil
		}
	case []cli.Intent:
		return secIntents(v), nil
	case []cli.Event:
		out := make([]cli.Event, len(v))
		for i, e := range v {
			e.Seq, e.CreatedAt = seqOut(e.Seq), sec(e.CreatedAt)
			out[i] = e
		}
		return out, nil
	case *cli.Prose:
		if v != nil {
			p := *v
			p.CachedAt = sec(p.CachedAt)
			return &p, nil
		}
	case *cli.SessionRecord:
		if v != nil {
			s := *v
			s.UpdatedAt = sec(s.UpdatedAt)
			return &s, nil
		}
	case *cli.Task:
		if v != nil {
			t := secTask(*v)
			return &t, nil
		}
	case []cli.Task:
		out := make([]cli.Task, len(v))
		for i, t := range v {
			out[i] = secTask(t)
		}
		return out, nil
	case []cli.Fault:
		out := make([]cli.Fault, len(v))
		for i, f := range v {
			f.ID, f.CreatedAt = faultOut(f.ID), sec(f.CreatedAt)
			out[i] = f
		}
		return out, nil
	case int64:
		switch op.(type) {
		case cli.AppendEvent:
			return seqOut(v), nil
		case cli.EventHead:
			if v == 0 {
				return v, nil
			}
			return seqOut(v), nil
		case cli.InsertFault:
			return faultOut(v), nil
		}
	}
	return res, err
}
