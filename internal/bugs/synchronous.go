package bugs

import (
	"context"

	"github.com/storecheck/storecheck/adapters"
	refclient "github.com/storecheck/storecheck/reference/client"
	refcontinuity "github.com/storecheck/storecheck/reference/continuity"
	refruntime "github.com/storecheck/storecheck/reference/runtime"
	"github.com/storecheck/storecheck/reference/sqlitedb"
	"github.com/storecheck/storecheck/spec"
	cli "github.com/storecheck/storecheck/spec/client"
	c "github.com/storecheck/storecheck/spec/continuity"
	r "github.com/storecheck/storecheck/spec/runtime"
)

// The durability bugs: each store's reference with SQLite's synchronous
// setting lowered from its default (FULL, which the seeds leave in place:
// the rule <store>.survives_power_loss), so that a commit is acknowledged
// before it is on disk. Every layer but a power cut passes them: a killed
// process loses nothing the kernel was handed.
//
//   - synchronous=OFF never syncs at all: after a power cut even the schema
//     may be gone;
//   - WAL with synchronous=NORMAL syncs only at a checkpoint: "a
//     transaction committed in WAL mode with synchronous=NORMAL might roll
//     back following a power loss" (SQLite's documentation), and the
//     commits since the last checkpoint do.
var (
	RuntimeSynchronousOff, RuntimeWALSynchronousNormal       Bug
	ClientSynchronousOff, ClientWALSynchronousNormal         Bug
	ContinuitySynchronousOff, ContinuityWALSynchronousNormal Bug
)

// The bugs are registered in init, after every other (the stores' lists
// are made again to hold them), so that the order of the others, which
// selftest's exec sample reads, is the same as without them.
func init() {
	RuntimeSynchronousOff = synchronousBug("runtime_synchronous_off", r.StoreName, "OFF")
	RuntimeWALSynchronousNormal = synchronousBug("runtime_wal_synchronous_normal", r.StoreName, "NORMAL")
	ClientSynchronousOff = synchronousBug("client_synchronous_off", cli.StoreName, "OFF")
	ClientWALSynchronousNormal = synchronousBug("client_wal_synchronous_normal", cli.StoreName, "NORMAL")
	ContinuitySynchronousOff = synchronousBug("continuity_synchronous_off", c.StoreName, "OFF")
	ContinuityWALSynchronousNormal = synchronousBug("continuity_wal_synchronous_normal", c.StoreName, "NORMAL")
	Runtime, Client, Continuity = Of(r.StoreName), Of(cli.StoreName), Of(c.StoreName)
}

// needsPowerCut are the bugs only a power cut shows.
var needsPowerCut = map[string]bool{}

// NeedsPowerCut reports whether only a power cut shows b: where none can be
// cut (no FUSE here), no layer can catch it.
func (b Bug) NeedsPowerCut() bool { return needsPowerCut[b.name] }

// synchronousBug registers store's reference opened with SQLite's
// synchronous set to setting.
func synchronousBug(name, store, setting string) Bug {
	needsPowerCut[name] = true
	return register(name, store, func(ctx context.Context, o spec.OpenOptions) (adapters.Target, error) {
		switch store {
		case r.StoreName:
			s, err := refruntime.Open(ctx, refruntime.Options{Path: o.Path, Clock: o.Clock, Synchronous: setting})
			if err != nil {
				return nil, err
			}
			return sqlitedb.Target[r.Store](s, r.Apply), nil
		case cli.StoreName:
			s, err := refclient.Open(ctx, refclient.Options{Path: o.Path, Clock: o.Clock, Synchronous: setting})
			if err != nil {
				return nil, err
			}
			return sqlitedb.Target[cli.Store](s, cli.Apply), nil
		}
		s, err := refcontinuity.Open(ctx, refcontinuity.Options{Path: o.Path, Synchronous: setting})
		if err != nil {
			return nil, err
		}
		return sqlitedb.Target[c.Store](s, c.Apply), nil
	})
}
