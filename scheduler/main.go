// Command kube-scheduler is upstream kube-scheduler with the out-of-tree plugins of
// scheduler/registry compiled in. It only registers plugins: every upstream flag and
// configuration field works unchanged.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"          // --logging-format=json, as upstream
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client-go metrics, as upstream
	_ "k8s.io/component-base/metrics/prometheus/version"  // version metric, as upstream
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"github.com/schedops/scheduler-profile-operator/scheduler/registry"
)

func main() {
	command := app.NewSchedulerCommand(withOutOfTreePlugins)
	os.Exit(cli.Run(command))
}

// withOutOfTreePlugins adds the out-of-tree plugins to kube-scheduler's registry; a name that
// clashes with an in-tree plugin is an error at start-up.
func withOutOfTreePlugins(r frameworkruntime.Registry) error {
	return r.Merge(registry.OutOfTree())
}
