package nodelabelpreference

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/schedops/scheduler-profile-operator/scheduler/apis/config"
	"github.com/schedops/scheduler-profile-operator/scheduler/plugins/internal/plugintest"
)

// BenchmarkScore measures Score of the node-pool sample's preference on a node with the labels
// of a real node, and NormalizeScore of 1000 scores per 1000 ops: the plugin's cost per node in
// a scheduling cycle.
func BenchmarkScore(b *testing.B) {
	pl := plugintest.New[*NodeLabelPreference](b, New, &config.NodeLabelPreferenceArgs{Preferences: []config.LabelPreference{
		{Key: "node.kubernetes.io/lifecycle", Values: []string{"spot"}, Weight: 10}}})
	node := plugintest.NodeInfo(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-0001", Labels: map[string]string{
		"kubernetes.io/hostname": "node-0001", "kubernetes.io/os": "linux", "topology.kubernetes.io/zone": "zone-a",
		"node.kubernetes.io/lifecycle": "spot", "pool": "bench",
	}}})
	pod := st.MakePod().Name("p").Obj()
	state := framework.NewCycleState()
	scores := make(fwk.NodeScoreList, 1000)
	i := 0
	for b.Loop() {
		score, s := pl.Score(b.Context(), state, pod, node)
		if !s.IsSuccess() || score != 10 {
			b.Fatalf("Score = %d, %v; want 10", score, s.AsError())
		}
		scores[i].Score = score
		if i++; i == len(scores) {
			_ = pl.NormalizeScore(b.Context(), state, pod, scores)
			i = 0
		}
	}
}
