package integration

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/retry"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/controllers"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
	"github.com/schedops/scheduler-profile-operator/test/framework"
)

// mostAllocated and invalidScoring are NodeResourcesFit args: valid, and refused by the plugin.
const (
	mostAllocated  = `{"scoringStrategy":{"type":"MostAllocated"}}`
	invalidScoring = `{"scoringStrategy":{"type":"Most"}}`
	// invalidScoringMessage is the validator's message for invalidScoring at pluginConfig[0].
	invalidScoringMessage = `spec.pluginConfig[0].args.scoringStrategy.type: Unsupported value: "Most"`
)

// TestControllerCreatesOwnedObjects creates a profile and checks every object the operator makes
// for it, then plays the Deployment controller and checks the profile becomes Available.
func TestControllerCreatesOwnedObjects(t *testing.T) {
	k := suiteCluster()
	k.startOperator(t, k.cfg)
	name := uniqueName("ctl-create")
	// A schedulerName other than the profile's name shows which of the two each object uses.
	schedulerName := name + "-sched"
	k.createProfile(t, testutil.MakeProfile(name).SchedulerName(schedulerName).Obj())

	p := k.waitForRollout(t, name)
	checkStatusNames(t, p, schedulerName)
	objs := k.waitForOwned(t, p, p.Status.ConfigMapName)
	k.checkOwnedObjects(t, p, schedulerName, objs)
	// No Deployment controller has reported on the new Deployment yet.
	k.waitForConditions(t, name, configValid, rollingOut, notDegraded,
		conditionWant{schedulingv1alpha1.ConditionAvailable, metav1.ConditionFalse, schedulingv1alpha1.ReasonNoReplicasAvailable})

	k.markDeploymentAvailable(t, p.Status.DeploymentName)
	k.waitForConditions(t, name, configValid, available, rolledOut, notDegraded)
}

// TestControllerRollsOutSpecChange changes a profile and checks the change becomes a new
// ConfigMap and a rolling update of the Deployment, keeping the old ConfigMap for the old pods.
func TestControllerRollsOutSpecChange(t *testing.T) {
	k := suiteCluster()
	k.startOperator(t, k.cfg)
	name := uniqueName("ctl-change")
	k.createProfile(t, testutil.MakeProfile(name).Obj())
	before := k.waitForRollout(t, name)
	k.markDeploymentAvailable(t, before.Status.DeploymentName)
	k.waitForConditions(t, name, configValid, available, rolledOut)

	k.updateProfile(t, name, func(p *schedulingv1alpha1.SchedulerProfile) {
		p.Spec.PluginConfig = []schedulingv1alpha1.PluginConfig{{Name: "NodeResourcesFit", Args: runtime.RawExtension{Raw: []byte(mostAllocated)}}}
	})
	after := k.waitForRollout(t, name)
	if after.Status.ConfigHash == before.Status.ConfigHash || after.Status.ConfigMapName == before.Status.ConfigMapName {
		t.Fatalf("The change kept configHash %s and configMapName %s", after.Status.ConfigHash, after.Status.ConfigMapName)
	}
	objs := k.waitForOwned(t, after, after.Status.ConfigMapName)
	k.checkOwnedObjects(t, after, name, objs)
	if config := objs[objConfigMap].(*corev1.ConfigMap).Data["config.yaml"]; !strings.Contains(config, "MostAllocated") {
		t.Errorf("The new configuration lacks the change:\n%s", config)
	}
	d := objs[objDeployment].(*appsv1.Deployment)
	if got := d.Spec.Template.Annotations[schedulingv1alpha1.AnnotationConfigHash]; got != after.Status.ConfigHash {
		t.Errorf("The pod template's hash is %q, want the new %q", got, after.Status.ConfigHash)
	}
	old := &corev1.ConfigMap{}
	if err := k.admin.Get(t.Context(), client.ObjectKey{Namespace: operatorNamespace, Name: before.Status.ConfigMapName}, old); err != nil {
		t.Errorf("The previous ConfigMap %s, which the old pods mount: %v", before.Status.ConfigMapName, err)
	}
	// The Deployment controller has not seen the new template yet.
	k.waitForConditions(t, name, configValid, rollingOut, available)
	k.waitForEvent(t, after, corev1.EventTypeNormal, "RolloutStarted", after.Status.ConfigMapName)

	k.markDeploymentAvailable(t, after.Status.DeploymentName)
	k.waitForConditions(t, name, configValid, available, rolledOut, notDegraded)
}

