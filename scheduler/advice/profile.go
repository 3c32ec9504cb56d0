package advice

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	configv1 "k8s.io/kube-scheduler/config/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/features"
	schedulerconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
	"sigs.k8s.io/yaml"

	"github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/scheduler/profile"
	"github.com/schedops/scheduler-profile-operator/scheduler/registry"
)

// Profile is what the checks read of one rendered profile: the profile as written in the
// rendered file, the same profile after kube-scheduler's defaulting, and what the framework built
// from it runs at each extension point, with the score weights it really uses.
type Profile struct {
	// Written is the profile as the rendered file has it, before upstream's defaulting.
	Written configv1.KubeSchedulerProfile
	// Config is the profile after upstream's defaulting, as the scheduler reads it; its
	// pluginConfig holds the typed args of every enabled plugin.
	Config schedulerconfig.KubeSchedulerProfile
	// Extenders are the extenders of the scheduler process.
	Extenders []schedulerconfig.Extender
	// Running are the plugins the framework runs at each extension point, in order, with the
	// weights of the score plugins (the framework's ListPlugins).
	Running schedulerconfig.Plugins
	// Batching tells whether the OpportunisticBatching feature gate is on: the framework then
	// reuses one pod's scheduling cycle for the next pod with the same signature, if every plugin
	// at preFilter, filter, preScore and score signs pods.
	Batching bool
	// Unsigned are the plugins at preFilter, filter, preScore and score that do not sign pods,
	// by name, sorted.
	Unsigned []string
	// Unhinted are the plugins whose events have no QueueingHint, so that any such event moves
	// every pod they rejected back to the active queue, by name, sorted.
	Unhinted []string
	// Default is the profile that kube-scheduler runs without any plugin settings, with the same
	// feature gates: what the scheduler would otherwise do.
	Default *Profile
}

// Load reads the rendered configuration of one profile (as profile.Render or
// profile.RenderProcess with one profile writes it) with the feature gates its scheduler runs
// with, and builds its framework with the operator's plugin registry, as the scheduler will.
// The configuration must have passed profile.Validate.
func Load(data []byte, gates map[string]bool) (*Profile, error) {
	p, err := load(data, gates)
	if err != nil {
		return nil, err
	}
	if p.Default, err = loadDefault(gates); err != nil {
		return nil, err
	}
	return p, nil
}

func load(data []byte, gates map[string]bool) (*Profile, error) {
	var written struct {
		Profiles []configv1.KubeSchedulerProfile `json:"profiles"`
	}
	if err := yaml.Unmarshal(data, &written); err != nil {
		return nil, fmt.Errorf("reading the rendered profile: %w", err)
	}
	if len(written.Profiles) != 1 {
		return nil, fmt.Errorf("reading the rendered profile: %d profiles, want 1", len(written.Profiles))
	}
	p := &Profile{Written: written.Profiles[0]}
	var loadErr error
	err := profile.WithGates(gates, func() { loadErr = p.build(data) })
	if err != nil {
		return nil, err
	}
	return p, loadErr
}

// build decodes the configuration with upstream's defaults and builds its framework.
func (p *Profile) build(data []byte) error {
	cfg, err := profile.DecodeConfig(data)
	if err != nil {
		return err
	}
	if len(cfg.Profiles) != 1 {
		return fmt.Errorf("reading the rendered profile: %d profiles, want 1", len(cfg.Profiles))
	}
	p.Config, p.Extenders = cfg.Profiles[0], cfg.Extenders
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	sched, err := profile.NewFakeScheduler(ctx, cfg, nil)
	if err != nil {
		return fmt.Errorf("building the scheduler of the profile: %w", err)
	}
	fw := sched.Profiles[p.Config.SchedulerName]
	if fw == nil {
		return fmt.Errorf("building the scheduler of the profile: no framework for %q", p.Config.SchedulerName)
	}
	if running := fw.ListPlugins(); running != nil {
		p.Running = *running
	}
	p.Batching = utilfeature.DefaultFeatureGate.Enabled(features.OpportunisticBatching)
	p.Unhinted = unhinted(ctx, fw.EnqueueExtensions())
	p.Unsigned, err = p.unsigned(ctx)
	return err
}

