package registry

import (
	"context"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2/ktesting"
	fwk "k8s.io/kube-scheduler/framework"
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
	for _, p := range Stock() {
		t.Run(p.Name, func(t *testing.T) {
			args, ok := validArgs[p.Name]
			if !ok {
				t.Fatalf("no valid args for plugin %q in this test", p.Name)
			}
			_, ctx := ktesting.NewTestContext(t)
			built, err := p.New(ctx, args, nil)
			if err != nil {
				t.Fatalf("building plugin: %v", err)
			}
			if got, want := reflect.TypeOf(built), reflect.TypeOf(p.Type); got != want {
				t.Errorf("New builds a %v, zero value is a %v", got, want)
			}
			if built.Name() != p.Name {
				t.Errorf("built plugin is named %q, registered as %q", built.Name(), p.Name)
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

// filter is a plugin of a test's own, without args.
type filter struct{}

func (filter) Name() string { return "TestFilter" }
func (filter) Filter(context.Context, fwk.CycleState, *v1.Pod, fwk.NodeInfo) *fwk.Status {
	return nil
}

func newFilter(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) { return filter{}, nil }

// useStockAgain puts the stock plugins back in use when the test ends.
func useStockAgain(t *testing.T) {
	t.Cleanup(func() {
		if err := Use(Stock()); err != nil {
			t.Fatal(err)
		}
	})
}

func TestUse(t *testing.T) {
	useStockAgain(t)
	own := Plugin{Name: "TestFilter", New: newFilter, Type: filter{}}
	if err := Use([]Plugin{own}); err != nil {
		t.Fatalf("Use: %v", err)
	}
	if got, want := slices.Sorted(maps.Keys(OutOfTree())), []string{"TestFilter"}; !slices.Equal(got, want) {
		t.Errorf("out-of-tree plugins %v, want %v: Use replaces the stock plugins", got, want)
	}
	if _, ok := All()["NodeResourcesFit"]; !ok {
		t.Errorf("All lacks the in-tree plugins")
	}
	_, ctx := ktesting.NewTestContext(t)
	infos, err := Plugins(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var outOfTree []PluginInfo
	for _, info := range infos {
		if info.OutOfTree {
			outOfTree = append(outOfTree, info)
		}
	}
	if diff := cmp.Diff([]PluginInfo{{Name: "TestFilter", ExtensionPoints: []string{"Filter"}, OutOfTree: true}}, outOfTree); diff != "" {
		t.Errorf("out-of-tree plugins listed (-want +got):\n%s", diff)
	}
}

func TestUseRefuses(t *testing.T) {
	useStockAgain(t)
	own := Plugin{Name: "TestFilter", New: newFilter, Type: filter{}}
	tests := []struct {
		name    string
		set     []Plugin
		wantErr string
	}{
		{name: "no name", set: []Plugin{{New: newFilter, Type: filter{}}}, wantErr: "a plugin has no name"},
		{name: "no factory", set: []Plugin{{Name: "TestFilter", Type: filter{}}}, wantErr: `plugin "TestFilter" needs a factory and a zero value of its type`},
		{name: "twice", set: []Plugin{own, own}, wantErr: `plugin "TestFilter" is registered twice`},
		{name: "in-tree name", set: []Plugin{{Name: "NodeResourcesFit", New: newFilter, Type: filter{}}}, wantErr: `plugin "NodeResourcesFit" has the name of an in-tree plugin`},
		{
			name:    "args of another kind",
			set:     []Plugin{{Name: "TestFilter", New: newFilter, Type: filter{}, AddArgsToScheme: func(*runtime.Scheme) error { return nil }}},
			wantErr: `the args of plugin "TestFilter" must be registered as kubescheduler.config.k8s.io/v1, Kind=TestFilterArgs`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Use(tc.set)
			if err == nil || err.Error() != tc.wantErr {
				t.Fatalf("error %v, want %s", err, tc.wantErr)
			}
			if _, ok := OutOfTree()[nodepool.Name]; !ok {
				t.Errorf("a refused set replaced the plugins in use")
			}
		})
	}
}

// TestFirstLookUpsAtOnce: look-ups that all find no set in use yet, as the operator's parallel
// passes do on their first validation, take the stock plugins once, without racing on the
// schemes (a concurrent map write is fatal, and -race reports it).
func TestFirstLookUpsAtOnce(t *testing.T) {
	useStockAgain(t)
	mu.Lock()
	outOfTree = nil
	mu.Unlock()
	var wg sync.WaitGroup
	sizes := make([]int, 8)
	for i := range sizes {
		wg.Go(func() { sizes[i] = len(OutOfTree()) })
	}
	wg.Wait()
	for i, n := range sizes {
		if n != len(Stock()) {
			t.Errorf("Look-up %d found %d out-of-tree plugins, want the %d stock ones", i, n, len(Stock()))
		}
	}
}
