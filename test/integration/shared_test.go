package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
)

const leastAllocated = `{"scoringStrategy":{"type":"LeastAllocated"}}`

// TestSharedSchedulerMembers runs a Scheduler with three member profiles through its life: one
// configuration and one Deployment for all, a change that rolls once, an invalid change that keeps
// the member's last good entry, a member leaving, and the objects owned by the Scheduler.
func TestSharedSchedulerMembers(t *testing.T) {
	k := suiteCluster()
	k.startOperator(t, cfg)
	sched := uniqueName("shared")
	a, b, c := sched+"-a", sched+"-b", sched+"-c"
	k.createScheduler(t, testutil.MakeScheduler(sched).Obj())
	for _, name := range []string{c, a, b} {
		k.createProfile(t, testutil.MakeProfile(name).SchedulerRef(sched).PluginConfig("NodeResourcesFit", mostAllocated).Obj())
	}

	s := k.waitForScheduler(t, sched, "to serve a, b and c", servesProfiles(a, b, c))
	entries, order := k.configEntries(t, s.Status.ConfigMapName)
	if fmt.Sprint(order) != fmt.Sprint([]string{a, b, c}) {
		t.Fatalf("profiles of the configuration = %v, want %v in profile-name order", order, []string{a, b, c})
	}
	if s.Status.DeploymentName != sched+".scheduler" || s.Status.ConfigMapName != sched+".config-"+s.Status.ConfigHash {
		t.Errorf("status names Deployment %q and ConfigMap %q", s.Status.DeploymentName, s.Status.ConfigMapName)
	}
	var deployments appsv1.DeploymentList
	if err := k.admin.List(t.Context(), &deployments, client.InNamespace(operatorNamespace), client.MatchingLabels{schedulingv1alpha1.LabelScheduler: sched}); err != nil || len(deployments.Items) != 1 {
		t.Fatalf("want one Deployment of the Scheduler, got %d (%v)", len(deployments.Items), err)
	}
	k.markDeploymentAvailable(t, s.Status.DeploymentName)
	for _, name := range []string{a, b, c} {
		p := k.waitForConditions(t, name, configValid, available, rolledOut)
		if p.Status.DeploymentName != s.Status.DeploymentName || p.Status.ConfigMapName != s.Status.ConfigMapName {
			t.Errorf("profile %s names %s and %s, want the Scheduler's", name, p.Status.DeploymentName, p.Status.ConfigMapName)
		}
	}
	checkSharedOwnership(t, k, s)
	svc := &corev1.Service{}
	if err := k.admin.Get(t.Context(), client.ObjectKey{Namespace: operatorNamespace, Name: "metrics-" + sched + "--scheduler"}, svc); err != nil {
		t.Errorf("The Scheduler's metrics Service: %v", err)
	} else {
		checkMetricsService(t, svc, k.schedulerDeployment(t, s))
	}

	t.Run("a change to one member rolls the scheduler once", func(t *testing.T) {
		before := k.schedulerDeployment(t, s)
		k.updateProfile(t, b, func(p *schedulingv1alpha1.SchedulerProfile) {
			p.Spec.PluginConfig[0].Args = runtime.RawExtension{Raw: []byte(leastAllocated)}
		})
		changed := k.waitForScheduler(t, sched, "to roll b's change", func(got *schedulingv1alpha1.Scheduler) error {
			if got.Status.ConfigHash == s.Status.ConfigHash {
				return fmt.Errorf("still %s", got.Status.ConfigHash)
			}
			return nil
		})
		after, _ := k.configEntries(t, changed.Status.ConfigMapName)
		if !strings.Contains(after[b], "LeastAllocated") || after[a] != entries[a] || after[c] != entries[c] {
			t.Errorf("after changing b the entries are %v, before %v", after, entries)
		}
		if d := k.schedulerDeployment(t, changed); d.Generation != before.Generation+1 {
			t.Errorf("Deployment generation %d after one change, was %d: want one rollout", d.Generation, before.Generation)
		}
		s, entries = changed, after
		k.markDeploymentAvailable(t, s.Status.DeploymentName)
	})

	t.Run("an invalid member keeps its last good entry and the others are untouched", func(t *testing.T) {
		k.updateProfile(t, b, func(p *schedulingv1alpha1.SchedulerProfile) {
			p.Spec.PluginConfig[0].Args = runtime.RawExtension{Raw: []byte(invalidScoring)}
		})
		k.waitForConditions(t, b, conditionWant{schedulingv1alpha1.ConditionConfigValid, metav1.ConditionFalse, schedulingv1alpha1.ReasonInvalidConfig})
		for _, name := range []string{a, c} {
			k.waitForConditions(t, name, configValid, available)
		}
		got := k.waitForScheduler(t, sched, "to keep serving b", servesProfiles(a, b, c))
		testutil.Consistently(t, 2*time.Second, "the Scheduler's configuration to stay "+s.Status.ConfigHash, func(ctx context.Context) error {
			now, err := k.getScheduler(ctx, sched)
			if err == nil && now.Status.ConfigHash != s.Status.ConfigHash {
				err = fmt.Errorf("the invalid change rolled the scheduler: hash %s, was %s", now.Status.ConfigHash, s.Status.ConfigHash)
			}
			return err
		})
		now, _ := k.configEntries(t, got.Status.ConfigMapName)
		if now[b] != entries[b] {
			t.Errorf("b's entry changed to %s, want its last good entry %s", now[b], entries[b])
		}
	})

	t.Run("a member that writes the default queue sort out joins the others", func(t *testing.T) {
		// Upstream compares the queueSort sets as written, so an explicit PrioritySort differed
		// from the default one until the operator wrote every queue sort one way.
		d := testutil.MakeProfile(sched + "-d").SchedulerRef(sched).Obj()
		d.Spec.Plugins = spelledOutQueueSort
		k.createProfile(t, d)
		k.waitForScheduler(t, sched, "to serve d too", servesProfiles(a, b, c, d.Name))
		k.waitForConditions(t, d.Name, configValid)
		k.waitForConditions(t, a, configValid)
		// d is deleted when this subtest ends (createProfile's cleanup).
	})

	t.Run("a member that leaves is removed from the configuration", func(t *testing.T) {
		k.deleteProfileAndObjects(t, c)
		got := k.waitForScheduler(t, sched, "to serve a and b", servesProfiles(a, b))
		now, _ := k.configEntries(t, got.Status.ConfigMapName)
		if _, ok := now[c]; ok || len(now) != 2 {
			t.Errorf("profiles after c left: %v", now)
		}
	})
}

