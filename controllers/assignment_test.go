package controllers

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
)

// servingProfile is a profile asking for scheduler name, holding it in status when held, with
// the Available condition of status (none when empty).
func servingProfile(name, schedulerName string, held bool, available metav1.ConditionStatus) *schedulingv1alpha1.SchedulerProfile {
	p := testutil.MakeProfile(name).SchedulerName(schedulerName).Obj()
	if held {
		p.Status.SchedulerName = schedulerName
	}
	if available != "" {
		p.Status.Conditions = []metav1.Condition{{Type: schedulingv1alpha1.ConditionAvailable, Status: available, Reason: "Because"}}
	}
	return p
}

func TestSchedulerNameNotServed(t *testing.T) {
	deleting := servingProfile("binpack", "binpack", true, metav1.ConditionTrue)
	now := metav1.Now()
	deleting.DeletionTimestamp, deleting.Finalizers = &now, []string{"example.com/keep"}
	cases := map[string]struct {
		profiles []client.Object
		want     string
	}{
		"no profile": {want: "no SchedulerProfile has scheduler name binpack"},
		"a profile of another name": {
			profiles: []client.Object{servingProfile("spread", "spread", true, metav1.ConditionTrue)},
			want:     "no SchedulerProfile has scheduler name binpack",
		},
		"served": {profiles: []client.Object{servingProfile("binpack", "binpack", true, metav1.ConditionTrue)}},
		"not Available": {
			profiles: []client.Object{servingProfile("binpack", "binpack", true, metav1.ConditionFalse)},
			want:     "SchedulerProfile binpack is not Available (Because)",
		},
		"no Available condition yet": {
			profiles: []client.Object{servingProfile("binpack", "binpack", true, "")},
			want:     "SchedulerProfile binpack is not Available yet",
		},
		"the name not held": {
			profiles: []client.Object{servingProfile("binpack", "binpack", false, metav1.ConditionTrue)},
			want:     "SchedulerProfile binpack does not hold scheduler name binpack",
		},
		"being deleted": {profiles: []client.Object{deleting}, want: "SchedulerProfile binpack is being deleted"},
		"the holder serves, a newer claimant waits": {
			profiles: []client.Object{
				servingProfile("a-claimant", "binpack", false, metav1.ConditionFalse),
				servingProfile("z-holder", "binpack", true, metav1.ConditionTrue),
			},
		},
		"the reason names the first profile by name": {
			profiles: []client.Object{
				servingProfile("z-holder", "binpack", true, metav1.ConditionFalse),
				servingProfile("a-claimant", "binpack", false, metav1.ConditionFalse),
			},
			want: "SchedulerProfile a-claimant does not hold scheduler name binpack",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			objects := fakeObjects(tc.profiles...)
			got, err := SchedulerNameNotServed(t.Context(), objects.client, "binpack")
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("SchedulerNameNotServed = %q, want %q", got, tc.want)
			}
		})
	}
}
