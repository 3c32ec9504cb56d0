// Command manager is the scheduler-profile-operator with the AvoidNodeLabels plugin: it validates
// profiles against kube-scheduler's plugins and AvoidNodeLabels, as cmd/kube-scheduler runs them.
package main

import (
	"os"

	"github.com/schedops/scheduler-profile-operator/pkg/operator/manager"

	"github.com/schedops/scheduler-profile-operator/examples/avoidnodelabels"
)

func main() {
	os.Exit(manager.Run(avoidnodelabels.Plugin()))
}
