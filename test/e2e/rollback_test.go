package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/controllers"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
)

// TestFailedRolloutRollsBack: a change of scheduler.nodeSelector to a label no node has makes a
// scheduler pod that the cluster cannot place. The old scheduler keeps serving (maxUnavailable 0),
// the operator reports Degraded=RolloutFailed with the pod's reason, and the Deployment is back on
// the revision that ran available.
func TestFailedRolloutRollsBack(t *testing.T) {
	nodes := makeNodes(t, "rollback", nodeSpec{name: "x", cpus: 8})
	p := applyProfile(t, `{metadata: {name: e2e-rollback}}`)
	waitCondition(t, p.Name, schedulingv1alpha1.ConditionProgressing, metav1.ConditionFalse, schedulingv1alpha1.ReasonRolloutComplete, 90*time.Second)
	var rev1, first string
	testutil.Eventually(t, 30*time.Second, "the revision that ran available", func(ctx context.Context) error {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
			return err
		}
		first = p.Status.ConfigHash
		if rev1 = p.Status.LastAvailableRevision; rev1 == "" {
			return fmt.Errorf("status.lastAvailableRevision is empty")
		}
		return nil
	})

	applyProfile(t, `{metadata: {name: e2e-rollback}, spec: {scheduler: {nodeSelector: {e2e-no-such-label: "x"}}}}`)
	p = waitCondition(t, p.Name, schedulingv1alpha1.ConditionDegraded, metav1.ConditionTrue, schedulingv1alpha1.ReasonRolloutFailed, 90*time.Second)
	if !contains(conditions(p), "Unschedulable") || p.Status.FailedRevision == "" || p.Status.FailedRevision == rev1 {
		t.Errorf("failedRevision %q, conditions %s", p.Status.FailedRevision, conditions(p))
	}
	testutil.Eventually(t, 30*time.Second, "the Deployment to be back on revision "+rev1, func(ctx context.Context) error {
		d := &appsv1.Deployment{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: p.Status.DeploymentName}, d); err != nil {
			return err
		}
		if rev := d.Spec.Template.Annotations[controllers.AnnotationRevision]; rev != rev1 || len(d.Spec.Template.Spec.NodeSelector) != 0 {
			return fmt.Errorf("revision %s, nodeSelector %v", rev, d.Spec.Template.Spec.NodeSelector)
		}
		return nil
	})
	p = waitCondition(t, p.Name, schedulingv1alpha1.ConditionProgressing, metav1.ConditionFalse, schedulingv1alpha1.ReasonRolloutComplete, 60*time.Second)
	if p.Status.ConfigHash != first {
		t.Errorf("status.configHash %s after the rollback, want %s", p.Status.ConfigHash, first)
	}
	schedule(t, nodes.pod("still-bound", "e2e-rollback", 100))
}
