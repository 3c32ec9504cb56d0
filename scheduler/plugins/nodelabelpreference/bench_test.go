package nodelabelpreference

import (
	"testing"

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
	args := &config.NodeLabelPreferenceArgs{Preferences: []config.LabelPreference{
		{Key: "node.kubernetes.io/lifecycle", Values: []string{"spot"}, Weight: 10}}}
	build := func(t testing.TB, h fwk.Handle) *NodeLabelPreference {
		return plugintest.NewWithHandle[*NodeLabelPreference](t, New, args, h)
	}
	synced := func(pl *NodeLabelPreference) bool { return pl.scores.HasSynced() }
	plugintest.BothWaysB(b, 1000, build, synced, func(b *testing.B, pl *NodeLabelPreference, nodes []fwk.NodeInfo) {
		pod := st.MakePod().Name("p").Obj()
		state := framework.NewCycleState()
		if s := pl.PreScore(b.Context(), state, pod, nodes); !s.IsSuccess() {
			b.Fatal(s.AsError())
		}
		scores := make(fwk.NodeScoreList, len(nodes))
		i := 0
		for b.Loop() {
			score, s := pl.Score(b.Context(), state, pod, nodes[i])
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
