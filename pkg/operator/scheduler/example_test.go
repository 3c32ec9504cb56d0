package scheduler_test

import (
	"os"

	"github.com/schedops/scheduler-profile-operator/pkg/operator"
	"github.com/schedops/scheduler-profile-operator/pkg/operator/scheduler"
)

// The main function of the scheduler binary with the stock plugins, as this repository's
// scheduler/main.go is; a plugin module passes the same plugins as to manager.Run.
func ExampleRun() {
	os.Exit(scheduler.Run(operator.StockPlugins()...))
}