// cachedClientWithLog starts a manager without controllers and returns it with a client that
// reads through its cache, as the operator's client does, and records its requests in requests.
func (k *cluster) cachedClientWithLog(t *testing.T, requests *testutil.RequestLog) (ctrl.Manager, client.WithWatch) {
	t.Helper()
	mgr := framework.StartManager(t, k.cfg, operatorOptions).Manager
	c, err := client.NewWithWatch(requests.Wrap(k.cfg), client.Options{
		Scheme: mgr.GetScheme(),
		Mapper: mgr.GetRESTMapper(),
		Cache:  &client.CacheOptions{Reader: mgr.GetCache()},
	})
	if err != nil {
		t.Fatalf("Creating the client: %v", err)
	}
	return mgr, c
}

// TestControllerSteadyStateWritesNothing runs the reconciler by hand, through the manager's cache
// as in production, and counts its writes: once the profile's objects and status are settled, a
// pass makes no write request and emits no event, and no object changes its resourceVersion.
// No controller runs, so every pass is one that the test started, and the test waits for the
// cache to hold what the apiserver holds before each pass: the counts are deterministic.
func TestControllerSteadyStateWritesNothing(t *testing.T) {
	k := suiteCluster()
	k.ensureOperatorNamespace(t)
	var requests testutil.RequestLog
	mgr, base := k.cachedClientWithLog(t, &requests)
	var calls writeLog
	recorder := events.NewFakeRecorder(100)
	r := controllers.NewSchedulerProfileReconciler(countWrites(base, &calls), nil, recorder, operatorNamespace, testImage)

	name := uniqueName("ctl-steady")
	k.createProfile(t, testutil.MakeProfile(name).Replicas(2).PluginConfig("NodeResourcesFit", mostAllocated).Obj())
	type result struct {
		calls, writeRequests, events []string
		requests                     int
	}
	pass := func() result {
		t.Helper()
		k.waitForCache(t, mgr.GetCache(), name)
		ctx := ctrl.LoggerInto(t.Context(), mgr.GetLogger())
		if _, err := r.Reconcile(ctx, ctrl.Request{NamespacedName: types.NamespacedName{Name: name}}); err != nil {
			t.Fatalf("Reconcile: %v", err)
		}
		var res result
		res.calls = calls.take()
		res.writeRequests, res.requests = requests.Take()
		for len(recorder.Events) > 0 {
			res.events = append(res.events, <-recorder.Events)
		}
		return res
	}

	first := pass()
	t.Logf("Pass 1 (creation): %d write calls, %d write requests, %d events", len(first.calls), len(first.writeRequests), len(first.events))
	if len(first.calls) == 0 || len(first.writeRequests) != len(first.calls) {
		t.Fatalf("Pass 1 made %d write calls and %d write requests, want the same positive number:\ncalls %q\nrequests %q", len(first.calls), len(first.writeRequests), first.calls, first.writeRequests)
	}

	p, err := k.getProfile(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	k.markDeploymentAvailable(t, p.Status.DeploymentName)
	second := pass()
	t.Logf("Pass 2 (the Deployment became available): write calls %q, events %q", second.calls, second.events)
	// The status is written with the answer asked for as metadata only: the pass needs nothing
	// else of it.
	wantStatusOnly := []string{fmt.Sprintf("status patch *v1.PartialObjectMetadata /%s", name)}
	if diff := cmp.Diff(wantStatusOnly, second.calls); diff != "" {
		t.Errorf("Pass 2 should write only the status (-want +got):\n%s", diff)
	}

	p, err = k.getProfile(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	if c := findCondition(p, schedulingv1alpha1.ConditionAvailable); c == nil || c.Status != metav1.ConditionTrue {
		t.Fatalf("After pass 2 the profile is not Available: %s", formatConditions(p))
	}
	objsBefore, err := fetchOwned(t.Context(), k.admin, p, p.Status.ConfigMapName)
	if err != nil {
		t.Fatal(err)
	}
	rvBefore := resourceVersions(objsBefore)
	rvBefore["SchedulerProfile"] = p.ResourceVersion

	third := pass()
	t.Logf("Pass 3 (steady state): %d write calls, %d write requests, %d requests in all, %d events", len(third.calls), len(third.writeRequests), third.requests, len(third.events))
	if len(third.calls) != 0 || len(third.writeRequests) != 0 || len(third.events) != 0 {
		t.Errorf("A steady-state pass wrote:\ncalls %q\nrequests %q\nevents %q", third.calls, third.writeRequests, third.events)
	}
	p, err = k.getProfile(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}
	objsAfter, err := fetchOwned(t.Context(), k.admin, p, p.Status.ConfigMapName)
	if err != nil {
		t.Fatal(err)
	}
	rvAfter := resourceVersions(objsAfter)
	rvAfter["SchedulerProfile"] = p.ResourceVersion
	if diff := cmp.Diff(rvBefore, rvAfter); diff != "" {
		t.Errorf("resourceVersions changed in a steady-state pass (-before +after):\n%s", diff)
	}
}

// TestControllerRefusesInvalidChange makes a running profile invalid: the status says why, a
// Warning event is emitted, and nothing that runs is touched. Fixing the profile rolls it out.
func TestControllerRefusesInvalidChange(t *testing.T) {
	k := suiteCluster()
	k.startOperator(t, k.cfg)
	name := uniqueName("ctl-invalid")
	k.createProfile(t, testutil.MakeProfile(name).Obj())
	good := k.waitForRollout(t, name)
	k.markDeploymentAvailable(t, good.Status.DeploymentName)
	good = k.waitForConditions(t, name, configValid, available, rolledOut, notDegraded)
	objs := k.waitForOwned(t, good, good.Status.ConfigMapName)
	rvBefore := resourceVersions(objs)
	cmsBefore, err := k.profileConfigMaps(t.Context(), name)
	if err != nil {
		t.Fatal(err)
	}

	generation := k.updateProfile(t, name, func(p *schedulingv1alpha1.SchedulerProfile) {
		p.Spec.PluginConfig = []schedulingv1alpha1.PluginConfig{{Name: "NodeResourcesFit", Args: runtime.RawExtension{Raw: []byte(invalidScoring)}}}
	})
	bad := k.waitForConditions(t, name,
		conditionWant{schedulingv1alpha1.ConditionConfigValid, metav1.ConditionFalse, schedulingv1alpha1.ReasonInvalidConfig},
		conditionWant{schedulingv1alpha1.ConditionDegraded, metav1.ConditionTrue, schedulingv1alpha1.ReasonInvalidConfigNotRolledOut},
		available, rolledOut)
	if msg := findCondition(bad, schedulingv1alpha1.ConditionConfigValid).Message; !strings.Contains(msg, invalidScoringMessage) {
		t.Errorf("ConfigValid message %q does not contain %q", msg, invalidScoringMessage)
	}
	// The status keeps describing what runs.
	if bad.Status.ObservedGeneration != good.Generation || bad.Status.ConfigHash != good.Status.ConfigHash || bad.Status.ConfigMapName != good.Status.ConfigMapName {
		t.Errorf("An invalid generation %d changed the status from %+v to %+v", generation, good.Status, bad.Status)
	}
	k.waitForEvent(t, bad, corev1.EventTypeWarning, schedulingv1alpha1.ReasonInvalidConfig, invalidScoringMessage)
	// Nothing of the running scheduler was written, nor is later.
	testutil.Consistently(t, 2*time.Second, "the objects of "+name+" unchanged", func(ctx context.Context) error {
		objs, err := fetchOwned(ctx, k.admin, bad, good.Status.ConfigMapName)
		if err != nil {
			return err
		}
		if diff := cmp.Diff(rvBefore, resourceVersions(objs)); diff != "" {
			return fmt.Errorf("resourceVersions changed (-before +after):\n%s", diff)
		}
		if cms, err := k.profileConfigMaps(ctx, name); err != nil || !slices.Equal(cms, cmsBefore) {
			return fmt.Errorf("ConfigMaps changed from %v to %v (%v)", cmsBefore, cms, err)
		}
		return nil
	})

	k.updateProfile(t, name, func(p *schedulingv1alpha1.SchedulerProfile) {
		p.Spec.PluginConfig[0].Args.Raw = []byte(mostAllocated)
	})
	fixed := k.waitForRollout(t, name)
	k.waitForConditions(t, name, configValid, notDegraded, rollingOut, available)
	if fixed.Status.ConfigHash == good.Status.ConfigHash {
		t.Errorf("The fixed profile kept the configHash %s", good.Status.ConfigHash)
	}
	objs = k.waitForOwned(t, fixed, fixed.Status.ConfigMapName)
	k.checkOwnedObjects(t, fixed, name, objs)
}

// TestControllerSchedulerNameConflict creates two profiles with the same schedulerName: the
// younger is refused and runs nothing, until the older is deleted.
func TestControllerSchedulerNameConflict(t *testing.T) {
	k := suiteCluster()
	k.startOperator(t, k.cfg)
	prefix := uniqueName("ctl-conflict")
	shared := prefix + "-sched"
	// creationTimestamp has a resolution of one second, so both may have the same; the
	// reconciler then keeps the name for the profile whose name sorts first, which is also the
	// one created first.
	older, younger := prefix+"-a", prefix+"-b"
	k.createProfile(t, testutil.MakeProfile(older).SchedulerName(shared).Obj())
	k.createProfile(t, testutil.MakeProfile(younger).SchedulerName(shared).Obj())

	k.waitForRollout(t, older)
	p := k.waitForConditions(t, younger,
		conditionWant{schedulingv1alpha1.ConditionConfigValid, metav1.ConditionFalse, schedulingv1alpha1.ReasonSchedulerNameConflict},
		conditionWant{schedulingv1alpha1.ConditionAvailable, metav1.ConditionFalse, schedulingv1alpha1.ReasonNotRolledOut})
	if msg := findCondition(p, schedulingv1alpha1.ConditionConfigValid).Message; !strings.Contains(msg, fmt.Sprintf("%q", older)) {
		t.Errorf("The conflict message %q does not name %s", msg, older)
	}
	if p.Status.SchedulerName != shared || p.Status.DeploymentName != "" || p.Status.ConfigHash != "" {
		t.Errorf("Status of the refused profile: %+v", p.Status)
	}
	k.waitForEvent(t, p, corev1.EventTypeWarning, schedulingv1alpha1.ReasonSchedulerNameConflict, older)
	testutil.Consistently(t, 2*time.Second, "nothing of "+younger+" runs", func(ctx context.Context) error {
		d := &appsv1.Deployment{}
		err := k.admin.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: younger + "-scheduler"}, d)
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("the Deployment of the refused profile: %v", err)
		}
		if cms, err := k.profileConfigMaps(ctx, younger); err != nil || len(cms) > 0 {
			return fmt.Errorf("the refused profile has ConfigMaps %v (%v)", cms, err)
		}
		return nil
	})

	// The older profile's scheduler serves the name until its Deployment is gone, deleted or
	// not: the younger profile waits for it. No garbage collector runs here, so the test removes
	// the Deployment as the collector would.
	if err := k.admin.Delete(t.Context(), &schedulingv1alpha1.SchedulerProfile{ObjectMeta: metav1.ObjectMeta{Name: older}}); err != nil {
		t.Fatalf("Deleting %s: %v", older, err)
	}
	testutil.Consistently(t, 2*time.Second, younger+" waits while the deleted profile's Deployment serves the name", func(ctx context.Context) error {
		return k.deploymentAbsent(ctx, younger+"-scheduler")
	})
	k.deleteObjectsOf(t.Context(), t, schedulingv1alpha1.LabelProfile, older)
	p = k.waitForRollout(t, younger)
	checkStatusNames(t, p, shared)
	k.checkOwnedObjects(t, p, shared, k.waitForOwned(t, p, p.Status.ConfigMapName))
}