// checkSharedOwnership checks that the Scheduler, not a profile, controls every object of the
// process, so that deleting the Scheduler collects them.
func checkSharedOwnership(t *testing.T, k *cluster, s *schedulingv1alpha1.Scheduler) {
	t.Helper()
	keys := map[client.Object]client.ObjectKey{
		&appsv1.Deployment{}:     {Namespace: operatorNamespace, Name: s.Name + ".scheduler"},
		&corev1.ServiceAccount{}: {Namespace: operatorNamespace, Name: s.Name + ".scheduler"},
		&corev1.Service{}:        {Namespace: operatorNamespace, Name: "metrics-" + s.Name + "--scheduler"},
		&corev1.ConfigMap{}:      {Namespace: operatorNamespace, Name: s.Status.ConfigMapName},
	}
	for obj, key := range keys {
		if err := k.admin.Get(t.Context(), key, obj); err != nil {
			t.Errorf("Reading %T %s: %v", obj, key, err)
			continue
		}
		if !metav1.IsControlledBy(obj, s) {
			t.Errorf("%T %s is not controlled by Scheduler %s: %v", obj, key, s.Name, obj.GetOwnerReferences())
		}
	}
}

// TestSharedSchedulerNotFoundHeals checks that a profile naming a missing Scheduler says so, runs
// nothing, and runs as soon as the Scheduler is created.
func TestSharedSchedulerNotFoundHeals(t *testing.T) {
	k := suiteCluster()
	k.startOperator(t, cfg)
	sched := uniqueName("later")
	member := sched + "-m"
	k.createProfile(t, testutil.MakeProfile(member).SchedulerRef(sched).Obj())
	p := k.waitForConditions(t, member, conditionWant{schedulingv1alpha1.ConditionAvailable, metav1.ConditionFalse, schedulingv1alpha1.ReasonSchedulerNotFound})
	if msg := findCondition(p, schedulingv1alpha1.ConditionAvailable).Message; !strings.Contains(msg, sched) {
		t.Errorf("Available message %q does not name Scheduler %s", msg, sched)
	}
	k.createScheduler(t, testutil.MakeScheduler(sched).Obj())
	s := k.waitForScheduler(t, sched, "to serve the profile", servesProfiles(member))
	k.markDeploymentAvailable(t, s.Status.DeploymentName)
	k.waitForConditions(t, member, configValid, available)
}

