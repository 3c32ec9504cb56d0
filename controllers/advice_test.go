package controllers

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

// mostAllocated asks for bin-packing and leaves the scorers against it on: SPA104 and SPA105.
const mostAllocated = `{"scoringStrategy": {"type": "MostAllocated"}}`

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

// TestAdmissionWarnsOfAdvice: the webhook admits a profile with advice and returns it as
// warnings, the cluster checks included (a PriorityClass that preempts, with preemption off),
// and for a member with its Scheduler's extenders; the annotation silences a code.
func TestAdmissionWarnsOfAdvice(t *testing.T) {
	preempting := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "high"}, Value: 1000}
	filterExtender := []schedulingv1alpha1.Extender{{URLPrefix: "http://a", FilterVerb: ptr.To("filter"), Ignorable: ptr.To(true)}}
	shared := testutils.MakeScheduler("shared").Obj()
	shared.Spec.Extenders = filterExtender
	tests := []struct {
		name    string
		stored  []client.Object
		profile *schedulingv1alpha1.SchedulerProfile
		want    []string
	}{
		{name: "bin-packing outvoted", profile: testutils.MakeProfile("p").PluginConfig("NodeResourcesFit", mostAllocated).Obj(),
			want: []string{"SPA101: bin-packing", "SPA104: bin-packing", "SPA105: bin-packing"}},
		{name: "bin-packing outvoted, SPA101 and SPA105 silenced", profile: func() *schedulingv1alpha1.SchedulerProfile {
			p := testutils.MakeProfile("p").PluginConfig("NodeResourcesFit", mostAllocated).Obj()
			p.Annotations = map[string]string{schedulingv1alpha1.AnnotationAdviceIgnore: "SPA101,SPA105"}
			return p
		}(), want: []string{"SPA104: bin-packing"}},
		{name: "preemption off with a PriorityClass that preempts", stored: []client.Object{preempting},
			profile: func() *schedulingv1alpha1.SchedulerProfile {
				p := testutils.MakeProfile("p").Obj()
				p.Spec.Plugins = &schedulingv1alpha1.Plugins{PostFilter: schedulingv1alpha1.PluginSet{Disabled: []schedulingv1alpha1.Plugin{{Name: "DefaultPreemption"}}}}
				return p
			}(), want: []string{"SPA501: DefaultPreemption does not run at postFilter, while 1 PriorityClasses may preempt"}},
		{name: "a member, with its Scheduler's extender", stored: []client.Object{createdAt(shared, 10)},
			profile: testutils.MakeProfile("m").SchedulerRef("shared").Obj(),
			want: []string{"SPA402: the scheduler's extenders (spec.extenders, 1)",
				"SPA601: autoscalers (Karpenter, cluster-autoscaler) read pod specs and will not provision for what the scheduler filters by: spec.extenders[0]"}},
		{name: "the default profile", stored: []client.Object{preempting}, profile: testutils.MakeProfile("p").Obj()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := profileValidatorOf(fakeObjects(tc.stored...))
			warnings, err := v.ValidateCreate(t.Context(), tc.profile)
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			assertPrefixes(t, "warnings", warnings, tc.want)
		})
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
