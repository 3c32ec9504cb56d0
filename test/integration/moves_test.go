package integration

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
)

// TestSharedMovesHandOverBeforeRelease moves a running profile into a Scheduler and back out. In:
// the profile keeps its own scheduler while the Scheduler's revision that contains it is not
// available on every replica (an available replica of the old revision does not serve it), and
// loses it once it is. Out: the Scheduler keeps serving the profile's entry until the profile's
// own scheduler is available, then drops it.
func TestSharedMovesHandOverBeforeRelease(t *testing.T) {
	k := suiteCluster()
	k.startOperator(t, cfg)
	sched := uniqueName("moves")
	stay, mover := sched+"-stay", sched+"-mover"
	k.createScheduler(t, testutil.MakeScheduler(sched).Obj())
	k.createProfile(t, testutil.MakeProfile(stay).SchedulerRef(sched).Obj())
	s := k.waitForScheduler(t, sched, "to serve "+stay, servesProfiles(stay))
	k.markDeploymentAvailable(t, s.Status.DeploymentName)
	k.createProfile(t, testutil.MakeProfile(mover).Obj())
	k.waitForRollout(t, mover)
	ownDeployment := mover + "-scheduler"
	k.markDeploymentAvailable(t, ownDeployment)

	// In: the Scheduler's new revision runs nowhere yet.
	k.updateProfile(t, mover, func(p *schedulingv1alpha1.SchedulerProfile) {
		p.Spec.SchedulerRef = schedulingv1alpha1.SchedulerReference{Name: sched}
	})
	s = k.waitForScheduler(t, sched, "to serve both", servesProfiles(mover, stay))
	testutil.Consistently(t, 3*time.Second, "the mover keeps its own scheduler while the Scheduler's new revision is not available", func(ctx context.Context) error {
		return k.deploymentPresent(ctx, ownDeployment)
	})
	k.markDeploymentAvailable(t, s.Status.DeploymentName)
	testutil.Eventually(t, reconcileTimeout, "the mover's own scheduler to be removed", func(ctx context.Context) error {
		return k.deploymentAbsent(ctx, ownDeployment)
	})

	// Out: the profile's own scheduler is applied again, and is not available yet.
	k.updateProfile(t, mover, func(p *schedulingv1alpha1.SchedulerProfile) {
		p.Spec.SchedulerRef = schedulingv1alpha1.SchedulerReference{}
	})
	k.waitForRollout(t, mover)
	testutil.Consistently(t, 3*time.Second, "the Scheduler keeps serving the mover until its own scheduler is available", func(ctx context.Context) error {
		got, err := k.getScheduler(ctx, sched)
		if err != nil {
			return err
		}
		if err := servesProfiles(mover, stay)(got); err != nil {
			return err
		}
		return k.deploymentPresent(ctx, ownDeployment)
	})
	k.markDeploymentAvailable(t, ownDeployment)
	s = k.waitForScheduler(t, sched, "to serve only "+stay, servesProfiles(stay))
	if entries, _ := k.configEntries(t, s.Status.ConfigMapName); len(entries) != 1 {
		t.Errorf("The Scheduler's configuration after the mover left serves %v", entries)
	}
}

// deploymentPresent fails when the named Deployment of the operator's namespace does not exist.
func (k *cluster) deploymentPresent(ctx context.Context, name string) error {
	if err := k.admin.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: name}, &appsv1.Deployment{}); err != nil {
		return fmt.Errorf("deployment %s: %w", name, err)
	}
	return nil
}
