package manager_test

import (
	"os"

	"github.com/schedops/scheduler-profile-operator/pkg/operator"
	"github.com/schedops/scheduler-profile-operator/pkg/operator/manager"
)

// The main function of the operator's binary with the stock plugins, as this repository's
// main.go is; a plugin module passes its own plugins.
func ExampleRun() {
	os.Exit(manager.Run(operator.StockPlugins()...))
}
