package profile

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/schedops/scheduler-profile-operator/api/v1alpha1"
)

// sharedMembers are the golden inputs that one shared scheduler serves in the tests below.
var sharedMembers = []string{"binpack", "nodepool", "spread"}

func renderMembers(t *testing.T, names ...string) []Profile {
	t.Helper()
	var out []Profile
	for _, name := range names {
		prof, err := RenderProfile(readProfile(t, filepath.Join("testdata", name+".yaml")))
		if err != nil {
			t.Fatalf("RenderProfile(%s): %v", name, err)
		}
		out = append(out, prof)
	}
	return out
}

var sharedProcess = Process{Namespace: testNamespace, LeaseName: LeasePrefix + "batch.scheduler"}

// TestRenderProcessGolden renders one configuration with three profiles and compares it with
// testdata/shared/config.golden; the configuration must pass the checks of a whole process.
func TestRenderProcessGolden(t *testing.T) {
	cfg, err := RenderProcess(sharedProcess, renderMembers(t, sharedMembers...))
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, filepath.Join("testdata", "shared", "config.golden"), cfg.YAML)
	if err := ValidateProcess(cfg.YAML, nil); err != nil {
		t.Errorf("the shared configuration is invalid: %v", err)
	}
	again, err := RenderProcess(sharedProcess, renderMembers(t, sharedMembers...))
	if err != nil {
		t.Fatal(err)
	}
	if again.Hash != cfg.Hash {
		t.Errorf("the same members gave hashes %s and %s", cfg.Hash, again.Hash)
	}
}

// TestProfilesInReadsBackEntries reads the entries of a rendered configuration back and renders
// them again: the bytes, and so the hash, must not change, or keeping a member's last good entry
// would roll the scheduler.
func TestProfilesInReadsBackEntries(t *testing.T) {
	members := renderMembers(t, sharedMembers...)
	cfg, err := RenderProcess(sharedProcess, members)
	if err != nil {
		t.Fatal(err)
	}
	read, err := ProfilesIn(cfg.YAML)
	if err != nil {
		t.Fatal(err)
	}
	if len(read) != len(members) {
		t.Fatalf("read %d profiles back, want %d", len(read), len(members))
	}
	var again []Profile
	for _, m := range members {
		p, ok := read[m.SchedulerName]
		if !ok {
			t.Fatalf("profile %s not read back", m.SchedulerName)
		}
		again = append(again, p)
	}
	cfg2, err := RenderProcess(sharedProcess, again)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(cfg.YAML), string(cfg2.YAML)); diff != "" {
		t.Errorf("re-rendering the entries read back changed the configuration (-first +again):\n%s", diff)
	}
}

func TestQueueSortConflict(t *testing.T) {
	disabledSort := &v1alpha1.SchedulerProfile{}
	disabledSort.Name = "other-sort"
	// Upstream compares the queueSort sets as written: an explicit PrioritySort differs from the
	// default one, although the same plugin sorts the queue.
	disabledSort.Spec.Plugins = &v1alpha1.Plugins{QueueSort: v1alpha1.PluginSet{
		Disabled: []v1alpha1.Plugin{{Name: "*"}},
		Enabled:  []v1alpha1.Plugin{{Name: "PrioritySort"}},
	}}
	other, err := RenderProfile(disabledSort)
	if err != nil {
		t.Fatal(err)
	}
	members := renderMembers(t, "binpack", "spread")
	tests := []struct {
		name     string
		first, p Profile
		want     string
	}{
		{name: "default queue sort on both", first: members[0], p: members[1]},
		{name: "an explicit queue sort", first: members[0], p: other, want: "spec.plugins.queueSort"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := QueueSortConflict(tc.first, tc.p, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == "" && got != "" {
				t.Fatalf("QueueSortConflict = %q, want no conflict", got)
			}
			if !strings.Contains(got, tc.want) {
				t.Fatalf("QueueSortConflict = %q, want a message with %q", got, tc.want)
			}
		})
	}
}

// TestConfigOnLease: the same configuration on another lease differs in the lease alone, and
// going back to the first lease gives the first bytes again (a held scheduler's template keeps
// the ConfigMap it runs).
func TestConfigOnLease(t *testing.T) {
	cfg, err := RenderProcess(sharedProcess, renderMembers(t, sharedMembers...))
	if err != nil {
		t.Fatal(err)
	}
	legacy, err := cfg.OnLease("batch.scheduler")
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(string(cfg.YAML), "resourceName: "+sharedProcess.LeaseName+"\n", "resourceName: batch.scheduler\n", 1)
	if diff := cmp.Diff(want, string(legacy.YAML)); diff != "" {
		t.Errorf("the configuration on the legacy lease (-want +got):\n%s", diff)
	}
	if legacy.Hash == cfg.Hash {
		t.Errorf("both leases have the hash %s", cfg.Hash)
	}
	back, err := legacy.OnLease(sharedProcess.LeaseName)
	if err != nil {
		t.Fatal(err)
	}
	if back.Hash != cfg.Hash || string(back.YAML) != string(cfg.YAML) {
		t.Errorf("back on %s: hash %s, want %s", sharedProcess.LeaseName, back.Hash, cfg.Hash)
	}
	if _, err := (&Config{Hash: "abc"}).OnLease("x"); err == nil {
		t.Error("a configuration not rendered from profiles was rendered on another lease")
	}
}
