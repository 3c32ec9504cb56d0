// Package scheduler is the main function of the scheduler binary: upstream kube-scheduler
// with out-of-tree plugins compiled in. Every upstream flag and configuration field works
// unchanged.
package scheduler

import (
	"fmt"
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"          // --logging-format=json, as upstream
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client-go metrics, as upstream
	_ "k8s.io/component-base/metrics/prometheus/version"  // version metric, as upstream
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"github.com/schedops/scheduler-profile-operator/pkg/operator"
	"github.com/schedops/scheduler-profile-operator/scheduler/registry"
)

// Run runs kube-scheduler, with os.Args, with plugins added to its in-tree plugins, and
// returns its exit code. A plugin whose name is that of an in-tree plugin, or is given twice,
// is an error at start-up. Give it the same plugins as the manager's Run.
func Run(plugins ...operator.Plugin) int {
	option, err := outOfTree(plugins)
	if err != nil {
		fmt.Fprintf(os.Stderr, "error: %v\n", err)
		return 1
	}
	return cli.Run(app.NewSchedulerCommand(option))
}

// outOfTree makes plugins the out-of-tree plugins of this process and returns the option that
// adds them to kube-scheduler's registry.
func outOfTree(plugins []operator.Plugin) (app.Option, error) {
	if err := registry.Use(plugins); err != nil {
		return nil, err
	}
	return func(r frameworkruntime.Registry) error {
		return r.Merge(registry.OutOfTree())
	}, nil
}
