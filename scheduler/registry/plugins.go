package registry

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	fwk "k8s.io/kube-scheduler/framework"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"
	schedconfigv1 "k8s.io/kubernetes/pkg/scheduler/apis/config/v1"
	schedcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
)

// PluginInfo describes a plugin that the scheduler binary knows.
type PluginInfo struct {
	// Name is the plugin name used in KubeSchedulerConfiguration.
	Name string
	// ExtensionPoints are the extension points that the plugin implements, named like the
	// fields of KubeSchedulerProfile.plugins (capitalized, e.g. "PreFilter"), in the order of
	// that struct. multiPoint enables the plugin at exactly these.
	ExtensionPoints []string
	// OutOfTree is true for the plugins compiled in besides kube-scheduler's own.
	OutOfTree bool
}

// extensionPoints are the extension points of a profile with the interface a plugin implements
// to run at each; the framework matches them the same way when it expands multiPoint.
var extensionPoints = []struct {
	name  string
	iface reflect.Type
}{
	{"PreEnqueue", reflect.TypeFor[fwk.PreEnqueuePlugin]()},
	{"QueueSort", reflect.TypeFor[fwk.QueueSortPlugin]()},
	{"PreFilter", reflect.TypeFor[fwk.PreFilterPlugin]()},
	{"Filter", reflect.TypeFor[fwk.FilterPlugin]()},
	{"PostFilter", reflect.TypeFor[fwk.PostFilterPlugin]()},
	{"PreScore", reflect.TypeFor[fwk.PreScorePlugin]()},
	{"Score", reflect.TypeFor[fwk.ScorePlugin]()},
	{"Reserve", reflect.TypeFor[fwk.ReservePlugin]()},
	{"Permit", reflect.TypeFor[fwk.PermitPlugin]()},
	{"PreBind", reflect.TypeFor[fwk.PreBindPlugin]()},
	{"Bind", reflect.TypeFor[fwk.BindPlugin]()},
	{"PostBind", reflect.TypeFor[fwk.PostBindPlugin]()},
	{"PlacementGenerate", reflect.TypeFor[fwk.PlacementGeneratePlugin]()},
	{"PlacementScore", reflect.TypeFor[fwk.PlacementScorePlugin]()},
	{"PodGroupPostFilter", reflect.TypeFor[fwk.PodGroupPostFilterPlugin]()},
}

// Plugins lists every plugin of the scheduler binary, in-tree and out-of-tree, sorted by name,
// with the extension points each implements.
//
// In-tree plugins are only reachable through their factories, so each is built, with its
// default args and against a handle backed by a fake clientset, as kube-scheduler would
// build it for a profile with no pluginConfig; the enabled feature gates therefore count, as
// they do in the scheduler. Out-of-tree plugins are inspected through a zero value of their
// type instead, because some need args that have no usable default (NodePool's nodeSelector).
func Plugins(ctx context.Context) ([]PluginInfo, error) {
	// The handle (its metrics recorder) and plugins may run goroutines until ctx is done.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	handle, err := NewHandle(ctx)
	if err != nil {
		return nil, err
	}

	var infos []PluginInfo
	var errs []error
	for name, factory := range plugins.NewInTreeRegistry() {
		p, err := buildWithDefaultArgs(ctx, name, factory, handle)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		infos = append(infos, PluginInfo{Name: name, ExtensionPoints: extensionPointsOf(p)})
	}
	for _, p := range current() {
		infos = append(infos, PluginInfo{Name: p.Name, ExtensionPoints: extensionPointsOf(p.Type), OutOfTree: true})
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	slices.SortFunc(infos, func(a, b PluginInfo) int { return strings.Compare(a.Name, b.Name) })
	return infos, nil
}

// buildWithDefaultArgs builds an in-tree plugin with the defaults of its <Name>Args kind, or
// with nil args when it has none, as kube-scheduler's config defaulting does.
func buildWithDefaultArgs(ctx context.Context, name string, factory frameworkruntime.PluginFactory, handle fwk.Handle) (fwk.Plugin, error) {
	var args runtime.Object
	versioned, err := scheme.Scheme.New(schedconfigv1.SchemeGroupVersion.WithKind(name + "Args"))
	switch {
	case runtime.IsNotRegisteredError(err):
	case err != nil:
		return nil, fmt.Errorf("creating args of plugin %q: %w", name, err)
	default:
		scheme.Scheme.Default(versioned)
		if args, err = scheme.Scheme.ConvertToVersion(versioned, schedconfig.SchemeGroupVersion); err != nil {
			return nil, fmt.Errorf("converting default args of plugin %q: %w", name, err)
		}
	}
	p, err := factory(ctx, args, handle)
	if err != nil {
		return nil, fmt.Errorf("building plugin %q: %w", name, err)
	}
	return p, nil
}

// ExtensionPointNames names the extension points this package knows, in the order of
// KubeSchedulerProfile.plugins (multiPoint, which is not one, left out). A test ties them to
// upstream's configv1.Plugins.
func ExtensionPointNames() []string {
	names := make([]string, 0, len(extensionPoints))
	for _, ep := range extensionPoints {
		names = append(names, ep.name)
	}
	return names
}

func extensionPointsOf(p fwk.Plugin) []string {
	var names []string
	t := reflect.TypeOf(p)
	for _, ep := range extensionPoints {
		if t.Implements(ep.iface) {
			names = append(names, ep.name)
		}
	}
	return names
}

// NewHandle returns a framework handle backed by a fake clientset and an empty snapshot, to build
// plugins outside a running scheduler. What it starts runs until ctx is done.
func NewHandle(ctx context.Context) (fwk.Handle, error) {
	client := fake.NewClientset()
	handle, err := frameworkruntime.NewFramework(ctx, nil, nil,
		frameworkruntime.WithClientSet(client),
		frameworkruntime.WithInformerFactory(informers.NewSharedInformerFactory(client, 0)),
		frameworkruntime.WithSnapshotSharedLister(schedcache.NewEmptySnapshot()),
	)
	if err != nil {
		return nil, fmt.Errorf("creating a framework handle: %w", err)
	}
	return handle, nil
}