// TestControllerRepairsDrift changes the objects of a profile behind the operator's back: a
// deleted ConfigMap is recreated, container args edited by another field manager are restored,
// and a deleted RoleBinding comes back.
func TestControllerRepairsDrift(t *testing.T) {
	k := suiteCluster()
	k.startOperator(t, k.cfg)
	name := uniqueName("ctl-drift")
	k.createProfile(t, testutil.MakeProfile(name).Obj())
	p := k.waitForRollout(t, name)
	objs := k.waitForOwned(t, p, p.Status.ConfigMapName)

	t.Run("deleted ConfigMap", func(t *testing.T) {
		cm := objs[objConfigMap].(*corev1.ConfigMap)
		if err := k.admin.Delete(t.Context(), cm); err != nil {
			t.Fatalf("Deleting ConfigMap %s: %v", cm.Name, err)
		}
		testutil.Eventually(t, reconcileTimeout, "ConfigMap "+cm.Name+" to be recreated", func(ctx context.Context) error {
			got := &corev1.ConfigMap{}
			if err := k.admin.Get(ctx, client.ObjectKeyFromObject(cm), got); err != nil {
				return err
			}
			if got.UID == cm.UID {
				return fmt.Errorf("still the deleted ConfigMap")
			}
			if diff := cmp.Diff(cm.Data, got.Data); diff != "" {
				return fmt.Errorf("data differs (-deleted +recreated):\n%s", diff)
			}
			return nil
		})
	})

	t.Run("edited Deployment", func(t *testing.T) {
		key := client.ObjectKeyFromObject(objs[objDeployment])
		want := objs[objDeployment].(*appsv1.Deployment).Spec.Template.Spec.Containers[0].Args
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			d := &appsv1.Deployment{}
			if err := k.admin.Get(t.Context(), key, d); err != nil {
				return err
			}
			d.Spec.Template.Spec.Containers[0].Args = []string{"--config=/tmp/hand-written.yaml"}
			return k.admin.Update(t.Context(), d, client.FieldOwner("drift-test"))
		})
		if err != nil {
			t.Fatalf("Editing Deployment %s: %v", key, err)
		}
		testutil.Eventually(t, reconcileTimeout, "the container args of "+key.String()+" to be restored", func(ctx context.Context) error {
			d := &appsv1.Deployment{}
			if err := k.admin.Get(ctx, key, d); err != nil {
				return err
			}
			if diff := cmp.Diff(want, d.Spec.Template.Spec.Containers[0].Args); diff != "" {
				return fmt.Errorf("args (-want +got):\n%s", diff)
			}
			return nil
		})
	})

	t.Run("deleted lease RoleBinding", func(t *testing.T) {
		rb := objs[objLeaseRoleBinding].(*rbacv1.RoleBinding)
		if err := k.admin.Delete(t.Context(), rb); err != nil {
			t.Fatalf("Deleting RoleBinding %s: %v", rb.Name, err)
		}
		testutil.Eventually(t, reconcileTimeout, "RoleBinding "+rb.Name+" to be recreated", func(ctx context.Context) error {
			got := &rbacv1.RoleBinding{}
			if err := k.admin.Get(ctx, client.ObjectKeyFromObject(rb), got); err != nil {
				return err
			}
			if got.UID == rb.UID {
				return fmt.Errorf("still the deleted RoleBinding")
			}
			if diff := cmp.Diff(rb.RoleRef, got.RoleRef); diff != "" {
				return fmt.Errorf("roleRef (-deleted +recreated):\n%s", diff)
			}
			if diff := cmp.Diff(rb.Subjects, got.Subjects); diff != "" {
				return fmt.Errorf("subjects (-deleted +recreated):\n%s", diff)
			}
			return nil
		})
	})

	// After the repairs everything is as the operator made it.
	p = k.waitForRollout(t, name)
	k.checkOwnedObjects(t, p, name, k.waitForOwned(t, p, p.Status.ConfigMapName))
}

