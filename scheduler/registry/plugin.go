package registry

import (
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"github.com/schedops/scheduler-profile-operator/scheduler/apis/config/scheme"
	"github.com/schedops/scheduler-profile-operator/scheduler/plugins/nodelabelpreference"
	"github.com/schedops/scheduler-profile-operator/scheduler/plugins/nodepool"
)

// Plugin is an out-of-tree scheduler plugin, for both binaries.
type Plugin struct {
	// Name is the plugin's name in profiles; it is what the plugin's Name method returns.
	Name string

	// New builds the plugin, as kube-scheduler's registry calls it. With args, it receives the
	// internal args type, decoded strictly and defaulted, and checks it first: it returns the
	// field errors of the args (a field.ErrorList's ToAggregate) with paths relative to the args,
	// which the operator reports below spec.pluginConfig[i].args.
	New frameworkruntime.PluginFactory

	// Type is a zero value of the plugin's type, such as &MyPlugin{}: the interfaces it
	// implements are the plugin's extension points.
	Type fwk.Plugin

	// AddArgsToScheme registers the plugin's args types, for a plugin that has args (nil for one
	// without): the internal type in kubescheduler.config.k8s.io/__internal and the versioned one
	// in kubescheduler.config.k8s.io/v1, both of the kind <Name>Args, with the defaulting and
	// conversion functions of the versioned type (those that defaulter-gen and conversion-gen
	// write register themselves in its SchemeBuilder). It is called for kube-scheduler's
	// configuration schemes, so that args are decoded strictly (an unknown field is an error),
	// defaulted and converted exactly as those of in-tree plugins.
	AddArgsToScheme func(*runtime.Scheme) error
}

// Stock returns this repository's plugins, NodePool and NodeLabelPreference: the set in use
// unless a binary chose another, and what the operator's own binaries run.
func Stock() []Plugin {
	return []Plugin{
		{Name: nodepool.Name, New: nodepool.New, Type: &nodepool.NodePool{}, AddArgsToScheme: scheme.AddToScheme},
		{Name: nodelabelpreference.Name, New: nodelabelpreference.New, Type: &nodelabelpreference.NodeLabelPreference{}, AddArgsToScheme: scheme.AddToScheme},
	}
}
