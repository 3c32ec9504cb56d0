package nodelabelpreference

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2/ktesting"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/schedops/scheduler-profile-operator/scheduler/apis/config"
	"github.com/schedops/scheduler-profile-operator/scheduler/plugins/internal/plugintest"
)

func newNodeLabelPreference(t *testing.T, prefs ...config.LabelPreference) *NodeLabelPreference {
	t.Helper()
	return plugintest.New[*NodeLabelPreference](t, New, &config.NodeLabelPreferenceArgs{Preferences: prefs})
}

func TestNew(t *testing.T) {
	plugintest.TestNew(t, New, Name, []plugintest.NewCase{
		{
			Name: "valid args",
			Args: &config.NodeLabelPreferenceArgs{Preferences: []config.LabelPreference{{Key: "ssd", Weight: 1}}},
		},
		{
			Name:    "no args",
			WantErr: "args are not of type NodeLabelPreferenceArgs, got <nil>",
		},
		{
			Name:    "args of another plugin",
			Args:    &config.NodePoolArgs{},
			WantErr: "args are not of type NodeLabelPreferenceArgs, got *config.NodePoolArgs",
		},
		{
			Name:    "invalid args",
			Args:    &config.NodeLabelPreferenceArgs{Preferences: []config.LabelPreference{{Key: "ssd", Weight: 0}}},
			WantErr: "preferences[0].weight: Invalid value: 0: must be in the range 1-100",
		},
	})
}

func TestPreScore(t *testing.T) {
	tests := []struct {
		name       string
		prefs      []config.LabelPreference
		wantStatus *fwk.Status
	}{
		{
			name:  "preferences run Score",
			prefs: []config.LabelPreference{{Key: "ssd", Weight: 1}},
		},
		{
			name:       "no preference skips Score",
			wantStatus: fwk.NewStatus(fwk.Skip),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pl := newNodeLabelPreference(t, tc.prefs...)
			_, ctx := ktesting.NewTestContext(t)
			status := pl.PreScore(ctx, framework.NewCycleState(), st.MakePod().Obj(), nil)
			if diff := cmp.Diff(tc.wantStatus, status); diff != "" {
				t.Errorf("PreScore status (-want +got):\n%s", diff)
			}
		})
	}
}

// TestScore scores the nodes a, b and c, then normalizes their scores, as the framework does.
func TestScore(t *testing.T) {
	ssd := config.LabelPreference{Key: "example.com/ssd", Weight: 3}
	largeOrXL := config.LabelPreference{Key: "type", Values: []string{"large", "xlarge"}, Weight: 1}
	tests := []struct {
		name           string
		prefs          []config.LabelPreference
		nodes          []*v1.Node
		wantRaw        []int64
		wantNormalized []int64
	}{
		{
			name:  "weights of matching preferences add up",
			prefs: []config.LabelPreference{ssd, largeOrXL},
			nodes: []*v1.Node{
				st.MakeNode().Name("a").Label("example.com/ssd", "").Label("type", "xlarge").Obj(),
				st.MakeNode().Name("b").Label("example.com/ssd", "true").Obj(),
				st.MakeNode().Name("c").Label("type", "large").Obj(),
			},
			wantRaw:        []int64{4, 3, 1},
			wantNormalized: []int64{100, 75, 25},
		},
		{
			name:  "a value outside the listed ones does not match",
			prefs: []config.LabelPreference{largeOrXL},
			nodes: []*v1.Node{
				st.MakeNode().Name("a").Label("type", "small").Obj(),
				st.MakeNode().Name("b").Label("type", "large").Obj(),
				st.MakeNode().Name("c").Obj(),
			},
			wantRaw:        []int64{0, 1, 0},
			wantNormalized: []int64{0, 100, 0},
		},
		{
			name:  "no node matches",
			prefs: []config.LabelPreference{ssd},
			nodes: []*v1.Node{
				st.MakeNode().Name("a").Obj(),
				st.MakeNode().Name("b").Label("type", "large").Obj(),
				st.MakeNode().Name("c").Obj(),
			},
			wantRaw:        []int64{0, 0, 0},
			wantNormalized: []int64{0, 0, 0},
		},
		{
			name: "maximal weights",
			prefs: []config.LabelPreference{
				{Key: "x", Weight: 100},
				{Key: "y", Weight: 100},
				{Key: "z", Weight: 100},
			},
			nodes: []*v1.Node{
				st.MakeNode().Name("a").Label("x", "").Label("y", "").Label("z", "").Obj(),
				st.MakeNode().Name("b").Label("y", "").Obj(),
				st.MakeNode().Name("c").Label("x", "").Label("z", "").Obj(),
			},
			wantRaw:        []int64{300, 100, 200},
			wantNormalized: []int64{100, 33, 66},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			build := func(t testing.TB, h fwk.Handle) *NodeLabelPreference {
				return plugintest.NewWithHandle[*NodeLabelPreference](t, New, &config.NodeLabelPreferenceArgs{Preferences: tc.prefs}, h)
			}
			plugintest.BothWays(t, tc.nodes, build, func(t *testing.T, pl *NodeLabelPreference, nodes []*v1.Node) {
				_, ctx := ktesting.NewTestContext(t)
				state := framework.NewCycleState()
				pod := st.MakePod().Obj()

				if status := pl.PreScore(ctx, state, pod, nil); !status.IsSuccess() {
					t.Fatalf("PreScore: %v", status)
				}
				var raw []int64
				var scores fwk.NodeScoreList
				for _, node := range nodes {
					ni := framework.NewNodeInfo()
					ni.SetNode(node)
					score, status := pl.Score(ctx, state, pod, ni)
					if !status.IsSuccess() {
						t.Fatalf("Score(%s): %v", node.Name, status)
					}
					raw = append(raw, score)
					scores = append(scores, fwk.NodeScore{Name: node.Name, Score: score})
				}
				if diff := cmp.Diff(tc.wantRaw, raw); diff != "" {
					t.Errorf("raw scores (-want +got):\n%s", diff)
				}

				if status := pl.ScoreExtensions().NormalizeScore(ctx, state, pod, scores); !status.IsSuccess() {
					t.Fatalf("NormalizeScore: %v", status)
				}
				var normalized []int64
				for _, s := range scores {
					normalized = append(normalized, s.Score)
				}
				if diff := cmp.Diff(tc.wantNormalized, normalized); diff != "" {
					t.Errorf("normalized scores (-want +got):\n%s", diff)
				}
			})
		})
	}
}
