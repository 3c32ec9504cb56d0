package profile

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"

	"github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/ with the current output")

// testNamespace is the operator namespace the golden files are rendered for.
const testNamespace = "scheduler-profile-operator-system"

// TestRenderGolden renders every testdata/*.yaml profile, compares it with testdata/*.golden,
// and checks that each rendered configuration passes Validate.
func TestRenderGolden(t *testing.T) {
	inputs, err := filepath.Glob(filepath.Join("testdata", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(inputs) < 8 {
		t.Fatalf("want at least 8 golden profiles, found %d", len(inputs))
	}
	for _, in := range inputs {
		name := strings.TrimSuffix(filepath.Base(in), ".yaml")
		t.Run(name, func(t *testing.T) {
			p := readProfile(t, in)
			cfg, err := Render(p, Settings{Namespace: testNamespace})
			if err != nil {
				t.Fatalf("Render: %v", err)
			}
			checkGolden(t, filepath.Join("testdata", name+".golden"), cfg.YAML)
			if errs := Validate(cfg.YAML); len(errs) > 0 {
				t.Errorf("the rendered config is invalid: %v", errs.ToAggregate())
			}
		})
	}
}

func TestRenderLeaderElection(t *testing.T) {
	tests := []struct {
		name       string
		profile    *v1alpha1.SchedulerProfile
		wantLease  string
		wantSchedN string
	}{
		// One replica elects too: during a rollout the old and the new pod overlap.
		{name: "one replica", profile: testutil.MakeProfile("binpack").Obj(), wantLease: "schedops-binpack", wantSchedN: "binpack"},
		{name: "two replicas", profile: testutil.MakeProfile("binpack").Replicas(2).Obj(), wantLease: "schedops-binpack", wantSchedN: "binpack"},
		{name: "explicit scheduler name", profile: testutil.MakeProfile("p").SchedulerName("team-a").Obj(), wantLease: "schedops-team-a", wantSchedN: "team-a"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := Render(tc.profile, Settings{Namespace: "ops"})
			if err != nil {
				t.Fatal(err)
			}
			var doc document
			if err := yaml.UnmarshalStrict(cfg.YAML, &doc); err != nil {
				t.Fatal(err)
			}
			want := leaderElection{LeaderElect: true, ResourceLock: "leases", ResourceName: tc.wantLease, ResourceNamespace: "ops", RetryPeriod: "1s"}
			if diff := cmp.Diff(want, doc.LeaderElection); diff != "" {
				t.Errorf("leader election (-want +got):\n%s", diff)
			}
			if cfg.SchedulerName != tc.wantSchedN || doc.Profiles[0].SchedulerName != tc.wantSchedN {
				t.Errorf("scheduler name = %q (file %q), want %q", cfg.SchedulerName, doc.Profiles[0].SchedulerName, tc.wantSchedN)
			}
		})
	}
}

// TestRenderDeterministic checks that the order of keys in free-form args does not change the
// bytes or the hash, and that a real change does.
func TestRenderDeterministic(t *testing.T) {
	a := testutil.MakeProfile("p").PluginConfig("NodeResourcesFit", `{"scoringStrategy":{"type":"MostAllocated","resources":[{"name":"cpu","weight":1}]}}`).Obj()
	b := testutil.MakeProfile("p").PluginConfig("NodeResourcesFit", `{"scoringStrategy":{"resources":[{"weight":1,"name":"cpu"}],"type":"MostAllocated"}}`).Obj()
	c := testutil.MakeProfile("p").PluginConfig("NodeResourcesFit", `{"scoringStrategy":{"type":"LeastAllocated","resources":[{"name":"cpu","weight":1}]}}`).Obj()
	ra, rb, rc := mustRender(t, a), mustRender(t, b), mustRender(t, c)
	if !bytes.Equal(ra.YAML, rb.YAML) || ra.Hash != rb.Hash {
		t.Errorf("args with another key order rendered differently:\n%s\n---\n%s", ra.YAML, rb.YAML)
	}
	if ra.Hash == rc.Hash {
		t.Errorf("a different scoring strategy kept the hash %s", ra.Hash)
	}
	if len(ra.Hash) != HashLength {
		t.Errorf("hash %q has %d characters, want %d", ra.Hash, len(ra.Hash), HashLength)
	}
}

func TestRenderNeedsNamespace(t *testing.T) {
	if _, err := Render(testutil.MakeProfile("p").Obj(), Settings{}); err == nil {
		t.Error("Render without a lease namespace succeeded")
	}
}

func mustRender(t testing.TB, p *v1alpha1.SchedulerProfile) *Config {
	t.Helper()
	cfg, err := Render(p, Settings{Namespace: testNamespace})
	if err != nil {
		t.Fatalf("Render: %v", err)
	}
	return cfg
}

func readProfile(t *testing.T, path string) *v1alpha1.SchedulerProfile {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	p := &v1alpha1.SchedulerProfile{}
	if err := yaml.UnmarshalStrict(data, p); err != nil {
		t.Fatalf("parsing %s: %v", path, err)
	}
	return p
}

// checkGolden compares rendered bytes with a golden file; -update rewrites the file instead.
func checkGolden(t *testing.T, golden string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("reading golden file (run go test -update to create it): %v", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("rendered config differs from %s (-want +got):\n%s", golden, diff)
	}
}
