// Command kube-scheduler is upstream kube-scheduler with this repository's out-of-tree plugins
// compiled in, through the public API that a plugin module of its own uses too.
package main

import (
	"os"

	"github.com/schedops/scheduler-profile-operator/pkg/operator"
	"github.com/schedops/scheduler-profile-operator/pkg/operator/scheduler"
)

func main() {
	os.Exit(scheduler.Run(operator.StockPlugins()...))
}