// TestSharedAndDedicatedOfTheSameName runs a Scheduler and a dedicated profile with the same name
// side by side: no object or lease is shared. A profile of the Scheduler that ran alone before
// keeps its own scheduler until the Scheduler serves it, then loses it; a Scheduler whose last
// member leaves runs no Deployment.
func TestSharedAndDedicatedOfTheSameName(t *testing.T) {
	k := suiteCluster()
	k.startOperator(t, cfg)
	name := uniqueName("same")
	k.createProfile(t, testutil.MakeProfile(name).SchedulerName(name+"-alone").Obj())
	dedicated := k.waitForRollout(t, name)
	mover := name + "-mover"
	k.createProfile(t, testutil.MakeProfile(mover).Obj())
	k.waitForRollout(t, mover)

	k.createScheduler(t, testutil.MakeScheduler(name).Obj())
	k.updateProfile(t, mover, func(p *schedulingv1alpha1.SchedulerProfile) {
		p.Spec.SchedulerRef = schedulingv1alpha1.SchedulerReference{Name: name}
	})
	s := k.waitForScheduler(t, name, "to serve the mover", servesProfiles(mover))
	if s.Status.DeploymentName == dedicated.Status.DeploymentName || strings.HasPrefix(s.Status.ConfigMapName, name+"-config-") {
		t.Fatalf("Scheduler %s uses %s and %s, next to the profile's %s", name, s.Status.DeploymentName, s.Status.ConfigMapName, dedicated.Status.DeploymentName)
	}
	d := k.schedulerDeployment(t, s)
	if sa := d.Spec.Template.Spec.ServiceAccountName; sa == name+"-scheduler" {
		t.Errorf("the Scheduler's pods run as the profile's ServiceAccount %s", sa)
	}
	own := &appsv1.Deployment{}
	if err := k.admin.Get(t.Context(), client.ObjectKey{Namespace: operatorNamespace, Name: mover + "-scheduler"}, own); err != nil {
		t.Fatalf("the mover's own scheduler is gone before the Scheduler serves it: %v", err)
	}
	k.markDeploymentAvailable(t, s.Status.DeploymentName)
	ownObjects := ownedKeys(&schedulingv1alpha1.SchedulerProfile{ObjectMeta: metav1.ObjectMeta{Name: mover}}, "")
	testutil.Eventually(t, reconcileTimeout, "the mover's own Deployment and metrics Service to be removed", func(ctx context.Context) error {
		for _, obj := range []client.Object{ownObjects[objDeployment], ownObjects[objService]} {
			err := k.admin.Get(ctx, client.ObjectKeyFromObject(obj), obj.DeepCopyObject().(client.Object))
			if err == nil {
				return fmt.Errorf("%T %s still exists", obj, obj.GetName())
			}
			if !apierrors.IsNotFound(err) {
				return err
			}
		}
		return nil
	})
	if _, err := k.getProfile(t.Context(), name); err != nil {
		t.Fatal(err)
	}
	k.waitForConditions(t, name, configValid)

	k.deleteProfileAndObjects(t, mover)
	k.waitForScheduler(t, name, "to run nothing without members", schedulerCondition(conditionWant{schedulingv1alpha1.ConditionAvailable, metav1.ConditionFalse, schedulingv1alpha1.ReasonNoProfiles}))
	testutil.Eventually(t, reconcileTimeout, "the Scheduler's Deployment to be removed", func(ctx context.Context) error {
		return k.deploymentAbsent(ctx, s.Status.DeploymentName)
	})
}
