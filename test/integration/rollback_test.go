package integration

import (
	"context"
	"fmt"
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
)

// TestControllerRollsBackAFailedRollout plays the Deployment controller and the scheduler of
// pods (absent in envtest): a revision that ran available, then a new one whose pod cannot be
// scheduled. The operator returns the Deployment to the first revision, says why, does not try
// the failed one again, and rolls forward on the next change of the spec.
func TestControllerRollsBackAFailedRollout(t *testing.T) {
	k := suiteCluster()
	k.startOperator(t, cfg)
	name := uniqueName("rollback")
	k.createProfile(t, testutil.MakeProfile(name).PluginConfig("NodeResourcesFit", mostAllocated).Obj())
	k.waitForRollout(t, name)
	first := k.liveDeployment(t, name+"-scheduler")
	rev1 := first.Spec.Template.Annotations[controllers.AnnotationRevision]
	k.createReplicaSet(t, first, "h1")
	k.markDeploymentAvailable(t, first.Name)
	k.waitForProfile(t, name, "to remember revision "+rev1, func(p *schedulingv1alpha1.SchedulerProfile) error {
		if p.Status.LastAvailableRevision != rev1 {
			return fmt.Errorf("lastAvailableRevision is %q", p.Status.LastAvailableRevision)
		}
		return nil
	})

	k.updateProfile(t, name, func(p *schedulingv1alpha1.SchedulerProfile) {
		p.Spec.PluginConfig[0].Args = runtime.RawExtension{Raw: []byte(leastAllocated)}
	})
	second := k.waitForRevision(t, first.Name, func(rev string) bool { return rev != rev1 })
	rev2 := second.Spec.Template.Annotations[controllers.AnnotationRevision]
	rs2 := k.createReplicaSet(t, second, "h2")
	k.createUnschedulablePod(t, rs2)

	p := k.waitForConditions(t, name, conditionWant{schedulingv1alpha1.ConditionDegraded, metav1.ConditionTrue, schedulingv1alpha1.ReasonRolloutFailed})
	if p.Status.FailedRevision != rev2 || p.Status.RolloutFailure == "" {
		t.Errorf("failedRevision %q (want %q), rolloutFailure %q", p.Status.FailedRevision, rev2, p.Status.RolloutFailure)
	}
	t.Logf("Degraded: %s", findCondition(p, schedulingv1alpha1.ConditionDegraded).Message)
	k.waitForRevision(t, first.Name, func(rev string) bool { return rev == rev1 })
	k.waitForProfile(t, name, "to name the configuration it returned to", func(p *schedulingv1alpha1.SchedulerProfile) error {
		if want := first.Spec.Template.Annotations[controllers.AnnotationConfigHash]; p.Status.ConfigHash != want {
			return fmt.Errorf("status.configHash %s, want the first one %s", p.Status.ConfigHash, want)
		}
		return nil
	})
	testutil.Consistently(t, 2*time.Second, "the Deployment to stay on revision "+rev1, func(ctx context.Context) error {
		d := &appsv1.Deployment{}
		if err := k.admin.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: first.Name}, d); err != nil {
			return err
		}
		if rev := d.Spec.Template.Annotations[controllers.AnnotationRevision]; rev != rev1 {
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
		if rev := d.Spec.Template.Annotations[controllers.AnnotationRevision]; !ok(rev) {
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
