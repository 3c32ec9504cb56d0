package operator_test

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/schedops/scheduler-profile-operator/pkg/operator"
)

// NoGPU is a Filter plugin without args: it refuses the nodes labelled example.com/gpu.
type NoGPU struct{}

var _ fwk.FilterPlugin = &NoGPU{}

func (*NoGPU) Name() string { return "NoGPU" }

func (*NoGPU) Filter(_ context.Context, _ fwk.CycleState, _ *v1.Pod, node fwk.NodeInfo) *fwk.Status {
	if _, ok := node.Node().Labels["example.com/gpu"]; ok {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "node(s) have a GPU")
	}
	return nil
}

func newNoGPU(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) {
	return &NoGPU{}, nil
}

// A plugin without args is a name, a factory and a zero value of its type. A plugin with args
// also sets AddArgsToScheme (see examples/avoidnodelabels in the repository).
func ExamplePlugin() {
	noGPU := operator.Plugin{Name: "NoGPU", New: newNoGPU, Type: &NoGPU{}}
	// Pass it to manager.Run and to scheduler.Run, in the two main functions.
	_ = noGPU
}

// The stock plugins, NodePool and NodeLabelPreference, with a plugin of your own: give both
// binaries the same list.
func ExampleStockPlugins() {
	plugins := append(operator.StockPlugins(), operator.Plugin{Name: "NoGPU", New: newNoGPU, Type: &NoGPU{}})
	// os.Exit(manager.Run(plugins...)) in the manager's main, and
	// os.Exit(scheduler.Run(plugins...)) in the scheduler's.
	_ = plugins
}
