package nodepool

import (
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/schedops/scheduler-profile-operator/scheduler/apis/config"
	"github.com/schedops/scheduler-profile-operator/scheduler/plugins/internal/plugintest"
)

// BenchmarkFilter measures Filter on nodes in the pool with the labels of real nodes, taken in
// turn from 1000 as a scheduling cycle does: the cost the plugin adds to a cycle, once per node.
// "computed" reads each node's labels (rarely in the CPU cache, as in a cycle); "informed" reads
// what the plugin cached from its node informer, as it does in the scheduler.
func BenchmarkFilter(b *testing.B) {
	nodes := make([]*v1.Node, 1000)
	for i := range nodes {
		name := fmt.Sprintf("node-%04d", i)
		nodes[i] = &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "topology.kubernetes.io/zone": "zone-a",
			"node.kubernetes.io/lifecycle": "spot", "pool": "bench",
		}}}
	}
	args := &config.NodePoolArgs{NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"pool": "bench"}}}
	build := func(t testing.TB, h fwk.Handle) *NodePool {
		return plugintest.NewWithHandle[*NodePool](t, New, args, h)
	}
	plugintest.BothWaysB(b, nodes, build, func(b *testing.B, pl *NodePool, nodes []*v1.Node) {
		infos := make([]fwk.NodeInfo, len(nodes))
		for i, n := range nodes {
			infos[i] = plugintest.NodeInfo(n)
		}
		pod := st.MakePod().Name("p").Obj()
		state := framework.NewCycleState()
		for !pl.inPool.HasSynced() {
			time.Sleep(time.Millisecond)
		}
		pl.PreFilter(b.Context(), state, pod, infos)
		i := 0
		for b.Loop() {
			if s := pl.Filter(b.Context(), state, pod, infos[i]); !s.IsSuccess() {
				b.Fatal(s.AsError())
			}
			i = (i + 1) % len(infos)
		}
	})
}
