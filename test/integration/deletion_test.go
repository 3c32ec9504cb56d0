package integration

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
	"github.com/schedops/scheduler-profile-operator/test/framework"
)

// holdFinalizer keeps a deleted object in place, as another controller's finalizer would.
const holdFinalizer = "test.schedops.io/hold"

// deletionTimeout bounds a foreground deletion: the garbage collector deletes the dependents,
// then removes the owner's finalizer.
const deletionTimeout = 30 * time.Second

// releaseFinalizer removes holdFinalizer from obj; it runs when the test ends.
func (k *cluster) releaseFinalizer(t *testing.T, obj client.Object) {
	t.Helper()
	ctx := context.Background()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := k.admin.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return err
		}
		obj.SetFinalizers(slices.DeleteFunc(obj.GetFinalizers(), func(f string) bool { return f == holdFinalizer }))
		return k.admin.Update(ctx, obj)
	})
	if client.IgnoreNotFound(err) != nil {
		t.Fatalf("Removing the finalizer of %s: %v", obj.GetName(), err)
	}
}

// TestDeletingOwnersAreNotReconciled: a profile and a Scheduler that are being deleted (held by a
// finalizer) get nothing applied: their Deployments, deleted as the garbage collector would,
// stay deleted. A member of the Scheduler says it is going; a member being deleted leaves its
// Scheduler's configuration.
func TestDeletingOwnersAreNotReconciled(t *testing.T) {
	k := suiteCluster()
	k.startOperator(t, cfg)
	p := testutil.MakeProfile(uniqueName("deleting")).Obj()
	p.Finalizers = []string{holdFinalizer}
	k.createProfile(t, p)
	t.Cleanup(func() { k.releaseFinalizer(t, p) })
	s := testutil.MakeScheduler(uniqueName("deleting-shared")).Obj()
	s.Finalizers = []string{holdFinalizer}
	k.createScheduler(t, s)
	t.Cleanup(func() { k.releaseFinalizer(t, s) })
	stays := k.createProfile(t, testutil.MakeProfile(uniqueName("deleting-member")).SchedulerRef(s.Name).Obj())
	leaves := testutil.MakeProfile(uniqueName("deleting-leaving")).SchedulerRef(s.Name).Obj()
	leaves.Finalizers = []string{holdFinalizer}
	k.createProfile(t, leaves)
	t.Cleanup(func() { k.releaseFinalizer(t, leaves) })

	k.waitForRollout(t, p.Name)
	k.waitForScheduler(t, s.Name, "to serve both members", servesProfiles(sorted(stays.Name, leaves.Name)...))

	// A member being deleted leaves the configuration of its Scheduler.
	if err := k.admin.Delete(t.Context(), leaves); err != nil {
		t.Fatal(err)
	}
	k.waitForScheduler(t, s.Name, "to serve the member that stays", servesProfiles(stays.Name))

	for _, owner := range []client.Object{p, s} {
		if err := k.admin.Delete(t.Context(), owner); err != nil {
			t.Fatal(err)
		}
	}
	deployments := []string{p.Name + "-scheduler", s.Name + ".scheduler"}
	// The garbage collector's part, which envtest does not run: the dependents go.
	for _, name := range deployments {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: operatorNamespace, Name: name}}
		if err := k.admin.Delete(t.Context(), d); err != nil {
			t.Fatalf("Deleting Deployment %s: %v", name, err)
		}
	}
	k.waitForConditions(t, stays.Name, conditionWant{schedulingv1alpha1.ConditionDegraded, metav1.ConditionTrue, schedulingv1alpha1.ReasonSchedulerDeleting})
	testutil.Consistently(t, 5*time.Second, "the Deployments of owners being deleted to stay deleted", func(ctx context.Context) error {
		for _, name := range deployments {
			if err := k.deploymentAbsent(ctx, name); err != nil {
				return err
			}
		}
		return nil
	})
}

// sorted returns names in order, as a Scheduler's status lists its members.
func sorted(names ...string) []string {
	slices.Sort(names)
	return names
}

// TestForegroundDeletion: `kubectl delete --cascade=foreground` of a running profile and of a
// running Scheduler completes, with the operator running and with it stopped, with the garbage
// collector of kube-controller-manager running against the envtest apiserver (envtest has none).
func TestForegroundDeletion(t *testing.T) {
	k := suiteCluster()
	k.ensureOperatorNamespace(t)
	framework.StartGarbageCollector(t, cfg, k.admin, operatorNamespace)
	op := k.startOperator(t, cfg)

	running := k.createProfile(t, testutil.MakeProfile(uniqueName("fg")).Obj())
	s := testutil.MakeScheduler(uniqueName("fg-shared")).Obj()
	k.createScheduler(t, s)
	k.createProfile(t, testutil.MakeProfile(uniqueName("fg-member")).SchedulerRef(s.Name).Obj())
	stopped := k.createProfile(t, testutil.MakeProfile(uniqueName("fg-stopped")).Obj())
	stoppedScheduler := testutil.MakeScheduler(uniqueName("fg-stopped-shared")).Obj()
	k.createScheduler(t, stoppedScheduler)
	k.createProfile(t, testutil.MakeProfile(uniqueName("fg-stopped-member")).SchedulerRef(stoppedScheduler.Name).Obj())
	for _, name := range []string{running.Name, stopped.Name} {
		k.waitForRollout(t, name)
	}
	for _, d := range []string{s.Name + ".scheduler", stoppedScheduler.Name + ".scheduler"} {
		testutil.Eventually(t, reconcileTimeout, "Deployment "+d, func(ctx context.Context) error {
			return k.admin.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: d}, &appsv1.Deployment{})
		})
	}

	t.Run("operator running", func(t *testing.T) {
		k.deleteInForeground(t, running, running.Name+"-scheduler")
		k.deleteInForeground(t, s, s.Name+".scheduler")
	})
	if err := op.Stop(); err != nil {
		t.Fatal(err)
	}
	t.Run("operator stopped", func(t *testing.T) {
		k.deleteInForeground(t, stopped, stopped.Name+"-scheduler")
		k.deleteInForeground(t, stoppedScheduler, stoppedScheduler.Name+".scheduler")
	})
}

// deleteInForeground deletes owner with foreground propagation and waits until it is gone, and
// its Deployment with it.
func (k *cluster) deleteInForeground(t *testing.T, owner client.Object, deployment string) {
	t.Helper()
	start := time.Now()
	if err := k.admin.Delete(t.Context(), owner, client.PropagationPolicy(metav1.DeletePropagationForeground)); err != nil {
		t.Fatalf("Deleting %s in the foreground: %v", owner.GetName(), err)
	}
	testutil.Eventually(t, deletionTimeout, "the foreground deletion of "+owner.GetName()+" to complete", func(ctx context.Context) error {
		obj := owner.DeepCopyObject().(client.Object)
		err := k.admin.Get(ctx, client.ObjectKeyFromObject(owner), obj)
		if err == nil {
			return fmt.Errorf("%s is still there, finalizers %v", owner.GetName(), obj.GetFinalizers())
		}
		if !apierrors.IsNotFound(err) {
			return err
		}
		return k.deploymentAbsent(ctx, deployment)
	})
	t.Logf("The foreground deletion of %s completed in %s", owner.GetName(), time.Since(start).Round(10*time.Millisecond))
}
