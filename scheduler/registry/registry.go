// Package registry holds the out-of-tree plugins compiled into the scheduler: the set that the
// scheduler binary registers with kube-scheduler, and that the operator builds profiles with to
// validate a configuration, so what the operator accepts is what will run.
//
// The set is this repository's plugins (Stock) unless a binary chose its own with Use at
// start-up: the Run functions of pkg/operator/manager and pkg/operator/scheduler do, with the plugins their caller passes.
package registry

import (
	"fmt"
	"slices"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	kubeschedulerscheme "k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"
	kubeschedulerconfigv1 "k8s.io/kubernetes/pkg/scheduler/apis/config/v1"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
)

var (
	mu sync.Mutex
	// outOfTree is the set in use; nil until Use or the first look-up, which takes Stock.
	outOfTree []Plugin
	// useMu serializes Use, whose writes to the schemes' maps take one writer at a time, and the
	// first look-ups, which may all find no set in use at once (the operator's parallel passes).
	useMu sync.Mutex
)

// Use makes plugins the out-of-tree set of this process and registers their args types into
// kube-scheduler's configuration schemes: the one its --config is decoded with and the one it
// defaults and converts plugin args with. Call it at start-up, before any configuration is
// decoded. A plugin name that is empty, repeated or that of an in-tree plugin is an error.
func Use(set []Plugin) error {
	useMu.Lock()
	defer useMu.Unlock()
	return use(set)
}

// use is Use, with useMu held.
func use(set []Plugin) error {
	inTree := plugins.NewInTreeRegistry()
	seen := map[string]bool{}
	for _, p := range set {
		switch {
		case p.Name == "":
			return fmt.Errorf("a plugin has no name")
		case p.New == nil || p.Type == nil:
			return fmt.Errorf("plugin %q needs a factory and a zero value of its type", p.Name)
		case seen[p.Name]:
			return fmt.Errorf("plugin %q is registered twice", p.Name)
		case inTree[p.Name] != nil:
			return fmt.Errorf("plugin %q has the name of an in-tree plugin", p.Name)
		}
		seen[p.Name] = true
		if err := addArgs(p); err != nil {
			return err
		}
	}
	mu.Lock()
	defer mu.Unlock()
	outOfTree = slices.Clone(set)
	if outOfTree == nil {
		outOfTree = []Plugin{}
	}
	return nil
}

// addArgs registers the args types of p into both of kube-scheduler's configuration schemes.
// Adding the same types again, as Use(Stock()) does, changes nothing.
func addArgs(p Plugin) error {
	if p.AddArgsToScheme == nil {
		return nil
	}
	for _, s := range []*runtime.Scheme{kubeschedulerscheme.Scheme, kubeschedulerconfigv1.GetPluginArgConversionScheme()} {
		if err := p.AddArgsToScheme(s); err != nil {
			return fmt.Errorf("registering the args of plugin %q: %w", p.Name, err)
		}
	}
	// kube-scheduler decodes args strictly, defaults and converts them only for this kind.
	kind := kubeschedulerconfigv1.SchemeGroupVersion.WithKind(p.Name + "Args")
	if !kubeschedulerscheme.Scheme.Recognizes(kind) {
		return fmt.Errorf("the args of plugin %q must be registered as %s", p.Name, kind)
	}
	return nil
}

// current returns the out-of-tree set in use: Stock, when nothing was given to Use yet.
func current() []Plugin {
	if set := inUse(); set != nil {
		return set
	}
	useMu.Lock()
	defer useMu.Unlock()
	if set := inUse(); set != nil { // another look-up took Stock meanwhile
		return set
	}
	if err := use(Stock()); err != nil {
		panic(err) // the stock plugins are registered by this package's tests
	}
	return inUse()
}

// inUse is the out-of-tree set in use, nil before the first Use.
func inUse() []Plugin {
	mu.Lock()
	defer mu.Unlock()
	return outOfTree
}

// OutOfTree returns a new registry of the out-of-tree plugins, to merge into kube-scheduler's
// in-tree registry (app.NewSchedulerCommand options, scheduler.WithFrameworkOutOfTreeRegistry).
func OutOfTree() frameworkruntime.Registry {
	set := current()
	r := make(frameworkruntime.Registry, len(set))
	for _, p := range set {
		r[p.Name] = p.New
	}
	return r
}

// All returns a new registry of every plugin the scheduler binary knows: the in-tree ones and
// the out-of-tree ones, whose names are distinct (Use checks it).
func All() frameworkruntime.Registry {
	r := plugins.NewInTreeRegistry()
	_ = r.Merge(OutOfTree())
	return r
}

// Decoder decodes a KubeSchedulerConfiguration strictly, with its defaults, as kube-scheduler
// reads its --config: with the args types of the out-of-tree plugins in use.
func Decoder() runtime.Decoder {
	current()
	return kubeschedulerscheme.Codecs.UniversalDecoder()
}
