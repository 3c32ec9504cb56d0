package webhook

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
)

// TestSchedulerPodPriorityFromTheAllowlist: the webhook, run with
// --allowed-priority-classes=system-cluster-critical, refuses any other priority class of the
// scheduler pods, on a profile and on a Scheduler, with the field path; the allowed one is admitted.
func TestSchedulerPodPriorityFromTheAllowlist(t *testing.T) {
	ctx := t.Context()
	profile := testutil.MakeProfile("priority-node-critical").SchedulerSettings(schedulingv1alpha1.SchedulerSettings{PriorityClassName: ptr.To("system-node-critical")}).Obj()
	want := []string{`spec.scheduler.priorityClassName: Forbidden: priority class "system-node-critical" is not allowed for scheduler pods; the operator allows "system-cluster-critical" (--allowed-priority-classes, set by the cluster admin)`}
	if diff := cmp.Diff(want, testutil.InvalidCauses(t, k8sClient.Create(ctx, profile))); diff != "" {
		t.Errorf("The refusal of a profile (-want +got):\n%s", diff)
	}

	s := testutil.MakeScheduler("priority-high").Obj()
	s.Spec.PriorityClassName = ptr.To("high")
	want = []string{`spec.priorityClassName: Forbidden: priority class "high" is not allowed for scheduler pods; the operator allows "system-cluster-critical" (--allowed-priority-classes, set by the cluster admin)`}
	if diff := cmp.Diff(want, testutil.InvalidCauses(t, k8sClient.Create(ctx, s))); diff != "" {
		t.Errorf("The refusal of a Scheduler (-want +got):\n%s", diff)
	}

	allowed := testutil.MakeProfile("priority-cluster-critical").SchedulerSettings(schedulingv1alpha1.SchedulerSettings{PriorityClassName: ptr.To("system-cluster-critical")}).Obj()
	if err := k8sClient.Create(ctx, allowed); err != nil {
		t.Fatalf("An allowed priority class was refused: %v", err)
	}
	t.Cleanup(func() {
		_ = k8sClient.Delete(context.Background(), allowed, client.PropagationPolicy(metav1.DeletePropagationBackground))
	})
}
