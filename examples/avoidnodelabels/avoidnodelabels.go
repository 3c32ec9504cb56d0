// Package avoidnodelabels implements AvoidNodeLabels, an example out-of-tree Filter plugin: it
// refuses the nodes that carry any of the label keys its args name. It is built into the
// operator's two binaries by cmd/manager and cmd/kube-scheduler with the public API of
// github.com/schedops/scheduler-profile-operator/pkg/operator.
package avoidnodelabels

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/schedops/scheduler-profile-operator/pkg/operator"

	"github.com/schedops/scheduler-profile-operator/examples/avoidnodelabels/apis/config"
	configv1 "github.com/schedops/scheduler-profile-operator/examples/avoidnodelabels/apis/config/v1"
)

// Name is the name of the plugin in profiles.
const Name = "AvoidNodeLabels"

// AvoidNodeLabels filters out the nodes that carry one of its label keys.
type AvoidNodeLabels struct {
	labels []string
}

var (
	_ fwk.FilterPlugin      = &AvoidNodeLabels{}
	_ fwk.SignPlugin        = &AvoidNodeLabels{}
	_ fwk.EnqueueExtensions = &AvoidNodeLabels{}
)

// Plugin is the plugin for both binaries, cmd/manager and cmd/kube-scheduler.
func Plugin() operator.Plugin {
	return operator.Plugin{Name: Name, New: New, Type: &AvoidNodeLabels{}, AddArgsToScheme: AddArgsToScheme}
}

// AddArgsToScheme registers AvoidNodeLabelsArgs, internal and v1 with its defaults and
// conversions.
func AddArgsToScheme(s *runtime.Scheme) error {
	if err := config.AddToScheme(s); err != nil {
		return err
	}
	return configv1.AddToScheme(s)
}

// New builds the plugin from its args, which it validates first: the field errors it returns
// are relative to the args, and the operator reports them below spec.pluginConfig[i].args.
func New(_ context.Context, obj runtime.Object, _ fwk.Handle) (fwk.Plugin, error) {
	args, ok := obj.(*config.AvoidNodeLabelsArgs)
	if !ok {
		return nil, fmt.Errorf("args are not of type AvoidNodeLabelsArgs, got %T", obj)
	}
	if errs := ValidateArgs(args); len(errs) > 0 {
		return nil, errs.ToAggregate()
	}
	return &AvoidNodeLabels{labels: args.Labels}, nil
}

// ValidateArgs checks that every label is a valid label key.
func ValidateArgs(args *config.AvoidNodeLabelsArgs) field.ErrorList {
	var errs field.ErrorList
	path := field.NewPath("labels")
	if len(args.Labels) == 0 {
		errs = append(errs, field.Required(path, "at least one label key"))
	}
	for i, key := range args.Labels {
		for _, msg := range validation.IsQualifiedName(key) {
			errs = append(errs, field.Invalid(path.Index(i), key, msg))
		}
	}
	return errs
}

// Name returns the name of the plugin.
func (pl *AvoidNodeLabels) Name() string {
	return Name
}

// SignPod returns no fragment: the plugin's decision depends on the node only, so all pods sign
// alike. A Filter that is no SignPlugin switches off the scheduler's opportunistic batching for
// the whole profile (advice SPA401).
func (pl *AvoidNodeLabels) SignPod(_ context.Context, _ *v1.Pod) ([]fwk.SignFragment, *fwk.Status) {
	return nil, nil
}

// EventsToRegister retries a pod that the plugin rejected when a node is added or relabeled, the
// only events that can make a node acceptable; without it the plugin would get every event
// (advice SPA403).
func (pl *AvoidNodeLabels) EventsToRegister(_ context.Context) ([]fwk.ClusterEventWithHint, error) {
	return []fwk.ClusterEventWithHint{
		{Event: fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add | fwk.UpdateNodeLabel}, QueueingHintFn: pl.isSchedulableAfterNodeChange},
	}, nil
}

// isSchedulableAfterNodeChange queues the pod only for a node that carries none of the label
// keys.
func (pl *AvoidNodeLabels) isSchedulableAfterNodeChange(_ klog.Logger, _ *v1.Pod, _, newObj interface{}) (fwk.QueueingHint, error) {
	node, ok := newObj.(*v1.Node)
	if !ok {
		return fwk.Queue, fmt.Errorf("expected a *v1.Node, got %T", newObj)
	}
	if pl.avoided(node) != "" {
		return fwk.QueueSkip, nil
	}
	return fwk.Queue, nil
}

// avoided is the first of the plugin's label keys that the node carries, "" for none.
func (pl *AvoidNodeLabels) avoided(node *v1.Node) string {
	for _, key := range pl.labels {
		if _, ok := node.Labels[key]; ok {
			return key
		}
	}
	return ""
}

// Filter refuses a node that carries one of the plugin's label keys.
func (pl *AvoidNodeLabels) Filter(_ context.Context, _ fwk.CycleState, _ *v1.Pod, nodeInfo fwk.NodeInfo) *fwk.Status {
	if key := pl.avoided(nodeInfo.Node()); key != "" {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("node(s) carry the label %s", key))
	}
	return nil
}
