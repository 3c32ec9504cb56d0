package nodepool

import (
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/schedops/scheduler-profile-operator/scheduler/apis/config"
	"github.com/schedops/scheduler-profile-operator/scheduler/plugins/internal/plugintest"
)

// BenchmarkFilter measures Filter on nodes in the pool with the labels of real nodes, taken in
// turn from 1000 as a scheduling cycle does (so their labels are rarely in the CPU cache): the
// cost the plugin adds to a cycle, once per node.
func BenchmarkFilter(b *testing.B) {
	pl := plugintest.New[*NodePool](b, New, &config.NodePoolArgs{NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"pool": "bench"}}})
	nodes := make([]fwk.NodeInfo, 1000)
	for i := range nodes {
		name := fmt.Sprintf("node-%04d", i)
		nodes[i] = plugintest.NodeInfo(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "topology.kubernetes.io/zone": "zone-a",
			"node.kubernetes.io/lifecycle": "spot", "pool": "bench",
		}}})
	}
	pod := st.MakePod().Name("p").Obj()
	state := framework.NewCycleState()
	i := 0
	for b.Loop() {
		if s := pl.Filter(b.Context(), state, pod, nodes[i]); !s.IsSuccess() {
			b.Fatal(s.AsError())
		}
		i = (i + 1) % len(nodes)
	}
}
