package nodepool

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2/ktesting"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	st "k8s.io/kubernetes/pkg/scheduler/testing"

	"github.com/schedops/scheduler-profile-operator/scheduler/apis/config"
	"github.com/schedops/scheduler-profile-operator/scheduler/plugins/internal/plugintest"
)

// poolA selects the nodes labeled pool=a.
var poolA = &metav1.LabelSelector{MatchLabels: map[string]string{"pool": "a"}}

func newNodePool(t *testing.T, selector *metav1.LabelSelector) *NodePool {
	t.Helper()
	return plugintest.New[*NodePool](t, New, &config.NodePoolArgs{NodeSelector: selector})
}

func TestNew(t *testing.T) {
	plugintest.TestNew(t, New, Name, []plugintest.NewCase{
		{
			Name: "valid args",
			Args: &config.NodePoolArgs{NodeSelector: poolA},
		},
		{
			Name:    "no args",
			WantErr: "args are not of type NodePoolArgs, got <nil>",
		},
		{
			Name:    "args of another plugin",
			Args:    &config.NodeLabelPreferenceArgs{},
			WantErr: "args are not of type NodePoolArgs, got *config.NodeLabelPreferenceArgs",
		},
		{
			Name:    "invalid args",
			Args:    &config.NodePoolArgs{},
			WantErr: "nodeSelector: Required value: the scheduler's node pool must be selected",
		},
	})
}

func TestPreFilter(t *testing.T) {
	tests := []struct {
		name       string
		selector   *metav1.LabelSelector
		wantStatus *fwk.Status
	}{
		{
			name:     "selector runs Filter",
			selector: poolA,
		},
		{
			name:       "empty selector skips Filter",
			selector:   &metav1.LabelSelector{},
			wantStatus: fwk.NewStatus(fwk.Skip),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pl := newNodePool(t, tc.selector)
			_, ctx := ktesting.NewTestContext(t)
			result, status := pl.PreFilter(ctx, framework.NewCycleState(), st.MakePod().Obj(), nil)
			if result != nil {
				t.Errorf("PreFilter result = %v, want nil (all nodes)", result)
			}
			if diff := cmp.Diff(tc.wantStatus, status); diff != "" {
				t.Errorf("PreFilter status (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFilter(t *testing.T) {
	// The reason is spelled out: it is what users read in the pod's events.
	outside := fwk.NewStatus(fwk.UnschedulableAndUnresolvable, "node(s) are outside the scheduler's node pool")
	inZoneX := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: "zone", Operator: metav1.LabelSelectorOpIn, Values: []string{"x", "y"}},
		{Key: "spot", Operator: metav1.LabelSelectorOpDoesNotExist},
	}}
	tests := []struct {
		name       string
		selector   *metav1.LabelSelector
		node       *v1.Node
		wantStatus *fwk.Status
	}{
		{
			name:     "node in the pool",
			selector: poolA,
			node:     st.MakeNode().Name("n").Label("pool", "a").Label("zone", "x").Obj(),
		},
		{
			name:       "node of another pool",
			selector:   poolA,
			node:       st.MakeNode().Name("n").Label("pool", "b").Obj(),
			wantStatus: outside,
		},
		{
			name:       "node without labels",
			selector:   poolA,
			node:       st.MakeNode().Name("n").Obj(),
			wantStatus: outside,
		},
		{
			name:     "node matching all expressions",
			selector: inZoneX,
			node:     st.MakeNode().Name("n").Label("zone", "y").Obj(),
		},
		{
			name:       "node failing one expression",
			selector:   inZoneX,
			node:       st.MakeNode().Name("n").Label("zone", "x").Label("spot", "true").Obj(),
			wantStatus: outside,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			build := func(t testing.TB, h fwk.Handle) *NodePool {
				return plugintest.NewWithHandle[*NodePool](t, New, &config.NodePoolArgs{NodeSelector: tc.selector}, h)
			}
			plugintest.BothWays(t, []*v1.Node{tc.node}, build, func(t *testing.T, pl *NodePool, nodes []*v1.Node) {
				_, ctx := ktesting.NewTestContext(t)
				state, pod := framework.NewCycleState(), st.MakePod().Obj()
				pl.PreFilter(ctx, state, pod, nil)
				status := pl.Filter(ctx, state, pod, plugintest.NodeInfo(nodes[0]))
				if diff := cmp.Diff(tc.wantStatus, status); diff != "" {
					t.Errorf("Filter status (-want +got):\n%s", diff)
				}
			})
		})
	}
}

