package profile

import (
	"testing"

	"github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/internal/testutil/fifosort"
)

func entryWithPlugins(t *testing.T, name string, plugins *v1alpha1.Plugins) Profile {
	t.Helper()
	p := &v1alpha1.SchedulerProfile{}
	p.Name = name
	p.Spec.Plugins = plugins
	entry, err := RenderProfile(p)
	if err != nil {
		t.Fatal(err)
	}
	return entry
}

func pluginList(names ...string) []v1alpha1.Plugin {
	var out []v1alpha1.Plugin
	for _, n := range names {
		out = append(out, v1alpha1.Plugin{Name: n})
	}
	return out
}

// TestCanonicalQueueSort: every spelling of one queue sort renders alike, so that members of one
// Scheduler that sort their queues alike pass upstream's check of the whole process, which
// compares the queueSort sets as written; queue sorts that really differ still differ.
func TestCanonicalQueueSort(t *testing.T) {
	fifosort.Use(t)
	qs := func(enabled, disabled []v1alpha1.Plugin) *v1alpha1.Plugins {
		return &v1alpha1.Plugins{QueueSort: v1alpha1.PluginSet{Enabled: enabled, Disabled: disabled}}
	}
	tests := []struct {
		name    string
		plugins *v1alpha1.Plugins
		// sameAs is the spelling it must render like, nil for nothing written.
		sameAs *v1alpha1.Plugins
		// differs is set when the entry must still conflict with the default queue sort.
		differs bool
	}{
		{name: "nothing written"},
		{name: "PrioritySort with all disabled", plugins: qs(pluginList("PrioritySort"), pluginList("*"))},
		{name: "PrioritySort enabled", plugins: qs(pluginList("PrioritySort"), nil)},
		{name: "PrioritySort disabled and enabled", plugins: qs(pluginList("PrioritySort"), pluginList("PrioritySort"))},
		{name: "a score change only keeps its plugins", plugins: &v1alpha1.Plugins{Score: v1alpha1.PluginSet{Disabled: pluginList("ImageLocality")}},
			sameAs: &v1alpha1.Plugins{Score: v1alpha1.PluginSet{Disabled: pluginList("ImageLocality")}}},
		{name: "another plugin, PrioritySort disabled", plugins: qs(pluginList(fifosort.Name), pluginList("PrioritySort")),
			sameAs: qs(pluginList(fifosort.Name), pluginList("*")), differs: true},
		{name: "another plugin through multiPoint", plugins: &v1alpha1.Plugins{
			MultiPoint: v1alpha1.PluginSet{Enabled: pluginList(fifosort.Name)},
			QueueSort:  v1alpha1.PluginSet{Disabled: pluginList("PrioritySort")},
		}, sameAs: &v1alpha1.Plugins{
			MultiPoint: v1alpha1.PluginSet{Enabled: pluginList(fifosort.Name)},
			QueueSort:  v1alpha1.PluginSet{Enabled: pluginList(fifosort.Name), Disabled: pluginList("*")},
		}, differs: true},
	}
	plain := entryWithPlugins(t, "plain", nil)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := CanonicalQueueSort(entryWithPlugins(t, "p", tc.plugins), nil)
			want := entryWithPlugins(t, "p", tc.sameAs)
			if got.Fingerprint() != want.Fingerprint() {
				t.Errorf("CanonicalQueueSort wrote %s, want %s", got.QueueSortSpelling(), want.QueueSortSpelling())
			}
			msg, err := QueueSortConflict(plain, got, nil)
			if err != nil {
				t.Fatal(err)
			}
			if differs := msg != ""; differs != tc.differs {
				t.Errorf("conflict with the default queue sort: %q, want a conflict: %v", msg, tc.differs)
			}
		})
	}
	t.Run("an entry that does not build is left as it is", func(t *testing.T) {
		broken := entryWithPlugins(t, "p", qs(pluginList("NodeAffinity"), pluginList("*")))
		if got := CanonicalQueueSort(broken, nil); got.Fingerprint() != broken.Fingerprint() {
			t.Errorf("CanonicalQueueSort rewrote an entry that does not build: %s", got.QueueSortSpelling())
		}
	})
}
