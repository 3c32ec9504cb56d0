package nodepool

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/schedops/scheduler-profile-operator/scheduler/apis/config"
	"github.com/schedops/scheduler-profile-operator/scheduler/plugins/internal/plugintest"
)

// BenchmarkFilter measures Filter on nodes in the pool with the labels of real nodes, taken in
// turn from 1000 as a scheduling cycle does: the cost the plugin adds to a cycle, once per node.
// "computed" reads each node's labels; "informed" reads what the plugin cached from its node
// informer, as it does in the scheduler.
func BenchmarkFilter(b *testing.B) {
	args := &config.NodePoolArgs{NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"pool": "bench"}}}
	build := func(t testing.TB, h fwk.Handle) *NodePool {
		return plugintest.NewWithHandle[*NodePool](t, New, args, h)
	}
	synced := func(pl *NodePool) bool { return pl.inPool.HasSynced() }
	plugintest.BothWaysB(b, 1000, build, synced, func(b *testing.B, pl *NodePool, nodes []fwk.NodeInfo) {
		pod := st.MakePod().Name("p").Obj()
		state := framework.NewCycleState()
		pl.PreFilter(b.Context(), state, pod, nodes)
		i := 0
		for b.Loop() {
			if s := pl.Filter(b.Context(), state, pod, nodes[i]); !s.IsSuccess() {
				b.Fatal(s.AsError())
			}
			i = (i + 1) % len(nodes)
		}
	})
}
