// Command kube-scheduler is upstream kube-scheduler with the AvoidNodeLabels plugin.
package main

import (
	"os"

	"github.com/schedops/scheduler-profile-operator/pkg/operator/scheduler"

	"github.com/schedops/scheduler-profile-operator/examples/avoidnodelabels"
)

func main() {
	os.Exit(scheduler.Run(avoidnodelabels.Plugin()))
}
