package core

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
)

// TestDegradationsFollowTheOrder: whatever order the causes are found in, Degraded reports the
// first of degradedOrder, and AsExpected without a cause.
func TestDegradationsFollowTheOrder(t *testing.T) {
	for i := range degradedOrder {
		causes := degradations{}
		for j := len(degradedOrder) - 1; j >= i; j-- {
			causes.add(true, degradedOrder[j], "because of "+degradedOrder[j])
		}
		status, reason, message := causes.condition()
		if status != metav1.ConditionTrue || reason != degradedOrder[i] || message != "because of "+degradedOrder[i] {
			t.Errorf("causes %v onwards: got %s %s %q, want True %s", degradedOrder[i:], status, reason, message, degradedOrder[i])
		}
	}
	if status, reason, _ := (degradations{}).condition(); status != metav1.ConditionFalse || reason != schedulingv1alpha1.ReasonAsExpected {
		t.Errorf("no cause: got %s %s, want False AsExpected", status, reason)
	}
	causes := degradations{}
	causes.add(false, schedulingv1alpha1.ReasonInvalidConfigNotRolledOut, "does not hold")
	causes.add(true, schedulingv1alpha1.ReasonRolloutFailed, "first")
	causes.add(true, schedulingv1alpha1.ReasonRolloutFailed, "second")
	if _, reason, message := causes.condition(); reason != schedulingv1alpha1.ReasonRolloutFailed || message != "first" {
		t.Errorf("got %s %q, want the first message of the cause that holds", reason, message)
	}
}

// TestDegradedOneOrderForBothKinds: a profile and a Scheduler with the same causes report the
// same reason on Degraded.
func TestDegradedOneOrderForBothKinds(t *testing.T) {
	live := &appsv1.Deployment{}
	for _, tc := range []struct {
		name string
		want string
		set  func(invalid, apiMissing, skew *string)
	}{
		{name: "an invalid change and a missing API", want: schedulingv1alpha1.ReasonInvalidConfigNotRolledOut,
			set: func(invalid, apiMissing, _ *string) { *invalid, *apiMissing = "refused", "no PodGroups" }},
		{name: "a missing API and a refused skew", want: schedulingv1alpha1.ReasonRequiredAPIUnavailable,
			set: func(_, apiMissing, skew *string) { *apiMissing, *skew = "no PodGroups", "newer" }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obs := &observation{deployment: live}
			tc.set(&obs.invalid, &obs.apiMissing, &obs.skew.refused)
			p := &schedulingv1alpha1.SchedulerProfile{}
			setDegradedCondition(p, obs)
			sobs := &schedulerObservation{deployment: live}
			tc.set(&sobs.invalid, &sobs.apiMissing, &sobs.skew.refused)
			s := &schedulingv1alpha1.Scheduler{}
			setSchedulerStatus(s, sobs)
			for kind, conds := range map[string][]metav1.Condition{"SchedulerProfile": p.Status.Conditions, "Scheduler": s.Status.Conditions} {
				c := meta.FindStatusCondition(conds, schedulingv1alpha1.ConditionDegraded)
				if c == nil || c.Status != metav1.ConditionTrue || c.Reason != tc.want {
					t.Errorf("%s: Degraded %+v, want True %s", kind, c, tc.want)
				}
			}
		})
	}
}
