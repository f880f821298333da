package conformance

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/storecheck/storecheck/adapters"
	"github.com/storecheck/storecheck/fault/lossyfs"
	"github.com/storecheck/storecheck/internal/stores"
	"github.com/storecheck/storecheck/linearizability"
	"github.com/storecheck/storecheck/sim"
	"github.com/storecheck/storecheck/spec"
	c "github.com/storecheck/storecheck/spec/continuity"
	"github.com/storecheck/storecheck/spec/suite"
)

// Bad input is an error naming the field, never a panic: each config
// below is refused by Run with a *ConfigError of that field, and nothing
// runs.
func TestABadConfigIsAnErrorNamingTheField(t *testing.T) {
	ctx := context.Background()
	noFiles := InProcess(suite.Harness{Name: "nowhere", Continuity: func(context.Context, spec.OpenOptions) (c.Store, error) { return nil, nil }})
	for _, tc := range []struct {
		b       Backend
		cfg     Config
		field   string
		problem string
	}{
		{Reference(), Config{Stores: []string{"nope"}}, "Stores", `unknown store "nope"; accepted: continuity, runtime, client`},
		{Reference(), Config{Layers: []Layer{"everything"}}, "Layers", `unknown layer "everything"; accepted: spec, linearizability, sim`},
		{Reference(), Config{Seeds: Seeds(5, 1)}, "Seeds", "seeds 5..1: the range ends before it starts"},
		{Reference(), Config{Shard: Shard{I: 3, N: 2}}, "Shard", "shard 3/2: want i/n with 1 <= i <= n"},
		{Reference(), Config{Steps: -1}, "Steps", "must not be negative, got -1"},
		{Reference(), Config{Explore: "smart"}, "Explore", `explore "smart": want one of blind, guided`},
		{Reference(), Config{ReplyTimeout: -1}, "ReplyTimeout", "must not be negative, got -1ns"},
		{Reference(), Config{Withdraw: []string{"telepathy"}}, "Withdraw", `unknown capability "telepathy"`},
		{Backend{}, Config{}, "Backend", "no backend"},
		{noFiles, Config{Layers: []Layer{LayerSim}}, "Layers", "the backend nowhere declares neither files nor in_memory"},
		{Adapter(stores0()), Config{Stores: []string{"client"}}, "Stores", "the backend empty implements none of client"},
		{withPoints(map[string][]string{"continuity": {"upsert_continuity_record/after_commit", "frobnicate/after_commit"}}), Config{},
			"CrashPoints", `continuity crash point "frobnicate/after_commit": want <operation>/<place>`},
		{withPoints(map[string][]string{"continuity": {"upsert_continuity_record"}}), Config{}, "CrashPoints", `continuity crash point "upsert_continuity_record"`},
		{withPoints(map[string][]string{"runtime": {"x/y"}}), Config{}, "CrashPoints", `crash points of "runtime", a store the harness does not open`},
	} {
		rep, err := Run(ctx, tc.b, tc.cfg)
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Field != tc.field || !strings.HasPrefix(ce.Problem, tc.problem) {
			t.Errorf("%+v: %v, want a ConfigError of %s: %s", tc.cfg, err, tc.field, tc.problem)
			continue
		}
		if !strings.Contains(err.Error(), tc.field+": ") || len(rep.Checks) > 0 {
			t.Errorf("%+v: %q does not name the field, or %d checks ran", tc.cfg, err, len(rep.Checks))
		}
	}
	if _, err := Replay(ctx, Reference(), sim.Schedule{Store: "nope"}, Config{}); !isConfigError(err, "Schedule") {
		t.Errorf("a schedule of no store: %v", err)
	}
	if err := Serve(ctx, Program("x"), strings.NewReader(""), nil, nil); !isConfigError(err, "Backend") {
		t.Errorf("serving a program: %v", err)
	}
}

func isConfigError(err error, field string) bool {
	var ce *ConfigError
	return errors.As(err, &ce) && ce.Field == field
}