// TestFilterFollowsRelabeledNodes: the plugin caches whether each node object is in the pool; a
// relabeled node is a new object and is judged by its new labels.
func TestFilterFollowsRelabeledNodes(t *testing.T) {
	h := plugintest.NewHandle(st.MakeNode().Name("n").Label("pool", "a").Obj())
	pl := plugintest.NewWithHandle[*NodePool](t, New, &config.NodePoolArgs{NodeSelector: poolA}, h)
	h.Start(t)
	_, ctx := ktesting.NewTestContext(t)
	// filter runs a cycle's PreFilter and Filter on node.
	filter := func(node *v1.Node) *fwk.Status {
		state, pod := framework.NewCycleState(), st.MakePod().Obj()
		pl.PreFilter(ctx, state, pod, nil)
		return pl.Filter(ctx, state, pod, plugintest.NodeInfo(node))
	}
	inPool := h.Node(t, "n", plugintest.Any)
	if s := filter(inPool); !s.IsSuccess() {
		t.Fatalf("Filter(n in pool a) = %v, want success", s)
	}
	left := h.Relabel(t, "n", "pool", "b")
	if s := filter(left); s.Code() != fwk.UnschedulableAndUnresolvable {
		t.Errorf("Filter(n relabeled to pool b) = %v, want UnschedulableAndUnresolvable", s)
	}
	// A cycle that still holds the old object judges it as it was.
	if s := filter(inPool); !s.IsSuccess() {
		t.Errorf("Filter(the object before the relabel) = %v, want success", s)
	}
	back := h.Relabel(t, "n", "pool", "a")
	if s := filter(back); !s.IsSuccess() {
		t.Errorf("Filter(n relabeled back to pool a) = %v, want success", s)
	}
}

func TestEventsToRegister(t *testing.T) {
	pl := newNodePool(t, poolA)
	_, ctx := ktesting.NewTestContext(t)
	events, err := pl.EventsToRegister(ctx)
	if err != nil {
		t.Fatalf("EventsToRegister: %v", err)
	}
	want := []fwk.ClusterEvent{{Resource: fwk.Node, ActionType: fwk.Add | fwk.UpdateNodeLabel}}
	var got []fwk.ClusterEvent
	for _, e := range events {
		got = append(got, e.Event)
		if e.QueueingHintFn == nil {
			t.Errorf("event %v has no queueing hint", e.Event)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func TestIsSchedulableAfterNodeChange(t *testing.T) {
	inPool := st.MakeNode().Name("n").Label("pool", "a").Obj()
	outside := st.MakeNode().Name("n").Label("pool", "b").Obj()
	tests := []struct {
		name    string
		oldObj  interface{}
		newObj  interface{}
		want    fwk.QueueingHint
		wantErr bool
	}{
		{name: "node added to the pool", newObj: inPool, want: fwk.Queue},
		{name: "node added outside the pool", newObj: outside, want: fwk.QueueSkip},
		{name: "node relabeled into the pool", oldObj: outside, newObj: inPool, want: fwk.Queue},
		{name: "node already in the pool", oldObj: inPool, newObj: inPool, want: fwk.QueueSkip},
		{name: "node relabeled out of the pool", oldObj: inPool, newObj: outside, want: fwk.QueueSkip},
		{name: "not a node", newObj: st.MakePod().Obj(), want: fwk.Queue, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pl := newNodePool(t, poolA)
			logger, _ := ktesting.NewTestContext(t)
			got, err := pl.isSchedulableAfterNodeChange(logger, st.MakePod().Name("p").Obj(), tc.oldObj, tc.newObj)
			if (err != nil) != tc.wantErr {
				t.Errorf("error = %v, want error: %t", err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("hint = %v, want %v", got, tc.want)
			}
		})
	}
}
