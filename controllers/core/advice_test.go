package core

import (
	"context"
	"strings"
	"testing"

	"github.com/schedops/scheduler-profile-operator/controllers/metrics"
	"github.com/schedops/scheduler-profile-operator/controllers/plan"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	testutils "github.com/schedops/scheduler-profile-operator/internal/testutil"
	"github.com/schedops/scheduler-profile-operator/scheduler/advice"
)

func TestSetAdvisoryCondition(t *testing.T) {
	found := []advice.Advice{{Code: "SPA104", Message: "a"}, {Code: "SPA101", Message: "b"}, {Code: "SPA104", Message: "c"}}
	tests := []struct {
		name        string
		before      []schedulingv1alpha1.AdviceEntry
		obs         observation
		wantStatus  metav1.ConditionStatus
		wantReason  string
		wantMessage string
		wantAdvice  []schedulingv1alpha1.AdviceEntry
	}{
		{name: "advice found", obs: observation{adviceChecked: true, advice: found},
			wantStatus: metav1.ConditionTrue, wantReason: schedulingv1alpha1.ReasonAdviceFound, wantMessage: "(SPA101, SPA104)",
			wantAdvice: []schedulingv1alpha1.AdviceEntry{{Code: "SPA104", Message: "a"}, {Code: "SPA101", Message: "b"}, {Code: "SPA104", Message: "c"}}},
		{name: "no advice clears the entries", before: []schedulingv1alpha1.AdviceEntry{{Code: "SPA101", Message: "b"}}, obs: observation{adviceChecked: true},
			wantStatus: metav1.ConditionFalse, wantReason: schedulingv1alpha1.ReasonNoAdvice},
		{name: "an invalid spec is not checked", before: []schedulingv1alpha1.AdviceEntry{{Code: "SPA101", Message: "b"}}, obs: observation{invalid: "bad"},
			wantStatus: metav1.ConditionUnknown, wantReason: schedulingv1alpha1.ReasonAdviceNotChecked, wantMessage: "see ConfigValid"},
		{name: "advice that could not be worked out", obs: observation{adviceFailed: "listing the nodes: forbidden"},
			wantStatus: metav1.ConditionUnknown, wantReason: schedulingv1alpha1.ReasonAdviceNotChecked, wantMessage: "listing the nodes: forbidden"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := testutils.MakeProfile("p").Obj()
			p.Status.Advice = tc.before
			setAdvisoryCondition(p, &tc.obs)
			c := meta.FindStatusCondition(p.Status.Conditions, schedulingv1alpha1.ConditionAdvisory)
			if c == nil || c.Status != tc.wantStatus || c.Reason != tc.wantReason || !strings.Contains(c.Message, tc.wantMessage) {
				t.Errorf("Advisory %+v, want %s %s with %q", c, tc.wantStatus, tc.wantReason, tc.wantMessage)
			}
			if diff := cmp.Diff(tc.wantAdvice, p.Status.Advice); diff != "" {
				t.Errorf("status.advice (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSetAdvisoryConditionKeepsWhatAPassDidNotLearn: a pass that ended before it knew the
// advice (an error reading the cluster's objects) leaves the condition and the entries as they are.
func TestSetAdvisoryConditionKeepsWhatAPassDidNotLearn(t *testing.T) {
	p := testutils.MakeProfile("p").Obj()
	setAdvisoryCondition(p, &observation{adviceChecked: true, advice: []advice.Advice{{Code: "SPA101", Message: "b"}}})
	before := p.Status.DeepCopy()
	setAdvisoryCondition(p, &observation{failure: "reading the Deployment: timeout"})
	if diff := cmp.Diff(before, &p.Status); diff != "" {
		t.Errorf("status changed (-before +after):\n%s", diff)
	}
}

func TestAdviceEntriesAreBounded(t *testing.T) {
	var found []advice.Advice
	for range maxAdviceEntries + 3 {
		found = append(found, advice.Advice{Code: "SPA101", Message: strings.Repeat("x", maxAdviceMessage+10)})
	}
	got := adviceEntries(found)
	if len(got) != maxAdviceEntries || len(got[0].Message) > maxAdviceMessage {
		t.Errorf("%d entries, the first of %d bytes; want %d of at most %d", len(got), len(got[0].Message), maxAdviceEntries, maxAdviceMessage)
	}
}

// TestReadCluster: the nodes' labels and the PriorityClasses' policies, sorted by name, and
// nothing else of them, so that a node's status does not change the memo key.
func TestReadCluster(t *testing.T) {
	objs := fakeObjects(
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "b", Labels: map[string]string{"zone": "1"}}, Status: corev1.NodeStatus{Phase: corev1.NodeRunning}},
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "a"}},
		&schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "low"}, Value: 1, PreemptionPolicy: ptr.To(corev1.PreemptNever)},
	)
	got, err := plan.ReadCluster(t.Context(), objs.client)
	if err != nil {
		t.Fatal(err)
	}
	want := &advice.Cluster{
		Nodes:           []corev1.Node{{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, {ObjectMeta: metav1.ObjectMeta{Name: "b", Labels: map[string]string{"zone": "1"}}}},
		PriorityClasses: []schedulingv1.PriorityClass{{ObjectMeta: metav1.ObjectMeta{Name: "low"}, PreemptionPolicy: ptr.To(corev1.PreemptNever)}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("cluster (-want +got):\n%s", diff)
	}
}

func TestRecordAdviceMetrics(t *testing.T) {
	p := testutils.MakeProfile("metrics-advice").Obj()
	p.Status.Advice = []schedulingv1alpha1.AdviceEntry{{Code: "SPA104", Message: "a"}, {Code: "SPA301", Message: "b"}, {Code: "SPA301", Message: "c"}}
	m := metrics.New()
	recordAdviceMetrics(m, p)
	if got := testutil.ToFloat64(m.ProfileAdvice.WithLabelValues(p.Name, "SPA301")); got != 2 {
		t.Errorf("SPA301 counts %v, want 2", got)
	}
	p.Status.Advice = p.Status.Advice[:1]
	recordAdviceMetrics(m, p)
	if got := testutil.CollectAndCount(m.ProfileAdvice, "schedops_schedulerprofile_advice"); got != 1 {
		t.Errorf("%d series after the profile was fixed but for SPA104, want 1", got)
	}
}

// countingReader counts the Lists of a reader.
type countingReader struct {
	client.Reader
	lists int
}

func (c *countingReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	c.lists++
	return c.Reader.List(ctx, list, opts...)
}

// TestClusterViewReadsOncePerChange: the cluster checks' view of the nodes and PriorityClasses is
// read from the cache once per change seen, not once per profile's pass: every node change
// enqueues every profile. On main before the view, each pass listed every node again.
func TestClusterViewReadsOncePerChange(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{"zone": "a"}}}
	reader := &countingReader{Reader: fakeObjects(node).client}
	var v clusterView
	for range 3 {
		if _, err := v.get(t.Context(), reader); err != nil {
			t.Fatal(err)
		}
	}
	if reader.lists != 2 {
		t.Errorf("%d lists for three passes without a change, want 2 (nodes and PriorityClasses, once)", reader.lists)
	}
	v.changed()
	got, err := v.get(t.Context(), reader)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.get(t.Context(), reader); err != nil {
		t.Fatal(err)
	}
	if reader.lists != 4 || len(got.Nodes) != 1 || got.Nodes[0].Labels["zone"] != "a" {
		t.Errorf("%d lists after a change and two passes, nodes %+v; want 4 lists and node n1 in zone a", reader.lists, got.Nodes)
	}
}