// withPoints is a harness of the reference's continuity store declaring
// points.
func withPoints(points map[string][]string) Backend {
	h := suite.HarnessOf(stores.Reference())
	h.Runtime, h.Client, h.CrashPoints = nil, nil, points
	return InProcess(h)
}

// stores0 is a backend of no store.
func stores0() adapters.Driver {
	return adapters.InProcess(adapters.Hello{Name: "empty", Capabilities: adapters.Capabilities{Capabilities: spec.Capabilities{InMemory: true}}})
}

// Defaults are the libraries' own defaults where a library applies one, so
// a Go caller, go test and the command line get the same run.
func TestDefaultsAreTheLibraries(t *testing.T) {
	d, lin, sp := Defaults(), linearizability.Config{}.WithDefaults(), sim.DefaultParams()
	for name, got := range map[string][2]int{"Ops": {d.Ops, lin.Ops}, "Clients": {d.Clients, lin.Clients}, "Handles": {d.Handles, lin.Handles},
		"Steps": {d.Steps, sp.Steps}, "Processes": {d.Processes, sp.Processes}, "Clients of a schedule": {d.Clients, sp.Clients}} {
		if got[0] != got[1] {
			t.Errorf("%s defaults to %d, the library to %d", name, got[0], got[1])
		}
	}
	if d.ReplyTimeout != adapters.DefaultTimeout || (Config{}).WithDefaults().ReplyTimeout != d.ReplyTimeout {
		t.Errorf("the reply timeout defaults to %v, the adapter to %v", d.ReplyTimeout, adapters.DefaultTimeout)
	}
	if got := (Config{}).WithDefaults(); got.Ops != d.Ops || got.Steps != d.Steps || got.ReportDir != d.ReportDir || len(got.Layers) != len(Layers) {
		t.Errorf("WithDefaults of the zero config: %+v", got)
	}
	if (Config{}).SeedsOf(LayerSim) != sim.DefaultSeeds || (Config{}).SeedsOf(LayerLinearizability) != (SeedRange{First: 1, Last: 1}) {
		t.Error("the layers' default seeds are not the default sweep and seed 1")
	}
}

