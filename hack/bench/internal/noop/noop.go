// Package noop holds two scheduler plugins that do nothing, at the extension points of NodePool
// and NodeLabelPreference: what the scheduling framework charges for calling two more plugins
// on every node, without any plugin's work. The benchmarks measure our plugins against them.
package noop

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
)

// Names of the plugins in the registry and in KubeSchedulerConfiguration.
const (
	FilterName = "BenchNoopFilter"
	ScoreName  = "BenchNoopScore"
)

// Registry has the two plugins.
func Registry() frameworkruntime.Registry {
	return frameworkruntime.Registry{
		FilterName: func(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) { return Filter{}, nil },
		ScoreName:  func(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) { return Score{}, nil },
	}
}

// Filter is a PreFilter and Filter plugin that does nothing, as NodePool is one that does.
type Filter struct{}

var (
	_ fwk.PreFilterPlugin = Filter{}
	_ fwk.FilterPlugin    = Filter{}
	_ fwk.SignPlugin      = Filter{}
)

// Name returns FilterName.
func (Filter) Name() string { return FilterName }

// SignPod returns no fragment, as NodePool does.
func (Filter) SignPod(context.Context, *v1.Pod) ([]fwk.SignFragment, *fwk.Status) { return nil, nil }

// PreFilter lets every node through.
func (Filter) PreFilter(context.Context, fwk.CycleState, *v1.Pod, []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	return nil, nil
}

// PreFilterExtensions returns nil.
func (Filter) PreFilterExtensions() fwk.PreFilterExtensions { return nil }

// Filter lets the node through.
func (Filter) Filter(context.Context, fwk.CycleState, *v1.Pod, fwk.NodeInfo) *fwk.Status {
	return nil
}

// Score is a PreScore and Score plugin, with score normalization, that does nothing, as
// NodeLabelPreference is one that does.
type Score struct{}

var (
	_ fwk.PreScorePlugin = Score{}
	_ fwk.ScorePlugin    = Score{}
	_ fwk.SignPlugin     = Score{}
)

// Name returns ScoreName.
func (Score) Name() string { return ScoreName }

// SignPod returns no fragment, as NodeLabelPreference does.
func (Score) SignPod(context.Context, *v1.Pod) ([]fwk.SignFragment, *fwk.Status) { return nil, nil }

// PreScore does nothing.
func (Score) PreScore(context.Context, fwk.CycleState, *v1.Pod, []fwk.NodeInfo) *fwk.Status {
	return nil
}

// Score gives every node 0.
func (Score) Score(context.Context, fwk.CycleState, *v1.Pod, fwk.NodeInfo) (int64, *fwk.Status) {
	return 0, nil
}

// ScoreExtensions returns the plugin, whose NormalizeScore does nothing.
func (s Score) ScoreExtensions() fwk.ScoreExtensions { return s }

// NormalizeScore leaves the scores as they are.
func (Score) NormalizeScore(context.Context, fwk.CycleState, *v1.Pod, fwk.NodeScoreList) *fwk.Status {
	return nil
}
