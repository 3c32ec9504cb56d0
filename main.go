// Command manager is the scheduler-profile-operator: it turns SchedulerProfiles into validated
// kube-scheduler configurations and the scheduler Deployments that run them. It runs this
// repository's plugins through the public API that a plugin module of its own uses too.
//
// `manager render -f profile.yaml` renders and validates profiles offline, without a cluster, and
// `manager plugins` lists the plugins a profile can use.
package main

import (
	"os"

	"github.com/schedops/scheduler-profile-operator/pkg/operator"
	"github.com/schedops/scheduler-profile-operator/pkg/operator/manager"
)

func main() {
	os.Exit(manager.Run(operator.StockPlugins()...))
}
