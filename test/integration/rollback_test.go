package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/controllers"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
	"github.com/schedops/scheduler-profile-operator/test/framework"
)

// testUnschedulable is the operator's Unschedulable threshold in these tests (60 s by default).
const testUnschedulable = 4 * time.Second

// TestControllerRollsBackAFailedRollout plays the Deployment controller and the scheduler of
// pods (absent in envtest): a revision that ran available, then a new one whose pod cannot be
// scheduled. The operator waits for the pod to stay unschedulable for its threshold (a
// preemption or a new node could still place it), then returns the Deployment to the first
// revision, says why, does not try the failed one again, and rolls forward on the next change of
// the spec.
func TestControllerRollsBackAFailedRollout(t *testing.T) {
	k := suiteCluster()
	k.startOperatorWithRollout(t, controllers.RolloutThresholds{Unschedulable: testUnschedulable})
	name := uniqueName("rollback")
	k.createProfile(t, testutil.MakeProfile(name).PluginConfig("NodeResourcesFit", mostAllocated).Obj())
	k.waitForRollout(t, name)
	first := k.liveDeployment(t, name+"-scheduler")
	rev1 := first.Spec.Template.Annotations[schedulingv1alpha1.AnnotationRevision]
	k.createReplicaSet(t, first, "h1")
	k.markDeploymentAvailable(t, first.Name)
	k.waitForLastAvailable(t, name, rev1)

	k.updateProfile(t, name, func(p *schedulingv1alpha1.SchedulerProfile) {
		p.Spec.PluginConfig[0].Args = runtime.RawExtension{Raw: []byte(leastAllocated)}
	})
	second := k.waitForRevision(t, first.Name, func(rev string) bool { return rev != rev1 })
	rev2 := second.Spec.Template.Annotations[schedulingv1alpha1.AnnotationRevision]
	rs2 := k.createReplicaSet(t, second, "h2")
	k.createUnschedulablePod(t, rs2)
	unschedulable := time.Now()

	// The pod's lastTransitionTime has a resolution of one second: half the threshold is safe.
	testutil.Consistently(t, testUnschedulable/2, "no rollback while the pod is unschedulable for less than "+testUnschedulable.String(), func(ctx context.Context) error {
		p, err := k.getProfile(ctx, name)
		if err != nil {
			return err
		}
		if p.Status.FailedRevision != "" {
			return fmt.Errorf("failedRevision %s after %s: %s", p.Status.FailedRevision, time.Since(unschedulable).Round(time.Millisecond), p.Status.RolloutFailure)
		}
		return nil
	})
	p := k.waitForConditions(t, name, conditionWant{schedulingv1alpha1.ConditionDegraded, metav1.ConditionTrue, schedulingv1alpha1.ReasonRolloutFailed})
	t.Logf("Rolled back %s after the pod became unschedulable", time.Since(unschedulable).Round(100*time.Millisecond))
	if want := "Unschedulable for " + testUnschedulable.String(); p.Status.FailedRevision != rev2 || !strings.Contains(p.Status.RolloutFailure, want) {
		t.Errorf("failedRevision %q (want %q), rolloutFailure %q (want it to contain %q)", p.Status.FailedRevision, rev2, p.Status.RolloutFailure, want)
	}
	t.Logf("Degraded: %s", findCondition(p, schedulingv1alpha1.ConditionDegraded).Message)
	k.waitForRevision(t, first.Name, func(rev string) bool { return rev == rev1 })
	k.waitForProfile(t, name, "to name the configuration it returned to", func(p *schedulingv1alpha1.SchedulerProfile) error {
		if want := first.Spec.Template.Annotations[schedulingv1alpha1.AnnotationConfigHash]; p.Status.ConfigHash != want {
			return fmt.Errorf("status.configHash %s, want the first one %s", p.Status.ConfigHash, want)
		}
		return nil
	})
	testutil.Consistently(t, 2*time.Second, "the Deployment to stay on revision "+rev1, func(ctx context.Context) error {
		d := &appsv1.Deployment{}
		if err := k.admin.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: first.Name}, d); err != nil {
			return err
		}
		if rev := d.Spec.Template.Annotations[schedulingv1alpha1.AnnotationRevision]; rev != rev1 {
			return fmt.Errorf("the Deployment went to revision %s", rev)
		}
		return nil
	})

	k.updateProfile(t, name, func(p *schedulingv1alpha1.SchedulerProfile) {
		p.Spec.PluginConfig[0].Args = runtime.RawExtension{Raw: []byte(mostAllocated)}
		p.Spec.Scheduler.LogVerbosity = ptr.To[int32](3)
	})
	k.waitForRevision(t, first.Name, func(rev string) bool { return rev != rev1 && rev != rev2 })
	k.waitForProfile(t, name, "to forget the failed revision", func(p *schedulingv1alpha1.SchedulerProfile) error {
		if p.Status.FailedRevision != "" {
			return fmt.Errorf("failedRevision is still %q", p.Status.FailedRevision)
		}
		return nil
	})
}

