package integration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
	"github.com/schedops/scheduler-profile-operator/scheduler/profile"
	"github.com/schedops/scheduler-profile-operator/test/framework"
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
		delete(d.Spec.Template.Annotations, schedulingv1alpha1.AnnotationLease)
		d.Spec.Template.Annotations[schedulingv1alpha1.AnnotationRevision] = legacyRevision
	})
	k.createReplicaSet(t, k.liveDeployment(t, deployment), "legacy")
	k.markDeploymentAvailable(t, deployment)
	k.mutateRole(t, name+"-scheduler-lease", func(r *rbacv1.Role) { r.Rules[0].ResourceNames = []string{legacy} })
	k.setLastAvailable(t, name, legacyRevision)

	k.startOperator(t, k.cfg)
	k.waitForLease(t, name, lease, appsv1.RecreateDeploymentStrategyType, lease, legacy)
	// The Deployment controller: the old pods stopped, then the new ones became available.
	// Nothing on the old lease is left to run or to return to.
	k.markAvailableAfterRecreate(t, deployment)
	k.waitForLease(t, name, lease, appsv1.RollingUpdateDeploymentStrategyType, lease)
	k.waitForLastAvailable(t, name, k.liveDeployment(t, deployment).Spec.Template.Annotations[schedulingv1alpha1.AnnotationRevision])
}

// markAvailableAfterRecreate plays the Deployment controller at the end of a Recreate: every new
// pod available. The operator then returns the Deployment to surge first, a new generation with
// the same template, which the controller observes at once: available again.
func (k *cluster) markAvailableAfterRecreate(t *testing.T, deployment string) {
	t.Helper()
	k.markDeploymentAvailable(t, deployment)
	testutil.Eventually(t, reconcileTimeout, deployment+" surge first again", func(ctx context.Context) error {
		d := &appsv1.Deployment{}
		if err := k.admin.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: deployment}, d); err != nil {
			return err
		}
		if d.Spec.Strategy.Type != appsv1.RollingUpdateDeploymentStrategyType {
			return fmt.Errorf("strategy %s", d.Spec.Strategy.Type)
		}
		return nil
	})
	k.markDeploymentAvailable(t, deployment)
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
		if got := d.Spec.Template.Annotations[schedulingv1alpha1.AnnotationLease]; got != lease {
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

// TestLeaseMigrationIsPaced: the move off the leases of the operator version before the prefix is
// a change the operator makes to every template, so the upgrade wave paces it like a new image: one
// scheduler at a time in name order, the next once the last is available. A scheduler waiting for
// its turn keeps its template (no lease annotation, its configuration on the old lease, the old
// image): an upgrade does not restart it, even when the operator's image changes meanwhile.
func TestLeaseMigrationIsPaced(t *testing.T) {
	k := suiteCluster()
	k.ensureOperatorNamespace(t)
	const v1, v2 = "example.com/spo:v1", "example.com/spo:v2"
	start := func(image string) *framework.Operator { return k.startOnImage(t, image) }
	prefix := uniqueName("paced")
	names := []string{prefix + "-a", prefix + "-b", prefix + "-c"}
	k.settledProfiles(t, start(v1), names)
	// What the operator version before the prefix left, as in TestLeaseMigration.
	for _, name := range names {
		deployment := name + "-scheduler"
		k.mutateDeployment(t, deployment, func(d *appsv1.Deployment) {
			delete(d.Spec.Template.Annotations, schedulingv1alpha1.AnnotationLease)
			d.Spec.Template.Annotations[schedulingv1alpha1.AnnotationRevision] = "legacy0000"
		})
		k.createReplicaSet(t, k.liveDeployment(t, deployment), "legacy")
		k.markDeploymentAvailable(t, deployment)
		k.mutateRole(t, deployment+"-lease", func(r *rbacv1.Role) { r.Rules[0].ResourceNames = []string{name} })
		k.setLastAvailable(t, name, "legacy0000")
	}

	// The same image: the leases alone move, one at a time. The first moves by a Recreate; the
	// others wait on the old lease, their configuration rendered on it.
	op := start(v1)
	k.waitForLeases(t, names, v1, 1)
	testutil.Consistently(t, time.Second, "one scheduler off the old lease", func(ctx context.Context) error {
		return k.leasesAre(ctx, names, v1, 1)
	})
	if d := k.liveDeployment(t, names[0]+"-scheduler"); d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		t.Errorf("the first scheduler moved off the old lease with strategy %s, want Recreate", d.Spec.Strategy.Type)
	}
	// The template that the old version left gets the revision of this version's on the old
	// lease (the Deployment controller rolls it surge first, on the same lease).
	for _, name := range names[1:] {
		k.settle(t, name, "held")
	}
	k.waitForProfile(t, names[2], "to wait for its turn on the old lease", func(p *schedulingv1alpha1.SchedulerProfile) error {
		c := meta.FindStatusCondition(p.Status.Conditions, schedulingv1alpha1.ConditionProgressing)
		if c == nil || c.Reason != schedulingv1alpha1.ReasonUpgradeWaiting || !strings.Contains(c.Message, "the lease of an operator version before the lease prefix") {
			return fmt.Errorf("progressing: %+v", c)
		}
		if !strings.Contains(k.configData(t, p.Status.ConfigMapName), "resourceName: "+names[2]+"\n") {
			return fmt.Errorf("the status names %s, not the configuration on the old lease", p.Status.ConfigMapName)
		}
		return nil
	})
	if err := op.Stop(); err != nil {
		t.Fatal(err)
	}

	// A new image while the first still rolls out: the waiting schedulers are not touched.
	generations := map[string]int64{}
	for _, name := range names[1:] {
		generations[name] = k.liveDeployment(t, name+"-scheduler").Generation
	}
	start(v2)
	k.waitForImages(t, names, v2, 1)
	testutil.Consistently(t, 2*time.Second, "the waiting schedulers untouched", func(ctx context.Context) error {
		for _, name := range names[1:] {
			d := &appsv1.Deployment{}
			if err := k.admin.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: name + "-scheduler"}, d); err != nil {
				return err
			}
			if d.Generation != generations[name] {
				return fmt.Errorf("Deployment %s went from generation %d to %d", d.Name, generations[name], d.Generation)
			}
		}
		return k.leasesAre(ctx, names, v1, 1)
	})
	// Each moves to the new image and lease at its turn, by a Recreate.
	for i, name := range names {
		k.waitForImages(t, names, v2, i+1)
		k.waitForLeases(t, names, v1, i+1)
		d := k.liveDeployment(t, name+"-scheduler")
		if d.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
			t.Errorf("%s moved with strategy %s, want Recreate", name, d.Spec.Strategy.Type)
		}
		k.createReplicaSet(t, d, "v2")
		k.markAvailableAfterRecreate(t, d.Name)
		k.waitForLastAvailable(t, name, d.Spec.Template.Annotations[schedulingv1alpha1.AnnotationRevision])
	}
}