// The reproduce lines: storecheck's carry every flag that changes the run
// and the backend after "--"; a go test line narrows -run to the check's
// subtest and carries the seed and the flags given.
func TestReproduceLines(t *testing.T) {
	t.Setenv("STORECHECK_TEST_RACY", "1 2")
	cfg := Config{Steps: 60, ReplyTimeout: Defaults().ReplyTimeout * 4, CheckTimeout: Defaults().CheckTimeout}
	ln := cfg.commandLines([]string{"./my backend", "--flag"})
	for _, tc := range []struct{ got, want string }{
		{ln.spec("continuity", 3, "continuity save it's fenced"), `storecheck run --store continuity --layers spec --seed 3 --spec 'continuity save it'\''s fenced' --reply-timeout 20s -- './my backend' --flag`},
		{goTestLines{test: "TestX", pkg: "example.com/mystore", given: map[string]string{"spec": "other", "steps": "60"}}.spec("continuity", 4, "continuity save a b"),
			"go test -run '^TestX$/^spec$/^continuity$' example.com/mystore -storecheck.seed 4 -storecheck.spec 'continuity save a b'"},
		{configLines{Config{}.WithDefaults()}.spec("client", 2, "client x"),
			`conformance.Run with conformance.Config{Stores: []string{"client"}, Layers: []conformance.Layer{"spec"}, Seeds: conformance.Seed(2), Spec: "client x"}`},
		{ln.linearize("runtime", 4), "storecheck linearize --clients 8 --ops 2000 --handles 2 --reply-timeout 20s --store runtime --seed 4 -- './my backend' --flag"},
		{ln.sim("client", 5), "storecheck sim --steps 60 --reply-timeout 20s --store client --seed 5 -- './my backend' --flag"},
		{ln.replay("out/s 1/schedule.json"), "storecheck replay --reply-timeout 20s 'out/s 1/schedule.json' -- './my backend' --flag"},
		{(Config{}).commandLines(nil).sim("continuity", 1), "storecheck sim --store continuity --seed 1"},
		{goTestLines{test: "TestX/racy", pkg: "example.com/mystore", given: map[string]string{"steps": "60", "ops": "9", "power-cuts": "false", "workers": "3"}}.sim("continuity", 17),
			"go test -run '^TestX$/^racy$/^sim$/^continuity$' example.com/mystore -storecheck.seed 17 -storecheck.steps 60 -storecheck.power-cuts=false"},
		{goTestLines{test: "TestX", pkg: "example.com/mystore", given: map[string]string{"steps": "60", "ops": "9"}, env: []string{"STORECHECK_TEST_RACY", "STORECHECK_TEST_UNSET"}}.linearize("continuity", 2),
			"STORECHECK_TEST_RACY='1 2' go test -run '^TestX$/^linearizability$/^continuity$' example.com/mystore -storecheck.seed 2 -storecheck.ops 9"},
		{Config{Env: []string{"STORECHECK_TEST_RACY"}}.commandLines([]string{"./b"}).sim("client", 5), "STORECHECK_TEST_RACY='1 2' storecheck sim --store client --seed 5 -- ./b"},
		// A program's own environment (WithEnv) wins over this process's, as
		// it did when it ran.
		{Config{Env: []string{"STORECHECK_TEST_RACY"}}.commandLines([]string{"./b"}, "STORECHECK_TEST_RACY=3", "MODE=a b").sim("client", 5),
			"STORECHECK_TEST_RACY=3 MODE='a b' storecheck sim --store client --seed 5 -- ./b"},
		// The re-check of a saved history: the check's own knobs, no backend,
		// no environment; under go test, the kit's command through go run.
		{Config{Env: []string{"STORECHECK_TEST_RACY"}}.commandLines([]string{"./b"}).recheck("out/h 1.json"), "storecheck check 'out/h 1.json'"},
		{Config{CheckTimeout: time.Hour}.commandLines(nil).recheck("h.json"), "storecheck check --check-timeout 1h0m0s h.json"},
		{goTestLines{test: "TestX", pkg: "p", given: map[string]string{"check-timeout": "2m", "ops": "9"}, env: []string{"STORECHECK_TEST_RACY"}}.recheck("/tmp/h.json"),
			"go run github.com/storecheck/storecheck/cmd/storecheck check --check-timeout 2m0s /tmp/h.json"},
		{configLines{Config{}.WithDefaults()}.recheck("h.json"), "storecheck check h.json"},
		{configLines{Config{Steps: 60}.WithDefaults()}.sim("continuity", 17),
			`conformance.Run with conformance.Config{Stores: []string{"continuity"}, Layers: []conformance.Layer{"sim"}, Seeds: conformance.Seed(17), Steps: 60}`},
		{configLines{Config{Duration: 90 * time.Second, ReplyTimeout: time.Hour}.WithDefaults()}.linearize("continuity", 1),
			`conformance.Run with conformance.Config{Stores: []string{"continuity"}, Layers: []conformance.Layer{"linearizability"}, Seeds: conformance.Seed(1), Duration: 90 * time.Second}`},
	} {
		if tc.got != tc.want {
			t.Errorf("got  %s\nwant %s", tc.got, tc.want)
		}
	}
	if (goTestLines{}).replay("x") != "" {
		t.Error("a go test line replays a schedule the command cannot reach")
	}
	// The environment the kit itself reads is carried too.
	t.Setenv(lossyfs.DeviceEnv, "/nowhere/fuse")
	if got, want := (Config{}).commandLines(nil).sim("continuity", 1), "STORECHECK_FUSE_DEVICE=/nowhere/fuse storecheck sim --store continuity --seed 1"; got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}
