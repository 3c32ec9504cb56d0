// Command noop-scheduler is bin/kube-scheduler with two more plugins that do nothing (package
// noop), for the throughput benchmark: a profile that enables them measures what the framework
// charges for two plugins at the extension points of ours. Benchmark code, not part of the
// product.
package main

import (
	"os"

	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"          // as bin/kube-scheduler
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // as bin/kube-scheduler
	_ "k8s.io/component-base/metrics/prometheus/version"  // as bin/kube-scheduler
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"

	"github.com/schedops/scheduler-profile-operator/hack/bench/internal/noop"
	"github.com/schedops/scheduler-profile-operator/scheduler/registry"
)

func main() {
	command := app.NewSchedulerCommand(func(r frameworkruntime.Registry) error {
		if err := r.Merge(registry.OutOfTree()); err != nil {
			return err
		}
		return r.Merge(noop.Registry())
	})
	os.Exit(cli.Run(command))
}
