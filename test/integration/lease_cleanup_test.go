package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
	"github.com/schedops/scheduler-profile-operator/scheduler/profile"
)

// TestUnusedLeasesAreDeleted: the operator deletes a scheduler's lease once no scheduler uses it.
// A deleted profile's lease goes once its scheduler released it, also when the profile was
// deleted while the operator was stopped; the lease a renamed profile left stays while a pod of
// the old template runs on it, and goes with that pod. The lease of a running scheduler, and
// the lease of a deleted profile whose holder still renews it, stay.
//
// Before the Lease controller nothing deleted a scheduler's lease: on that code the waits for
// the leases of the deleted and the renamed profiles to go time out ("Lease ... still exists").
func TestUnusedLeasesAreDeleted(t *testing.T) {
	k := suiteCluster()
	op := k.startOperator(t, k.cfg)
	live, gone, held, renamed, offline := uniqueName("lease-live"), uniqueName("lease-gone"), uniqueName("lease-held"),
		uniqueName("lease-renamed"), uniqueName("lease-offline")
	for _, name := range []string{live, gone, held, renamed, offline} {
		k.createProfile(t, testutil.MakeProfile(name).Obj())
		k.waitForRollout(t, name)
		// What the scheduler's leader election writes when it takes the lease.
		k.createLease(t, profile.LeaseName(name), name+"-scheduler-0")
	}
	// The renamed profile's scheduler pod, as its ReplicaSet would create it.
	oldPod := k.createSchedulerPod(t, renamed+"-scheduler")

	// Deleted: its scheduler stops and releases the lease, as kube-scheduler does when it stops.
	k.releaseLease(t, profile.LeaseName(gone))
	k.deleteProfileAndObjects(t, gone)
	k.waitForLeaseGone(t, profile.LeaseName(gone))

	// Deleted, but the lease's holder still renews it: it stays until it expires.
	k.deleteProfileAndObjects(t, held)
	// Renamed: a new scheduler name is a new lease. The old pod runs on until the Deployment
	// controller stops it; here it has released the lease already, and still it stays.
	k.releaseLease(t, profile.LeaseName(renamed))
	k.updateProfile(t, renamed, func(p *schedulingv1alpha1.SchedulerProfile) { p.Spec.SchedulerName = renamed + "-new" })
	k.waitForRollout(t, renamed)
	// A change of the running profile, which has the operator judge its lease.
	k.updateProfile(t, live, func(p *schedulingv1alpha1.SchedulerProfile) { p.Spec.Scheduler.Replicas = ptr.To[int32](2) })
	k.waitForRollout(t, live)
	testutil.Consistently(t, 3*time.Second, "the leases in use to stay", func(ctx context.Context) error {
		for _, name := range []string{live, held, renamed} {
			if err := k.admin.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: profile.LeaseName(name)}, &coordinationv1.Lease{}); err != nil {
				return fmt.Errorf("lease of %s: %w", name, err)
			}
		}
		return nil
	})
	// The old pod ends.
	if err := k.admin.Delete(t.Context(), oldPod, client.GracePeriodSeconds(0)); err != nil {
		t.Fatalf("Deleting pod %s: %v", oldPod.Name, err)
	}
	k.waitForLeaseGone(t, profile.LeaseName(renamed))

	// Deleted while the operator was stopped: the operator finds the lease when it starts.
	if err := op.Stop(); err != nil {
		t.Fatal(err)
	}
	k.releaseLease(t, profile.LeaseName(offline))
	k.deleteProfileAndObjects(t, offline)
	k.startOperator(t, k.cfg)
	k.waitForLeaseGone(t, profile.LeaseName(offline))
	for _, name := range []string{live, held} {
		if err := k.admin.Get(t.Context(), client.ObjectKey{Namespace: operatorNamespace, Name: profile.LeaseName(name)}, &coordinationv1.Lease{}); err != nil {
			t.Errorf("The lease of %s: %v, want it kept", name, err)
		}
	}
}

// createLease creates a lease of the operator's namespace as a scheduler's leader election does
// when it takes it, held by holder and renewed now; it is deleted when the test ends.
func (k *cluster) createLease(t *testing.T, name, holder string) {
	t.Helper()
	now := metav1.NowMicro()
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Namespace: operatorNamespace, Name: name},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(holder), LeaseDurationSeconds: ptr.To[int32](15),
			AcquireTime: &now, RenewTime: &now},
	}
	if err := k.admin.Create(t.Context(), lease); err != nil {
		t.Fatalf("Creating lease %s: %v", name, err)
	}
	t.Cleanup(func() { _ = k.admin.Delete(context.Background(), lease) })
}

// releaseLease writes what a scheduler's leader election writes when it stops (ReleaseOnCancel):
// no holder.
func (k *cluster) releaseLease(t *testing.T, name string) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		lease := &coordinationv1.Lease{}
		if err := k.admin.Get(t.Context(), client.ObjectKey{Namespace: operatorNamespace, Name: name}, lease); err != nil {
			return err
		}
		now := metav1.NowMicro()
		lease.Spec.HolderIdentity, lease.Spec.LeaseDurationSeconds, lease.Spec.RenewTime = ptr.To(""), ptr.To[int32](1), &now
		return k.admin.Update(t.Context(), lease)
	})
	if err != nil {
		t.Fatalf("Releasing lease %s: %v", name, err)
	}
}

// waitForLeaseGone waits until the lease of the operator's namespace does not exist.
func (k *cluster) waitForLeaseGone(t *testing.T, name string) {
	t.Helper()
	testutil.Eventually(t, reconcileTimeout, "lease "+name+" to be deleted", func(ctx context.Context) error {
		err := k.admin.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: name}, &coordinationv1.Lease{})
		if err == nil {
			return fmt.Errorf("Lease %s still exists", name)
		}
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	})
}

// createSchedulerPod creates a pod of the Deployment's current template, as its ReplicaSet would;
// it is deleted when the test ends.
func (k *cluster) createSchedulerPod(t *testing.T, deployment string) *corev1.Pod {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := k.admin.Get(t.Context(), client.ObjectKey{Namespace: operatorNamespace, Name: deployment}, d); err != nil {
		t.Fatalf("Reading Deployment %s: %v", deployment, err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: operatorNamespace, Name: deployment + "-0",
			Labels: d.Spec.Template.Labels, Annotations: d.Spec.Template.Annotations},
		Spec: d.Spec.Template.Spec,
	}
	if err := k.admin.Create(t.Context(), pod); err != nil {
		t.Fatalf("Creating pod %s: %v", pod.Name, err)
	}
	t.Cleanup(func() { _ = k.admin.Delete(context.Background(), pod, client.GracePeriodSeconds(0)) })
	return pod
}
