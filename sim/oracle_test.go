package sim

import (
	"testing"
	"time"

	"github.com/storecheck/storecheck/linearizability/model"
	"github.com/storecheck/storecheck/spec"
	c "github.com/storecheck/storecheck/spec/client"
)

// clientTuple is a session tuple of task-1's sessions in the tests below,
// written at the given millisecond of the epoch, its session named by ref.
func clientTuple(session string, seq uint64, ms int) c.VersionedSession {
	return c.VersionedSession{Generation: 1, Seq: seq, AgentState: "booting", DeliveryState: "delivering", ResourceState: "open",
		DesiredJSON: "{}", ObservedJSON: "{}", BackendRef: `{"task_id":"` + session + `"}`, UpdatedAt: Epoch.Add(time.Duration(ms) * time.Millisecond)}
}

func clientRecord(session, task string, v c.VersionedSession) model.Outcome {
	return model.OK(&c.SessionRecord{SessionID: session, TaskID: task, VersionedSession: v})
}

// A read that overlaps a write may take effect before or after it, and
// what its answer teaches differs between the two: get_session(task-1)
// answering sess-0 while bind_task(sess-0, task-4) closes (sess-0, task-1)
// keeps every binding choice (client.get_session.binding_choice) when the
// read came first, and only the readings that ignore whether a binding is
// open when it came after. The oracle keeps both, so a later get_session
// answered by the one open binding (the reference's open-first reading) is
// allowed. (Seed 1095 of the sweep: the two placements assumed one answer,
// and the oracle kept only one of them.)
func TestAnOverlappingReadKeepsWhatEachPlacementTeaches(t *testing.T) {
	o := newOracle(model.Client{})
	ret := func(id int, op spec.Op, got model.Outcome) {
		t.Helper()
		if allowed, ok := o.ret(id, op, got); !ok {
			t.Fatalf("%s answered %v, the model allows %v", op.Name(), got, model.Allowed(allowed))
		}
	}
	run := func(id int, op spec.Op, got model.Outcome) {
		t.Helper()
		o.call(id, op, 0)
		ret(id, op, got)
	}
	first, sess0 := clientTuple("", 2, 31), clientTuple("sess-0", 2, 665)
	run(0, c.UpsertSession{TaskID: "task-1", Version: first}, model.OK(true))
	run(1, c.UpsertSession{TaskID: "task-1", Version: sess0}, model.OK(true))

	bind, read := c.BindTask{SessionID: "sess-0", TaskID: "task-4"}, c.GetSession{TaskID: "task-1"}
	o.call(2, bind, 0)
	o.call(3, read, 0)
	ret(2, bind, model.OK(true))
	ret(3, read, clientRecord("sess-0", "task-1", sess0))
	// sess-1 opens a later binding of task-1 (3 s on, so that no bound_at
	// reading ties it with the others), then moves to task-3, closing it:
	// ("", task-1) is task-1's only open binding.
	run(4, c.UpsertSession{TaskID: "task-1", Version: clientTuple("sess-1", 1, 3535)}, model.OK(true))
	run(5, c.UpsertSession{TaskID: "task-3", Version: clientTuple("sess-1", 2, 3787)}, model.OK(true))
	run(6, read, clientRecord("", "task-1", first))
}
