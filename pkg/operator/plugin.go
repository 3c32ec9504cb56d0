package operator

import "github.com/schedops/scheduler-profile-operator/scheduler/registry"

// Plugin is an out-of-tree scheduler plugin, for both binaries: its name, its factory, its type
// and its args' scheme (see registry.Plugin).
type Plugin = registry.Plugin

// StockPlugins returns the plugins of this repository, NodePool and NodeLabelPreference, which
// the operator's own binaries run; append yours to run them too.
func StockPlugins() []Plugin { return registry.Stock() }
