package main

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/scheduler/profile"
)

// leaseNamespace is required by the renderer; leader election is off (one replica), so no lease
// is ever written there.
const leaseNamespace = "default"

// process is one kube-scheduler to start: its rendered configuration and the scheduler names
// that its profiles serve. The name also names its files.
type process struct {
	name           string
	config         []byte
	schedulerNames []string
}

// configuration is one way of serving profiles, measured as the sum over its processes.
type configuration struct {
	name      string
	processes []process
}

// configurations renders the three configurations of n profiles (1 shared, n shared, n
// dedicated) and checks each process as the scheduler will when it starts, so that a mistake in
// a profile fails here with a field path instead of in a scheduler log.
func configurations(n int) ([]configuration, error) {
	var rendered []profile.Profile
	var dedicated []process
	for i := range n {
		p := benchProfile(i)
		prof, err := profile.RenderProfile(p)
		if err != nil {
			return nil, err
		}
		rendered = append(rendered, prof)
		cfg, err := profile.Render(p, profile.Settings{Namespace: leaseNamespace})
		if err != nil {
			return nil, err
		}
		if errs := profile.Validate(cfg.YAML); len(errs) > 0 {
			return nil, fmt.Errorf("profile %s: %w", p.Name, errs.ToAggregate())
		}
		dedicated = append(dedicated, process{name: prof.SchedulerName, config: cfg.YAML, schedulerNames: []string{prof.SchedulerName}})
	}
	one, err := shared(rendered[:1])
	if err != nil {
		return nil, err
	}
	all, err := shared(rendered)
	if err != nil {
		return nil, err
	}
	return []configuration{
		{name: "1 profile, shared", processes: []process{one}},
		{name: fmt.Sprintf("%d profiles, shared", n), processes: []process{all}},
		{name: fmt.Sprintf("%d profiles, dedicated", n), processes: dedicated},
	}, nil
}

// shared renders one process serving profiles and checks it.
func shared(profiles []profile.Profile) (process, error) {
	cfg, err := profile.RenderProcess(profile.Process{Namespace: leaseNamespace, LeaseName: "bench-shared"}, profiles)
	if err != nil {
		return process{}, err
	}
	if err := profile.ValidateProcess(cfg.YAML, nil); err != nil {
		return process{}, fmt.Errorf("the shared scheduler of %d profiles: %w", len(profiles), err)
	}
	p := process{name: fmt.Sprintf("shared-%d", len(profiles)), config: cfg.YAML}
	for _, prof := range profiles {
		p.schedulerNames = append(p.schedulerNames, prof.SchedulerName)
	}
	return p, nil
}

// benchProfile returns the i-th profile: four kinds (bin-packing, spreading, node pool, score
// weights) taken in turn, each member with weights of its own, so that no two profiles are
// alike. All keep the default queue sort, which the profiles of one process must share.
func benchProfile(i int) *v1alpha1.SchedulerProfile {
	p := &v1alpha1.SchedulerProfile{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("bench-%02d", i)}}
	w := int32(i%10 + 1)
	switch i % 4 {
	case 0:
		p.Spec.Plugins = &v1alpha1.Plugins{Score: v1alpha1.PluginSet{Disabled: []v1alpha1.Plugin{{Name: "NodeResourcesBalancedAllocation"}}}}
		p.Spec.PluginConfig = []v1alpha1.PluginConfig{args("NodeResourcesFit",
			`{"scoringStrategy":{"type":"MostAllocated","resources":[{"name":"cpu","weight":%d},{"name":"memory","weight":1}]}}`, w)}
	case 1:
		p.Spec.PercentageOfNodesToScore = ptr.To(10 + 4*int32(i))
		p.Spec.PluginConfig = []v1alpha1.PluginConfig{args("PodTopologySpread",
			`{"defaultingType":"List","defaultConstraints":[{"maxSkew":%d,"topologyKey":"topology.kubernetes.io/zone","whenUnsatisfiable":"ScheduleAnyway"}]}`, w)}
	case 2:
		p.Spec.Plugins = &v1alpha1.Plugins{MultiPoint: v1alpha1.PluginSet{Enabled: []v1alpha1.Plugin{
			{Name: "NodePool"}, {Name: "NodeLabelPreference", Weight: ptr.To(w)}}}}
		p.Spec.PluginConfig = []v1alpha1.PluginConfig{
			args("NodePool", `{"nodeSelector":{"matchLabels":{"pool":"bench"}}}`),
			args("NodeLabelPreference", `{"preferences":[{"key":"node.kubernetes.io/lifecycle","values":["spot"],"weight":%d}]}`, 10*w),
		}
	default:
		p.Spec.Plugins = &v1alpha1.Plugins{Score: v1alpha1.PluginSet{Enabled: []v1alpha1.Plugin{
			{Name: "ImageLocality", Weight: ptr.To(w)}, {Name: "TaintToleration", Weight: ptr.To(11 - w)}}}}
	}
	return p
}

// args is the pluginConfig entry of plugin with the JSON args format, filled in like Sprintf.
func args(plugin, format string, a ...any) v1alpha1.PluginConfig {
	return v1alpha1.PluginConfig{Name: plugin, Args: runtime.RawExtension{Raw: fmt.Appendf(nil, format, a...)}}
}
