package registry

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins"

	"github.com/schedops/scheduler-profile-operator/scheduler/apis/config"
	"github.com/schedops/scheduler-profile-operator/scheduler/plugins/nodelabelpreference"
	"github.com/schedops/scheduler-profile-operator/scheduler/plugins/nodepool"
)

// validArgs are args that each out-of-tree plugin accepts.
var validArgs = map[string]runtime.Object{
	nodepool.Name: &config.NodePoolArgs{NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"pool": "a"}}},
	nodelabelpreference.Name: &config.NodeLabelPreferenceArgs{Preferences: []config.LabelPreference{
		{Key: "ssd", Weight: 1},
	}},
}

func TestOutOfTreeMergesIntoInTree(t *testing.T) {
	r := plugins.NewInTreeRegistry()
	if err := r.Merge(OutOfTree()); err != nil {
		t.Fatalf("an out-of-tree plugin clashes with an in-tree one: %v", err)
	}
}

// TestZeroValuesMatchFactories guards Plugins, which reads the extension points of an
// out-of-tree plugin from its zero value: that must be of the type that New builds.
func TestZeroValuesMatchFactories(t *testing.T) {
	for _, p := range outOfTree {
		t.Run(p.name, func(t *testing.T) {
			args, ok := validArgs[p.name]
			if !ok {
				t.Fatalf("no valid args for plugin %q in this test", p.name)
			}
			_, ctx := ktesting.NewTestContext(t)
			built, err := p.factory(ctx, args, nil)
			if err != nil {
				t.Fatalf("building plugin: %v", err)
			}
			if got, want := reflect.TypeOf(built), reflect.TypeOf(p.zero); got != want {
				t.Errorf("New builds a %v, zero value is a %v", got, want)
			}
			if built.Name() != p.name {
				t.Errorf("built plugin is named %q, registered as %q", built.Name(), p.name)
			}
		})
	}
}

func TestPlugins(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	infos, err := Plugins(ctx)
	if err != nil {
		t.Fatalf("Plugins: %v", err)
	}

	if !slices.IsSortedFunc(infos, func(a, b PluginInfo) int { return strings.Compare(a.Name, b.Name) }) {
		t.Errorf("plugins are not sorted by name")
	}
	if got, want := len(infos), len(plugins.NewInTreeRegistry())+len(OutOfTree()); got != want {
		t.Errorf("got %d plugins, want %d (in-tree and out-of-tree)", got, want)
	}

	byName := map[string]PluginInfo{}
	for _, info := range infos {
		byName[info.Name] = info
	}
	tests := []PluginInfo{
		{Name: "NodeResourcesFit", ExtensionPoints: []string{"PreFilter", "Filter", "PreScore", "Score", "PlacementScore"}},
		{Name: "PrioritySort", ExtensionPoints: []string{"QueueSort"}},
		{Name: "DefaultBinder", ExtensionPoints: []string{"Bind"}},
		{Name: "VolumeBinding", ExtensionPoints: []string{"PreFilter", "Filter", "PreScore", "Score", "Reserve", "PreBind"}},
		{Name: nodepool.Name, ExtensionPoints: []string{"PreFilter", "Filter"}, OutOfTree: true},
		{Name: nodelabelpreference.Name, ExtensionPoints: []string{"PreScore", "Score"}, OutOfTree: true},
	}
	for _, want := range tests {
		t.Run(want.Name, func(t *testing.T) {
			if diff := cmp.Diff(want, byName[want.Name]); diff != "" {
				t.Errorf("plugin info (-want +got):\n%s", diff)
			}
		})
	}
}
