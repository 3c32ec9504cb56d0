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

var _ fwk.FilterPlugin = &AvoidNodeLabels{}

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

// Filter refuses a node that carries one of the plugin's label keys.
func (pl *AvoidNodeLabels) Filter(_ context.Context, _ fwk.CycleState, _ *v1.Pod, nodeInfo fwk.NodeInfo) *fwk.Status {
	node := nodeInfo.Node()
	for _, key := range pl.labels {
		if _, ok := node.Labels[key]; ok {
			return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, fmt.Sprintf("node(s) carry the label %s", key))
		}
	}
	return nil
}
