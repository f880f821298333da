package sim

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/storecheck/storecheck/adapters"
	"github.com/storecheck/storecheck/internal/bugs"
	"github.com/storecheck/storecheck/internal/stores"
	"github.com/storecheck/storecheck/linearizability"
	"github.com/storecheck/storecheck/linearizability/model"
	refclient "github.com/storecheck/storecheck/reference/client"
	"github.com/storecheck/storecheck/spec"
	cli "github.com/storecheck/storecheck/spec/client"
)

var clientSubject = Subject{
	Model:       model.Client{},
	NewWorkload: linearizability.DefaultClientWorkload.New,
	RareEvents:  append(slices.Clone(model.ClientEvents), EventCrashInside, EventAnswerLost, EventKill),
}

// otherClientReadings is the reference answering as a backend of other
// readings of the client seed's silences (linearizability.OtherClientReadings).
func otherClientReadings() Launcher {
	b := adapters.InProcess(adapters.Hello{Name: "other readings"}, adapters.LocalStore{Contract: cli.Contract,
		Open: func(ctx context.Context, o spec.OpenOptions) (adapters.Target, error) {
			o.Clock = linearizability.SecondsClock(o.Clock)
			t, err := refclient.OpenTarget(ctx, o)
			if err != nil {
				return nil, err
			}
			return linearizability.OtherClientReadings(t), nil
		}})
	return InProcess(b, cli.StoreName)
}

// Over the default sweep neither the client reference nor a backend of
// other readings (event numbers by tens, another preview, whole seconds) is
// flagged, crashes and kills included; and the reference's runs reach every
// rare client event.
func TestClientSweepFlagsNoReadingTheSeedAllows(t *testing.T) {
	for _, tc := range []struct {
		name string
		b    Launcher
	}{
		{"reference", InProcess(stores.Reference(), cli.StoreName)},
		{"other readings", otherClientReadings()},
	} {
		cov := Coverage{}
		err := Sweep(context.Background(), clientSubject, tc.b, DefaultSeeds.Seeds(Shard{}), Params{}, 0, ScratchDir(),
			func(r Result) {
				if r.Failure != nil {
					t.Errorf("%s, seed %d: flagged: %v\n%s", tc.name, r.Schedule.Seed, r.Failure, strings.Join(r.Trace[max(0, len(r.Trace)-12):], "\n"))
				}
				if r.Inconclusive {
					t.Errorf("%s, seed %d: inconclusive", tc.name, r.Schedule.Seed)
				}
				cov.Add(r)
			}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if missing := cov.Missing(clientSubject.RareEvents); tc.name == "reference" && len(missing) > 0 {
			t.Errorf("the default sweep never reached: %s", strings.Join(missing, "; "))
		}
	}
}

// A settled intent that comes back to life is caught by the simulator, and
// shrunk to a schedule the reference passes.
func TestClientSettledIntentRevivesIsFoundAndShrunk(t *testing.T) {
	ctx := context.Background()
	backend := InProcess(stores.Backend(stores.Options{Bug: bugs.ClientSettledIntentRevives}), cli.StoreName)
	for _, seed := range DefaultSeeds.Seeds(Shard{}) {
		res, err := Explore(ctx, clientSubject, backend, seed, Params{}, ScratchDir())
		if err != nil {
			t.Fatal(err)
		}
		if res.Failure == nil {
			continue
		}
		small, err := Shrink(ctx, clientSubject, backend, res, ScratchDir(), 2000)
		if err != nil {
			t.Fatal(err)
		}
		if small.Failure.Signature() != res.Failure.Signature() || len(small.Schedule.Steps) > 20 {
			t.Fatalf("seed %d shrunk to %d steps, %v (from %v)", seed, len(small.Schedule.Steps), small.Failure, res.Failure)
		}
		ok, err := Run(ctx, clientSubject, InProcess(stores.Reference(), cli.StoreName), small.Schedule, ScratchDir())
		if err != nil || ok.Failure != nil {
			t.Fatalf("the reference fails the shrunk schedule: %v %v", err, ok.Failure)
		}
		return
	}
	t.Fatal("the default sweep never found the bug")
}