// TestControllerRevertAfterDeadlineRollsOut: a change, then its revert once the rollout
// deadline has passed. The Deployment goes back to a template it ran before and so reuses that
// revision's ReplicaSet, older than the deadline; the revert is still a rollout of its own, with
// a deadline from when the operator applied it: no RolloutFailed, and once available it is the
// last available revision. Judged from the ReplicaSet's age, it was rolled back at once.
func TestControllerRevertAfterDeadlineRollsOut(t *testing.T) {
	const deadline = 6 * time.Second
	k := suiteCluster()
	k.startOperatorWithRollout(t, controllers.RolloutThresholds{Deadline: deadline})
	name := uniqueName("revert")
	k.createProfile(t, testutil.MakeProfile(name).PluginConfig("NodeResourcesFit", mostAllocated).Obj())
	k.waitForRollout(t, name)
	first := k.liveDeployment(t, name+"-scheduler")
	rev1 := first.Spec.Template.Annotations[schedulingv1alpha1.AnnotationRevision]
	rs1 := k.createReplicaSet(t, first, "h1")
	k.markDeploymentAvailable(t, first.Name)
	k.waitForLastAvailable(t, name, rev1)

	k.updateProfile(t, name, func(p *schedulingv1alpha1.SchedulerProfile) {
		p.Spec.PluginConfig[0].Args = runtime.RawExtension{Raw: []byte(leastAllocated)}
	})
	second := k.waitForRevision(t, first.Name, func(rev string) bool { return rev != rev1 })
	rev2 := second.Spec.Template.Annotations[schedulingv1alpha1.AnnotationRevision]
	k.createReplicaSet(t, second, "h2")
	k.markDeploymentAvailable(t, first.Name)
	k.waitForLastAvailable(t, name, rev2)

	// Past the deadline of the change, and the first ReplicaSet older than the deadline.
	rs1 = k.liveReplicaSet(t, rs1.Name)
	time.Sleep(time.Until(rs1.CreationTimestamp.Add(deadline + time.Second)))
	appliedBefore := k.liveDeployment(t, first.Name).Annotations[schedulingv1alpha1.AnnotationRevisionAppliedAt]
	generation := k.updateProfile(t, name, func(p *schedulingv1alpha1.SchedulerProfile) {
		p.Spec.PluginConfig[0].Args = runtime.RawExtension{Raw: []byte(mostAllocated)}
	})
	reverted := time.Now()
	k.waitForProfile(t, name, "to observe the revert", func(p *schedulingv1alpha1.SchedulerProfile) error {
		if p.Status.ObservedGeneration < generation {
			return fmt.Errorf("status.observedGeneration %d", p.Status.ObservedGeneration)
		}
		return nil
	})
	if err := k.notRolledBack(t.Context(), name, first.Name, rev1); err != nil {
		t.Fatalf("The revert was rolled back at once: %v", err)
	}
	back := k.liveDeployment(t, first.Name)
	t.Logf("Reverted to revision %s %s after its ReplicaSet was created (deadline %s); applied at %s, the change at %s",
		rev1, reverted.Sub(rs1.CreationTimestamp.Time).Round(100*time.Millisecond), deadline,
		back.Annotations[schedulingv1alpha1.AnnotationRevisionAppliedAt], appliedBefore)
	if at := back.Annotations[schedulingv1alpha1.AnnotationRevisionAppliedAt]; at == "" || at == appliedBefore {
		t.Errorf("annotation %s is %q after the revert, want a new time (before: %q)", schedulingv1alpha1.AnnotationRevisionAppliedAt, at, appliedBefore)
	}
	// Within its own deadline the revert is a rollout in progress, like any other.
	testutil.Consistently(t, deadline/3, "the revert to be left rolling out", func(ctx context.Context) error {
		return k.notRolledBack(ctx, name, first.Name, rev1)
	})
	k.markDeploymentAvailable(t, first.Name)
	k.waitForLastAvailable(t, name, rev1)
	k.waitForConditions(t, name, rolledOut, notDegraded)
	// Past the revert's own deadline too: it ran available, nothing is rolled back.
	testutil.Consistently(t, deadline, "the revert to stay", func(ctx context.Context) error {
		return k.notRolledBack(ctx, name, first.Name, rev1)
	})
}

// startOperatorWithRollout is startOperator, as the administrator, with rollout thresholds for
// the test; zero fields keep the defaults.
func (k *cluster) startOperatorWithRollout(t *testing.T, th controllers.RolloutThresholds) *framework.Operator {
	t.Helper()
	return k.startOperatorWith(t, func(o *controllers.ManagerOptions) { o.Rollout = th })
}

// notRolledBack checks that a profile reports no failed rollout and that its Deployment is on
// revision rev.
func (k *cluster) notRolledBack(ctx context.Context, name, deployment, rev string) error {
	p, err := k.getProfile(ctx, name)
	if err != nil {
		return err
	}
	if c := findCondition(p, schedulingv1alpha1.ConditionDegraded); p.Status.FailedRevision != "" || (c != nil && c.Reason == schedulingv1alpha1.ReasonRolloutFailed) {
		return fmt.Errorf("failedRevision %q, rolloutFailure %q", p.Status.FailedRevision, p.Status.RolloutFailure)
	}
	d := &appsv1.Deployment{}
	if err := k.admin.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: deployment}, d); err != nil {
		return err
	}
	if got := d.Spec.Template.Annotations[schedulingv1alpha1.AnnotationRevision]; got != rev {
		return fmt.Errorf("the Deployment is on revision %s, not %s", got, rev)
	}
	return nil
}