// TestControllerRenameOntoServedName renames an older profile onto the scheduler name that a
// younger one serves: the older is refused, names the profile that serves it, and keeps running
// its old name; once the younger has renamed away, the older gets the name. At no point do the
// two Deployments run a configuration with the same name.
func TestControllerRenameOntoServedName(t *testing.T) {
	k := suiteCluster()
	k.startOperator(t, k.cfg)
	prefix := uniqueName("ctl-rename")
	older, younger := prefix+"-a", prefix+"-b"
	first, taken, other := prefix+"-x", prefix+"-y", prefix+"-z"
	k.createProfile(t, testutil.MakeProfile(older).SchedulerName(first).Obj())
	k.waitForRollout(t, older)
	k.createProfile(t, testutil.MakeProfile(younger).SchedulerName(taken).Obj())
	k.waitForRollout(t, younger)
	hashOf := func(name string) string {
		return k.liveDeployment(t, name+"-scheduler").Spec.Template.Annotations[schedulingv1alpha1.AnnotationConfigHash]
	}
	olderHash, youngerHash := hashOf(older), hashOf(younger)

	k.updateProfile(t, older, func(p *schedulingv1alpha1.SchedulerProfile) { p.Spec.SchedulerName = taken })
	p := k.waitForConditions(t, older,
		conditionWant{schedulingv1alpha1.ConditionConfigValid, metav1.ConditionFalse, schedulingv1alpha1.ReasonSchedulerNameConflict})
	want := fmt.Sprintf("schedulerName %q is served by the scheduler of SchedulerProfile %q", taken, younger)
	if msg := findCondition(p, schedulingv1alpha1.ConditionConfigValid).Message; !strings.Contains(msg, want) {
		t.Errorf("The conflict message %q does not say %q", msg, want)
	}
	testutil.Consistently(t, 2*time.Second, "both schedulers keep their configurations", func(ctx context.Context) error {
		if got := hashOf(older); got != olderHash {
			return fmt.Errorf("the refused profile's scheduler changed its configuration to %s", got)
		}
		if got := hashOf(younger); got != youngerHash {
			return fmt.Errorf("the serving profile's scheduler changed its configuration to %s", got)
		}
		return nil
	})

	k.updateProfile(t, younger, func(p *schedulingv1alpha1.SchedulerProfile) { p.Spec.SchedulerName = other })
	k.waitForRollout(t, younger)
	p = k.waitForRollout(t, older)
	checkStatusNames(t, p, taken)
	entries, _ := k.configEntries(t, p.Status.ConfigMapName)
	if _, ok := entries[taken]; !ok || len(entries) != 1 {
		t.Errorf("The configuration of %s serves %v, want only %s", older, entries, taken)
	}
}
