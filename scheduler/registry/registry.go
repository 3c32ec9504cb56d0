// Package registry is the single list of the out-of-tree plugins compiled into the scheduler.
// The scheduler binary registers them with kube-scheduler, and the operator builds profiles
// with them to validate a configuration, so what the operator accepts is what will run.
//
// Importing this package also registers the plugins' args types into kube-scheduler's
// configuration scheme.
package registry

import (
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	// Registers NodePoolArgs and NodeLabelPreferenceArgs, which the plugins below need.
	_ "github.com/schedops/scheduler-profile-operator/scheduler/apis/config/scheme"
	"github.com/schedops/scheduler-profile-operator/scheduler/plugins/nodelabelpreference"
	"github.com/schedops/scheduler-profile-operator/scheduler/plugins/nodepool"
)

// plugin is one out-of-tree plugin.
type plugin struct {
	name    string
	factory frameworkruntime.PluginFactory
	// zero is a zero value of the plugin's type: its methods tell the extension points
	// without building the plugin, which would need valid args.
	zero fwk.Plugin
}

// outOfTree lists the out-of-tree plugins. To add one, write its package under
// scheduler/plugins and add a line here.
var outOfTree = []plugin{
	{name: nodepool.Name, factory: nodepool.New, zero: &nodepool.NodePool{}},
	{name: nodelabelpreference.Name, factory: nodelabelpreference.New, zero: &nodelabelpreference.NodeLabelPreference{}},
}

// OutOfTree returns a new registry of the out-of-tree plugins, to merge into kube-scheduler's
// in-tree registry (app.NewSchedulerCommand options, scheduler.WithFrameworkOutOfTreeRegistry).
func OutOfTree() frameworkruntime.Registry {
	r := make(frameworkruntime.Registry, len(outOfTree))
	for _, p := range outOfTree {
		r[p.name] = p.factory
	}
	return r
}

// All returns a new registry of every plugin the scheduler binary knows: the in-tree ones and
// ours, whose names are distinct (the binary's start-up and this package's tests check it).
func All() frameworkruntime.Registry {
	r := plugins.NewInTreeRegistry()
	_ = r.Merge(OutOfTree())
	return r
}