// leasesAre checks that exactly the first n of the profiles' Deployments run on the prefixed
// lease and the others on the one named after their scheduler, with their configuration on it,
// on the image they wait on.
func (k *cluster) leasesAre(ctx context.Context, names []string, waiting string, n int) error {
	for i, name := range names {
		d := &appsv1.Deployment{}
		if err := k.admin.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: name + "-scheduler"}, d); err != nil {
			return err
		}
		lease, prefixed := d.Spec.Template.Annotations[schedulingv1alpha1.AnnotationLease]
		if prefixed != (i < n) {
			return fmt.Errorf("Deployment %s: template lease %q (annotated %v), want the first %d prefixed", d.Name, lease, prefixed, n)
		}
		if i < n {
			continue
		}
		cm := &corev1.ConfigMap{}
		key := client.ObjectKey{Namespace: operatorNamespace, Name: name + "-config-" + d.Spec.Template.Annotations[schedulingv1alpha1.AnnotationConfigHash]}
		if err := k.admin.Get(ctx, key, cm); err != nil {
			return err
		}
		if !strings.Contains(cm.Data["config.yaml"], "resourceName: "+name+"\n") {
			return fmt.Errorf("Deployment %s waits on a configuration not on the old lease:\n%s", d.Name, cm.Data["config.yaml"])
		}
		if got := d.Spec.Template.Spec.Containers[0].Image; got != waiting {
			return fmt.Errorf("Deployment %s waits on image %s, want %s", d.Name, got, waiting)
		}
	}
	return nil
}

func (k *cluster) waitForLeases(t *testing.T, names []string, waiting string, n int) {
	t.Helper()
	testutil.Eventually(t, reconcileTimeout, fmt.Sprintf("%d schedulers on the prefixed lease", n), func(ctx context.Context) error {
		return k.leasesAre(ctx, names, waiting, n)
	})
}
