package nodepool

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/schedops/scheduler-profile-operator/scheduler/apis/config"
	"github.com/schedops/scheduler-profile-operator/scheduler/plugins/internal/plugintest"
)

// BenchmarkFilter measures Filter on a node in the pool with the labels of a real node: the
// cost the plugin adds to a scheduling cycle, once per node.
func BenchmarkFilter(b *testing.B) {
	pl := plugintest.New[*NodePool](b, New, &config.NodePoolArgs{NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"pool": "bench"}}})
	node := plugintest.NodeInfo(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-0001", Labels: map[string]string{
		"kubernetes.io/hostname": "node-0001", "kubernetes.io/os": "linux", "topology.kubernetes.io/zone": "zone-a",
		"node.kubernetes.io/lifecycle": "spot", "pool": "bench",
	}}})
	pod := st.MakePod().Name("p").Obj()
	state := framework.NewCycleState()
	for b.Loop() {
		if s := pl.Filter(b.Context(), state, pod, node); !s.IsSuccess() {
			b.Fatal(s.AsError())
		}
	}
}
