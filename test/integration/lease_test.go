package integration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/controllers"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
	"github.com/schedops/scheduler-profile-operator/scheduler/profile"
)

// TestLeaseMigration: a new profile's scheduler runs on the prefixed lease, which its Role
// names alone; a Deployment of the operator version before the prefix (its template has no lease
// annotation, its pods lead on the lease named after the scheduler) moves to the prefixed lease
// by a Recreate, the old pods gone before new ones start, with the Role granting both leases until
// no pod or rollback target uses the old one; then it is surge first again and the Role names the
// prefixed lease alone.
func TestLeaseMigration(t *testing.T) {
	k := suiteCluster()
	op := k.startOperator(t, k.cfg)
	name := uniqueName("lease")
	lease, legacy := profile.LeasePrefix+name, name
	deployment := name + "-scheduler"
	k.createProfile(t, testutil.MakeProfile(name).Obj())
	p := k.waitForRollout(t, name)
	k.waitForLease(t, name, lease, appsv1.RollingUpdateDeploymentStrategyType, lease)
	if cfg := k.configData(t, p.Status.ConfigMapName); !strings.Contains(cfg, "resourceName: "+lease+"\n") {
		t.Errorf("the configuration does not run on the lease %s:\n%s", lease, cfg)
	}
	k.settle(t, name, "prefixed")
	if err := op.Stop(); err != nil {
		t.Fatal(err)
	}

	// What the previous operator version left: its template, available, the last to return
	// to, and a Role for the lease named after the scheduler.
	const legacyRevision = "legacy0000"
	k.mutateDeployment(t, deployment, func(d *appsv1.Deployment) {
		delete(d.Spec.Template.Annotations, controllers.AnnotationLease)
		d.Spec.Template.Annotations[controllers.AnnotationRevision] = legacyRevision
	})
	k.createReplicaSet(t, k.liveDeployment(t, deployment), "legacy")
	k.markDeploymentAvailable(t, deployment)
	k.mutateRole(t, name+"-scheduler-lease", func(r *rbacv1.Role) { r.Rules[0].ResourceNames = []string{legacy} })
	k.setLastAvailable(t, name, legacyRevision)

	k.startOperator(t, k.cfg)
	k.waitForLease(t, name, lease, appsv1.RecreateDeploymentStrategyType, lease, legacy)
	// The Deployment controller: the old pods stopped, then the new ones became available.
	// Nothing on the old lease is left to run or to return to.
	k.markDeploymentAvailable(t, deployment)
	k.waitForLease(t, name, lease, appsv1.RollingUpdateDeploymentStrategyType, lease)
	k.waitForLastAvailable(t, name, k.liveDeployment(t, deployment).Spec.Template.Annotations[controllers.AnnotationRevision])
}

// waitForLease waits until the profile's Deployment runs a template on lease with strategy and
// its lease Role grants exactly granted.
func (k *cluster) waitForLease(t *testing.T, name, lease string, strategy appsv1.DeploymentStrategyType, granted ...string) {
	t.Helper()
	testutil.Eventually(t, reconcileTimeout, fmt.Sprintf("the scheduler of %s on lease %s (%s), Role granting %v", name, lease, strategy, granted), func(ctx context.Context) error {
		d := &appsv1.Deployment{}
		if err := k.admin.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: name + "-scheduler"}, d); err != nil {
			return err
		}
		if got := d.Spec.Template.Annotations[controllers.AnnotationLease]; got != lease {
			return fmt.Errorf("template on lease %q", got)
		}
		if d.Spec.Strategy.Type != strategy {
			return fmt.Errorf("strategy %s", d.Spec.Strategy.Type)
		}
		role := &rbacv1.Role{}
		if err := k.admin.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: name + "-scheduler-lease"}, role); err != nil {
			return err
		}
		if len(role.Rules) != 1 || !slices.Equal(role.Rules[0].ResourceNames, granted) || !slices.Equal(role.Rules[0].Verbs, []string{"get", "update"}) {
			return fmt.Errorf("lease Role rules %+v", role.Rules)
		}
		return nil
	})
}

func (k *cluster) configData(t *testing.T, configMap string) string {
	t.Helper()
	cm := &corev1.ConfigMap{}
	if err := k.admin.Get(t.Context(), client.ObjectKey{Namespace: operatorNamespace, Name: configMap}, cm); err != nil {
		t.Fatalf("Reading ConfigMap %s: %v", configMap, err)
	}
	return cm.Data["config.yaml"]
}

func (k *cluster) mutateDeployment(t *testing.T, name string, mutate func(*appsv1.Deployment)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		d := &appsv1.Deployment{}
		if err := k.admin.Get(t.Context(), client.ObjectKey{Namespace: operatorNamespace, Name: name}, d); err != nil {
			return err
		}
		mutate(d)
		return k.admin.Update(t.Context(), d)
	})
	if err != nil {
		t.Fatalf("Updating Deployment %s: %v", name, err)
	}
}

func (k *cluster) mutateRole(t *testing.T, name string, mutate func(*rbacv1.Role)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		r := &rbacv1.Role{}
		if err := k.admin.Get(t.Context(), client.ObjectKey{Namespace: operatorNamespace, Name: name}, r); err != nil {
			return err
		}
		mutate(r)
		return k.admin.Update(t.Context(), r)
	})
	if err != nil {
		t.Fatalf("Updating Role %s: %v", name, err)
	}
}

func (k *cluster) setLastAvailable(t *testing.T, name, revision string) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p := &schedulingv1alpha1.SchedulerProfile{}
		if err := k.admin.Get(t.Context(), client.ObjectKey{Name: name}, p); err != nil {
			return err
		}
		p.Status.LastAvailableRevision = revision
		return k.admin.Status().Update(t.Context(), p)
	})
	if err != nil {
		t.Fatalf("Updating the status of SchedulerProfile %s: %v", name, err)
	}
}
