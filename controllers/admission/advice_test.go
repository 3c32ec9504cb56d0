package admission

import (
	"testing"

	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
)

// mostAllocated asks for bin-packing and leaves the scorers against it on: SPA104 and SPA105.
const mostAllocated = `{"scoringStrategy": {"type": "MostAllocated"}}`

// TestAdmissionWarnsOfAdvice: the webhook admits a profile with advice and returns it as
// warnings, the cluster checks included (a PriorityClass that preempts, with preemption off),
// and for a member with its Scheduler's extenders; the annotation silences a code.
func TestAdmissionWarnsOfAdvice(t *testing.T) {
	preempting := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "high"}, Value: 1000}
	filterExtender := []schedulingv1alpha1.Extender{{URLPrefix: "http://a", FilterVerb: ptr.To("filter"), Ignorable: ptr.To(true)}}
	shared := testutil.MakeScheduler("shared").Obj()
	shared.Spec.Extenders = filterExtender
	tests := []struct {
		name    string
		stored  []client.Object
		profile *schedulingv1alpha1.SchedulerProfile
		want    []string
	}{
		{name: "bin-packing outvoted", profile: testutil.MakeProfile("p").PluginConfig("NodeResourcesFit", mostAllocated).Obj(),
			want: []string{"SPA101: bin-packing", "SPA104: bin-packing", "SPA105: bin-packing"}},
		{name: "bin-packing outvoted, SPA101 and SPA105 silenced", profile: func() *schedulingv1alpha1.SchedulerProfile {
			p := testutil.MakeProfile("p").PluginConfig("NodeResourcesFit", mostAllocated).Obj()
			p.Annotations = map[string]string{schedulingv1alpha1.AnnotationAdviceIgnore: "SPA101,SPA105"}
			return p
		}(), want: []string{"SPA104: bin-packing"}},
		{name: "preemption off with a PriorityClass that preempts", stored: []client.Object{preempting},
			profile: func() *schedulingv1alpha1.SchedulerProfile {
				p := testutil.MakeProfile("p").Obj()
				p.Spec.Plugins = &schedulingv1alpha1.Plugins{PostFilter: schedulingv1alpha1.PluginSet{Disabled: []schedulingv1alpha1.Plugin{{Name: "DefaultPreemption"}}}}
				return p
			}(), want: []string{"SPA501: DefaultPreemption does not run at postFilter, while 1 PriorityClasses may preempt"}},
		{name: "a member, with its Scheduler's extender", stored: []client.Object{createdAt(shared, 10)},
			profile: testutil.MakeProfile("m").SchedulerRef("shared").Obj(),
			want: []string{"SPA402: the scheduler's extenders (spec.extenders, 1)",
				"SPA601: autoscalers (Karpenter, cluster-autoscaler) read pod specs and will not provision for what the scheduler filters by: spec.extenders[0]"}},
		{name: "the default profile", stored: []client.Object{preempting}, profile: testutil.MakeProfile("p").Obj()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			v := profileValidatorOf(fakePlanner(tc.stored...))
			warnings, err := v.ValidateCreate(t.Context(), tc.profile)
			if err != nil {
				t.Fatalf("refused: %v", err)
			}
			assertPrefixes(t, "warnings", warnings, tc.want)
		})
	}
}
