package nodelabelpreference

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

// BenchmarkScore measures Score of the node-pool sample's preference on nodes with the labels of
// real nodes, taken in turn from 1000 as a scheduling cycle does, and NormalizeScore of 1000
// scores per 1000 ops: the plugin's cost per node in a cycle. "computed" reads each node's labels;
// "informed" reads what the plugin cached from its node informer, as it does in the scheduler.
func BenchmarkScore(b *testing.B) {
	nodes := make([]*v1.Node, 1000)
	for i := range nodes {
		name := fmt.Sprintf("node-%04d", i)
		nodes[i] = &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "topology.kubernetes.io/zone": "zone-a",
			"node.kubernetes.io/lifecycle": "spot", "pool": "bench",
		}}}
	}
	args := &config.NodeLabelPreferenceArgs{Preferences: []config.LabelPreference{
		{Key: "node.kubernetes.io/lifecycle", Values: []string{"spot"}, Weight: 10}}}
	build := func(t testing.TB, h fwk.Handle) *NodeLabelPreference {
		return plugintest.NewWithHandle[*NodeLabelPreference](t, New, args, h)
	}
	plugintest.BothWaysB(b, nodes, build, func(b *testing.B, pl *NodeLabelPreference, nodes []*v1.Node) {
		infos := make([]fwk.NodeInfo, len(nodes))
		for i, n := range nodes {
			infos[i] = plugintest.NodeInfo(n)
		}
		pod := st.MakePod().Name("p").Obj()
		state := framework.NewCycleState()
		for !pl.scores.HasSynced() {
			time.Sleep(time.Millisecond)
		}
		if s := pl.PreScore(b.Context(), state, pod, infos); !s.IsSuccess() {
			b.Fatal(s.AsError())
		}
		scores := make(fwk.NodeScoreList, len(infos))
		i := 0
		for b.Loop() {
			score, s := pl.Score(b.Context(), state, pod, infos[i])
			if !s.IsSuccess() || score != 10 {
				b.Fatalf("Score = %d, %v; want 10", score, s.AsError())
			}
			scores[i].Score = score
			if i++; i == len(scores) {
				_ = pl.NormalizeScore(b.Context(), state, pod, scores)
				i = 0
			}
		}
	})
}