// waitForLastAvailable waits until a profile reports rev as its last available revision.
func (k *cluster) waitForLastAvailable(t *testing.T, name, rev string) {
	t.Helper()
	k.waitForProfile(t, name, "to remember revision "+rev, func(p *schedulingv1alpha1.SchedulerProfile) error {
		if p.Status.LastAvailableRevision != rev {
			return fmt.Errorf("lastAvailableRevision is %q", p.Status.LastAvailableRevision)
		}
		return nil
	})
}

// liveReplicaSet reads a ReplicaSet of the operator's namespace.
func (k *cluster) liveReplicaSet(t *testing.T, name string) *appsv1.ReplicaSet {
	t.Helper()
	rs := &appsv1.ReplicaSet{}
	if err := k.admin.Get(t.Context(), client.ObjectKey{Namespace: operatorNamespace, Name: name}, rs); err != nil {
		t.Fatalf("Reading ReplicaSet %s: %v", name, err)
	}
	return rs
}

// liveDeployment reads a Deployment of the operator's namespace.
func (k *cluster) liveDeployment(t *testing.T, name string) *appsv1.Deployment {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := k.admin.Get(t.Context(), client.ObjectKey{Namespace: operatorNamespace, Name: name}, d); err != nil {
		t.Fatalf("Reading Deployment %s: %v", name, err)
	}
	return d
}

// waitForRevision waits until the Deployment's template has a revision that ok accepts.
func (k *cluster) waitForRevision(t *testing.T, name string, ok func(string) bool) *appsv1.Deployment {
	t.Helper()
	var got *appsv1.Deployment
	testutil.Eventually(t, reconcileTimeout, "the revision of Deployment "+name, func(ctx context.Context) error {
		d := &appsv1.Deployment{}
		if err := k.admin.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: name}, d); err != nil {
			return err
		}
		if rev := d.Spec.Template.Annotations[schedulingv1alpha1.AnnotationRevision]; !ok(rev) {
			return fmt.Errorf("revision %s", rev)
		}
		got = d
		return nil
	})
	return got
}

// waitForProfile waits until check accepts the profile.
func (k *cluster) waitForProfile(t *testing.T, name, what string, check func(*schedulingv1alpha1.SchedulerProfile) error) {
	t.Helper()
	testutil.Eventually(t, reconcileTimeout, "SchedulerProfile "+name+" "+what, func(ctx context.Context) error {
		p, err := k.getProfile(ctx, name)
		if err != nil {
			return err
		}
		return check(p)
	})
}

// createReplicaSet creates the ReplicaSet the Deployment controller would make for the
// Deployment's current template, with pod-template-hash hash.
func (k *cluster) createReplicaSet(t *testing.T, d *appsv1.Deployment, hash string) *appsv1.ReplicaSet {
	t.Helper()
	template := d.Spec.Template.DeepCopy()
	template.Labels[appsv1.DefaultDeploymentUniqueLabelKey] = hash
	selector := d.Spec.Selector.DeepCopy()
	selector.MatchLabels[appsv1.DefaultDeploymentUniqueLabelKey] = hash
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: d.Name + "-" + hash, Namespace: d.Namespace, Labels: template.Labels},
		Spec:       appsv1.ReplicaSetSpec{Replicas: d.Spec.Replicas, Selector: selector, Template: *template},
	}
	if err := k.admin.Create(t.Context(), rs); err != nil {
		t.Fatalf("Creating ReplicaSet %s: %v", rs.Name, err)
	}
	t.Cleanup(func() { _ = k.admin.Delete(context.Background(), rs) })
	return rs
}

// createUnschedulablePod creates a pod of the ReplicaSet that the cluster's scheduler marked
// unschedulable, as it does when a nodeSelector matches no node.
func (k *cluster) createUnschedulablePod(t *testing.T, rs *appsv1.ReplicaSet) {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: rs.Name + "-x", Namespace: rs.Namespace, Labels: rs.Spec.Template.Labels},
		Spec:       rs.Spec.Template.Spec,
	}
	if err := k.admin.Create(t.Context(), pod); err != nil {
		t.Fatalf("Creating pod %s: %v", pod.Name, err)
	}
	t.Cleanup(func() { _ = k.admin.Delete(context.Background(), pod, client.GracePeriodSeconds(0)) })
	pod.Status.Conditions = []corev1.PodCondition{{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
		Message: "0/3 nodes are available: 3 node(s) didn't match Pod's node affinity/selector.", LastTransitionTime: metav1.Now(),
	}}
	if err := k.admin.Status().Update(t.Context(), pod); err != nil {
		t.Fatalf("Marking pod %s unschedulable: %v", pod.Name, err)
	}
}