// unhinted are the enqueue extensions with an event that has no QueueingHint: the framework's
// stand-in for a plugin without EventsToRegister registers every event so.
func unhinted(ctx context.Context, exts []fwk.EnqueueExtensions) []string {
	var out []string
	for _, ext := range exts {
		events, err := ext.EventsToRegister(ctx)
		if err != nil {
			continue
		}
		if slices.ContainsFunc(events, func(e fwk.ClusterEventWithHint) bool { return e.QueueingHintFn == nil }) {
			out = append(out, ext.Name())
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// unsigned builds each plugin that runs at an extension point whose plugins must sign pods, with
// its args, and names those that are no fwk.SignPlugin. The framework keeps its own instances to
// itself; the factories are the ones it called.
func (p *Profile) unsigned(ctx context.Context) ([]string, error) {
	handle, err := registry.NewHandle(ctx)
	if err != nil {
		return nil, err
	}
	args := make(map[string]runtime.Object, len(p.Config.PluginConfig))
	for _, pc := range p.Config.PluginConfig {
		args[pc.Name] = pc.Args
	}
	names := map[string]bool{}
	for _, set := range []schedulerconfig.PluginSet{p.Running.PreFilter, p.Running.Filter, p.Running.PreScore, p.Running.Score} {
		for _, pl := range set.Enabled {
			names[pl.Name] = true
		}
	}
	known := registry.All()
	var out []string
	for _, name := range slices.Sorted(maps.Keys(names)) {
		pl := build(ctx, known[name], args[name], handle)
		if pl == nil {
			continue // the framework built it, but not without its informers: say nothing
		}
		if _, ok := pl.(fwk.SignPlugin); !ok {
			out = append(out, name)
		}
	}
	return out, nil
}

// build runs a plugin's factory, and returns nil when it fails (or panics) on the handle without
// running informers.
func build(ctx context.Context, factory frameworkruntime.PluginFactory, args runtime.Object, h fwk.Handle) (pl fwk.Plugin) {
	if factory == nil {
		return nil
	}
	defer func() {
		if recover() != nil {
			pl = nil
		}
	}()
	pl, err := factory(ctx, args, h)
	if err != nil {
		return nil
	}
	return pl
}

// defaults caches the default profile by feature gates: it is the same for every profile.
var defaults sync.Map

// loadDefault is the profile that kube-scheduler runs with no plugin settings and the gates.
func loadDefault(gates map[string]bool) (*Profile, error) {
	var key strings.Builder
	for _, name := range slices.Sorted(maps.Keys(gates)) {
		fmt.Fprintf(&key, "%s=%t,", name, gates[name])
	}
	if p, ok := defaults.Load(key.String()); ok {
		return p.(*Profile), nil
	}
	entry, err := profile.RenderProfile(&v1alpha1.SchedulerProfile{ObjectMeta: metav1.ObjectMeta{Name: "default"}})
	if err != nil {
		return nil, err
	}
	cfg, err := profile.RenderProcess(profile.Process{Namespace: "advice", LeaseName: "advice"}, []profile.Profile{entry})
	if err != nil {
		return nil, err
	}
	p, err := load(cfg.YAML, gates)
	if err != nil {
		return nil, fmt.Errorf("the default profile: %w", err)
	}
	defaults.Store(key.String(), p)
	return p, nil
}

// runningPoints are the extension points at which name runs, by the JSON names of the plugin
// sets (filter, score, ...), in the order of upstream's type.
func (p *Profile) runningPoints(name string) []string {
	var out []string
	v := reflect.ValueOf(p.Running)
	for i, f := range reflect.VisibleFields(v.Type()) {
		set := v.Field(i).Interface().(schedulerconfig.PluginSet)
		if slices.ContainsFunc(set.Enabled, func(pl schedulerconfig.Plugin) bool { return pl.Name == name }) {
			out = append(out, lowerFirst(f.Name))
		}
	}
	return out
}

// scores tells whether name runs at score, and with which weight.
func (p *Profile) scores(name string) (int32, bool) {
	for _, pl := range p.Running.Score.Enabled {
		if pl.Name == name {
			return pl.Weight, true
		}
	}
	return 0, false
}

// filters tells whether name runs at filter.
func (p *Profile) filters(name string) bool {
	return slices.ContainsFunc(p.Running.Filter.Enabled, func(pl schedulerconfig.Plugin) bool { return pl.Name == name })
}

// args are the args of a plugin after defaulting: a typed object for plugins with args types.
func (p *Profile) args(name string) runtime.Object {
	for _, pc := range p.Config.PluginConfig {
		if pc.Name == name {
			return pc.Args
		}
	}
	return nil
}

func lowerFirst(s string) string {
	if s == "" {
		return s
	}
	return strings.ToLower(s[:1]) + s[1:]
}
