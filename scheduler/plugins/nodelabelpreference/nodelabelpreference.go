// Package nodelabelpreference implements the NodeLabelPreference plugin, which prefers nodes by
// weighted labels (for example cheaper or newer hardware) without excluding any node.
package nodelabelpreference

import (
	"context"
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/helper"

	"github.com/schedops/scheduler-profile-operator/scheduler/apis/config"
	"github.com/schedops/scheduler-profile-operator/scheduler/apis/config/validation"
	"github.com/schedops/scheduler-profile-operator/scheduler/plugins/internal/nodecache"
)

// Name is the name of the plugin in the registry and in KubeSchedulerConfiguration.
const Name = "NodeLabelPreference"

// NodeLabelPreference scores a node with the sum of the weights of the preferences that its
// labels match, normalized so that the best nodes score fwk.MaxScore.
//
// It does not implement EnqueueExtensions: it never rejects a pod, and the framework ignores
// the events of plugins that only score.
type NodeLabelPreference struct {
	preferences []config.LabelPreference
	// scores caches, per node object, the sum of the weights of the preferences it matches.
	scores *nodecache.Cache[int64]
}

var (
	_ fwk.PreScorePlugin  = &NodeLabelPreference{}
	_ fwk.ScorePlugin     = &NodeLabelPreference{}
	_ fwk.ScoreExtensions = &NodeLabelPreference{}
	_ fwk.SignPlugin      = &NodeLabelPreference{}
)

// New builds the plugin from NodeLabelPreferenceArgs, whose preferences must be valid.
func New(_ context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
	args, ok := obj.(*config.NodeLabelPreferenceArgs)
	if !ok {
		return nil, fmt.Errorf("args are not of type NodeLabelPreferenceArgs, got %T", obj)
	}
	if err := validation.ValidateNodeLabelPreferenceArgs(nil, args); err != nil {
		return nil, err
	}
	pl := &NodeLabelPreference{preferences: args.Preferences}
	var err error
	if pl.scores, err = nodecache.New(h, pl.score); err != nil {
		return nil, fmt.Errorf("watching nodes: %w", err)
	}
	return pl, nil
}

// Name returns the name of the plugin.
func (pl *NodeLabelPreference) Name() string {
	return Name
}

// SignPod returns no fragment: the score depends on the node only, so all pods sign alike, and
// implementing SignPlugin keeps the scheduler's opportunistic batching on.
func (pl *NodeLabelPreference) SignPod(_ context.Context, _ *v1.Pod) ([]fwk.SignFragment, *fwk.Status) {
	return nil, nil
}

// PreScore skips Score for the cycle when there is no preference: every node would score 0.
func (pl *NodeLabelPreference) PreScore(_ context.Context, _ fwk.CycleState, _ *v1.Pod, _ []fwk.NodeInfo) *fwk.Status {
	if len(pl.preferences) == 0 {
		return fwk.NewStatus(fwk.Skip)
	}
	pl.scores.Publish()
	return nil
}

// Score returns the sum of the weights of the preferences that the node matches.
func (pl *NodeLabelPreference) Score(_ context.Context, _ fwk.CycleState, _ *v1.Pod, nodeInfo fwk.NodeInfo) (int64, *fwk.Status) {
	return pl.scores.Get(nodeInfo.Node()), nil
}

// score is the sum of the weights of the preferences that node matches. Score reads it through
// the scores cache.
func (pl *NodeLabelPreference) score(node *v1.Node) int64 {
	nodeLabels := node.Labels
	var score int64
	for _, p := range pl.preferences {
		if matches(p, nodeLabels) {
			score += int64(p.Weight)
		}
	}
	return score
}

// ScoreExtensions returns the plugin itself, which normalizes the raw scores.
func (pl *NodeLabelPreference) ScoreExtensions() fwk.ScoreExtensions {
	return pl
}

// NormalizeScore scales the raw scores to 0..fwk.MaxScore relative to the highest one, so that
// the plugin's weight in the profile, not the sum of the preference weights, sets its influence.
func (pl *NodeLabelPreference) NormalizeScore(_ context.Context, _ fwk.CycleState, _ *v1.Pod, scores fwk.NodeScoreList) *fwk.Status {
	return helper.DefaultNormalizeScore(fwk.MaxScore, false, scores)
}

// matches reports whether a node with nodeLabels has the preferred label: any value when the
// preference lists none, else one of the listed values.
func matches(p config.LabelPreference, nodeLabels map[string]string) bool {
	value, ok := nodeLabels[p.Key]
	if !ok {
		return false
	}
	return len(p.Values) == 0 || slices.Contains(p.Values, value)
}
