package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
)

// TestFailedRolloutRollsBack: a change of scheduler.nodeSelector to a label no node has makes a
// scheduler pod that the cluster cannot place. The old scheduler keeps serving (maxUnavailable 0);
// the operator waits for the pod to stay Unschedulable for its threshold (a minute by default: a
// preemption or a new node could still place it; unschedulableTimeout here), then reports
// Degraded=RolloutFailed with the pod's reason, and the Deployment is back on the revision that
// ran available.
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
	changed := time.Now()
	p = waitCondition(t, p.Name, schedulingv1alpha1.ConditionDegraded, metav1.ConditionTrue, schedulingv1alpha1.ReasonRolloutFailed, unschedulableTimeout+60*time.Second)
	waited := time.Since(changed)
	t.Logf("Rolled back %s after the change: %s", waited.Round(100*time.Millisecond), p.Status.RolloutFailure)
	if !contains(p.Status.RolloutFailure, "Unschedulable for "+unschedulableTimeout.String()) || p.Status.FailedRevision == "" || p.Status.FailedRevision == rev1 {
		t.Errorf("failedRevision %q, rolloutFailure %q, conditions %s", p.Status.FailedRevision, p.Status.RolloutFailure, conditions(p))
	}
	// Measured from the pod's lastTransitionTime, which has a resolution of one second.
	if waited < unschedulableTimeout-time.Second {
		t.Errorf("rolled back %s after the change, before the pod was Unschedulable for %s", waited, unschedulableTimeout)
	}
	testutil.Eventually(t, 30*time.Second, "the Deployment to be back on revision "+rev1, func(ctx context.Context) error {
		d := &appsv1.Deployment{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: p.Status.DeploymentName}, d); err != nil {
			return err
		}
		if rev := d.Spec.Template.Annotations[schedulingv1alpha1.AnnotationRevision]; rev != rev1 || len(d.Spec.Template.Spec.NodeSelector) != 0 {
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

// TestRevertAfterDeadlineRollsOut: a change, then its revert once the change's rollout deadline
// (rolloutDeadlineSeconds: 30, the minimum) has passed. The revert returns the Deployment to a
// template it ran before, whose ReplicaSet is older than the deadline; it still rolls out like
// any change: no RolloutFailed at any moment, lastAvailableRevision is the reverted revision,
// and pods land where the reverted configuration puts them.
func TestRevertAfterDeadlineRollsOut(t *testing.T) {
	const name = "e2e-revert"
	nodes := makeNodes(t, "revert", nodeSpec{name: "x", cpus: 8, labels: map[string]string{"color": "blue"}}, nodeSpec{name: "y", cpus: 8, labels: map[string]string{"color": "green"}})
	profileFor := func(color string) string {
		return `
metadata: {name: ` + name + `}
spec:
  scheduler: {rolloutDeadlineSeconds: 30}
  plugins: {multiPoint: {enabled: [{name: NodeLabelPreference, weight: 10}]}}
  pluginConfig:
  - name: NodeLabelPreference
    args: {preferences: [{key: color, values: [` + color + `], weight: 100}]}`
	}
	deployment := name + "-scheduler"
	applyProfile(t, profileFor("blue"))
	rev1 := waitLastAvailable(t, name, deployment, "", 90*time.Second)
	applyProfile(t, profileFor("green"))
	rev2 := waitLastAvailable(t, name, deployment, rev1, 90*time.Second)

	// Wait until the change's own deadline has passed: it is then older than the deadline, and
	// so is the ReplicaSet of the first revision.
	d := &appsv1.Deployment{}
	if err := k8s.Get(t.Context(), client.ObjectKey{Namespace: operatorNamespace, Name: deployment}, d); err != nil {
		t.Fatal(err)
	}
	applied, err := time.Parse(time.RFC3339, d.Annotations[schedulingv1alpha1.AnnotationRevisionAppliedAt])
	if err != nil {
		t.Fatalf("annotation %s of the change: %v", schedulingv1alpha1.AnnotationRevisionAppliedAt, err)
	}
	deadline := 30 * time.Second
	time.Sleep(time.Until(applied.Add(deadline + 2*time.Second)))

	applyProfile(t, profileFor("blue"))
	reverted := time.Now()
	var polls int
	testutil.Eventually(t, 90*time.Second, "the revert to revision "+rev1+" to roll out with no RolloutFailed", func(ctx context.Context) error {
		p := &schedulingv1alpha1.SchedulerProfile{}
		if err := k8s.Get(ctx, client.ObjectKey{Name: name}, p); err != nil {
			return err
		}
		polls++
		if c := meta.FindStatusCondition(p.Status.Conditions, schedulingv1alpha1.ConditionDegraded); p.Status.FailedRevision != "" || (c != nil && c.Reason == schedulingv1alpha1.ReasonRolloutFailed) {
			t.Fatalf("the revert was judged failed %s after it was applied: failedRevision %q, %s",
				time.Since(reverted).Round(100*time.Millisecond), p.Status.FailedRevision, conditions(p))
		}
		if p.Status.LastAvailableRevision != rev1 {
			return fmt.Errorf("lastAvailableRevision %s", p.Status.LastAvailableRevision)
		}
		return nil
	})
	t.Logf("Revision %s (after %s) rolled out again %s after the revert, %s after the change; %d looks, none saw RolloutFailed",
		rev1, rev2, time.Since(reverted).Round(100*time.Millisecond), reverted.Sub(applied).Round(time.Second), polls)
	p := waitCondition(t, name, schedulingv1alpha1.ConditionProgressing, metav1.ConditionFalse, schedulingv1alpha1.ReasonRolloutComplete, 30*time.Second)
	if c := meta.FindStatusCondition(p.Status.Conditions, schedulingv1alpha1.ConditionDegraded); c == nil || c.Status != metav1.ConditionFalse {
		t.Errorf("after the revert: %s", conditions(p))
	}
	waitScheduler(t, name, p.Status.ConfigHash)
	if n := schedule(t, nodes.pod("after-revert", name, 100))[0]; n.Labels["color"] != "blue" {
		t.Errorf("after the revert the pod went to %s (%s), want blue", n.Name, n.Labels["color"])
	}
}

// waitLastAvailable waits until the Deployment of a profile runs a revision other than previous
// and the profile reports it as its last available revision, and returns that revision.
func waitLastAvailable(t *testing.T, profile, deployment, previous string, timeout time.Duration) string {
	t.Helper()
	var rev string
	testutil.Eventually(t, timeout, "a new revision of "+deployment+" to run available", func(ctx context.Context) error {
		var err error
		if rev, err = deploymentRevision(ctx, deployment); err != nil {
			return err
		}
		if rev == previous {
			return fmt.Errorf("still on revision %s", rev)
		}
		p := &schedulingv1alpha1.SchedulerProfile{}
		if err := k8s.Get(ctx, client.ObjectKey{Name: profile}, p); err != nil {
			return err
		}
		if p.Status.LastAvailableRevision != rev {
			return fmt.Errorf("lastAvailableRevision %q, the Deployment runs %s", p.Status.LastAvailableRevision, rev)
		}
		return nil
	})
	return rev
}
