package integration

import (
	"context"
	"fmt"
	"maps"
	"path"
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
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/controllers"
)

// Conditions the tests wait for.
var (
	configValid = conditionWant{schedulingv1alpha1.ConditionConfigValid, metav1.ConditionTrue, schedulingv1alpha1.ReasonConfigAccepted}
	available   = conditionWant{schedulingv1alpha1.ConditionAvailable, metav1.ConditionTrue, schedulingv1alpha1.ReasonMinimumReplicasAvailable}
	rolledOut   = conditionWant{schedulingv1alpha1.ConditionProgressing, metav1.ConditionFalse, schedulingv1alpha1.ReasonRolloutComplete}
	rollingOut  = conditionWant{schedulingv1alpha1.ConditionProgressing, metav1.ConditionTrue, schedulingv1alpha1.ReasonRollingOut}
	notDegraded = conditionWant{schedulingv1alpha1.ConditionDegraded, metav1.ConditionFalse, schedulingv1alpha1.ReasonAsExpected}
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
	k.createProfile(t, makeProfile(name).schedulerName(schedulerName).obj())

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

// checkStatusNames checks the names a reconciled profile's status reports.
func checkStatusNames(t *testing.T, p *schedulingv1alpha1.SchedulerProfile, schedulerName string) {
	t.Helper()
	st := p.Status
	if st.ConfigHash == "" {
		t.Fatalf("status.configHash is empty: %+v", st)
	}
	want := schedulingv1alpha1.SchedulerProfileStatus{
		ObservedGeneration: p.Generation,
		SchedulerName:      schedulerName,
		ConfigHash:         st.ConfigHash,
		ConfigMapName:      p.Name + "-config-" + st.ConfigHash,
		DeploymentName:     p.Name + "-scheduler",
		Conditions:         st.Conditions,
	}
	if diff := cmp.Diff(want, st); diff != "" {
		t.Errorf("Status of %s (-want +got):\n%s", p.Name, diff)
	}
}

// checkOwnedObjects checks the objects of a reconciled profile p: owner references, the
// scheduler's RBAC, its configuration and its Deployment.
func (k *cluster) checkOwnedObjects(t *testing.T, p *schedulingv1alpha1.SchedulerProfile, schedulerName string, objs map[string]client.Object) {
	t.Helper()
	for _, what := range slices.Sorted(maps.Keys(objs)) {
		checkControlledBy(t, p, what, objs[what])
	}
	k.checkSchedulerRBAC(t, p, schedulerName, objs)
	cm := objs[objConfigMap].(*corev1.ConfigMap)
	checkConfigMap(t, p, schedulerName, cm, objs[objLeaseRole].(*rbacv1.Role))
	checkDeployment(t, p, cm, objs[objDeployment].(*appsv1.Deployment))
}

// checkControlledBy checks that obj has p as its controller, so that deleting p collects it.
func checkControlledBy(t *testing.T, p *schedulingv1alpha1.SchedulerProfile, what string, obj client.Object) {
	t.Helper()
	want := []metav1.OwnerReference{{
		APIVersion:         schedulingv1alpha1.GroupVersion.String(),
		Kind:               "SchedulerProfile",
		Name:               p.Name,
		UID:                p.UID,
		Controller:         ptr.To(true),
		BlockOwnerDeletion: ptr.To(true),
	}}
	if diff := cmp.Diff(want, obj.GetOwnerReferences()); diff != "" {
		t.Errorf("Owner references of %s %s (-want +got):\n%s", what, obj.GetName(), diff)
	}
	if got := obj.GetLabels()[controllers.LabelProfile]; got != p.Name {
		t.Errorf("%s %s has label %s=%q, want %q", what, obj.GetName(), controllers.LabelProfile, got, p.Name)
	}
}

// checkSchedulerRBAC checks that the scheduler's ServiceAccount is bound to the bootstrap roles of
// kube-scheduler (which exist: the bindings are not dangling) and to a Role for its own lease.
func (k *cluster) checkSchedulerRBAC(t *testing.T, p *schedulingv1alpha1.SchedulerProfile, schedulerName string, objs map[string]client.Object) {
	t.Helper()
	ctx := t.Context()
	sa := objs[objServiceAccount].(*corev1.ServiceAccount)
	subjects := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa.Name, Namespace: sa.Namespace}}
	roleRef := func(kind, name string) rbacv1.RoleRef {
		return rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: kind, Name: name}
	}
	bindings := []struct {
		what      string
		namespace string
		roleRef   rbacv1.RoleRef
		got       func() (rbacv1.RoleRef, []rbacv1.Subject, string)
	}{
		{what: objKubeSchedulerBinding, roleRef: roleRef("ClusterRole", "system:kube-scheduler")},
		{what: objVolumeSchedulerBinding, roleRef: roleRef("ClusterRole", "system:volume-scheduler")},
		{what: objAuthReaderBinding, namespace: "kube-system", roleRef: roleRef("Role", "extension-apiserver-authentication-reader")},
		{what: objLeaseRoleBinding, namespace: operatorNamespace, roleRef: roleRef("Role", p.Name+"-scheduler-lease")},
	}
	for _, b := range bindings {
		var gotRef rbacv1.RoleRef
		var gotSubjects []rbacv1.Subject
		switch o := objs[b.what].(type) {
		case *rbacv1.ClusterRoleBinding:
			gotRef, gotSubjects = o.RoleRef, o.Subjects
		case *rbacv1.RoleBinding:
			gotRef, gotSubjects = o.RoleRef, o.Subjects
			if o.Namespace != b.namespace {
				t.Errorf("%s %s is in namespace %q, want %q", b.what, o.Name, o.Namespace, b.namespace)
			}
		}
		if diff := cmp.Diff(b.roleRef, gotRef); diff != "" {
			t.Errorf("roleRef of %s (-want +got):\n%s", b.what, diff)
		}
		if diff := cmp.Diff(subjects, gotSubjects); diff != "" {
			t.Errorf("Subjects of %s (-want +got):\n%s", b.what, diff)
		}
		var role client.Object = &rbacv1.ClusterRole{}
		if b.roleRef.Kind == "Role" {
			role = &rbacv1.Role{}
		}
		if err := k.admin.Get(ctx, client.ObjectKey{Namespace: b.namespace, Name: b.roleRef.Name}, role); err != nil {
			t.Errorf("The %s %s that %s refers to: %v", b.roleRef.Kind, b.roleRef.Name, b.what, err)
		}
	}

	wantRules := []rbacv1.PolicyRule{{
		APIGroups:     []string{"coordination.k8s.io"},
		Resources:     []string{"leases"},
		ResourceNames: []string{schedulerName},
		Verbs:         []string{"get", "update"},
	}}
	if diff := cmp.Diff(wantRules, objs[objLeaseRole].(*rbacv1.Role).Rules); diff != "" {
		t.Errorf("Rules of the lease Role (-want +got):\n%s", diff)
	}
}

// checkConfigMap checks the rendered configuration: immutable, named and labelled with its hash,
// and electing its leader on the lease that the lease Role grants.
func checkConfigMap(t *testing.T, p *schedulingv1alpha1.SchedulerProfile, schedulerName string, cm *corev1.ConfigMap, leaseRole *rbacv1.Role) {
	t.Helper()
	if cm.Immutable == nil || !*cm.Immutable {
		t.Errorf("ConfigMap %s is not immutable", cm.Name)
	}
	if got := cm.Labels[controllers.LabelConfigHash]; got != p.Status.ConfigHash {
		t.Errorf("ConfigMap %s has label %s=%q, want the status' configHash %q", cm.Name, controllers.LabelConfigHash, got, p.Status.ConfigHash)
	}
	var doc renderedConfig
	if err := yaml.Unmarshal([]byte(cm.Data["config.yaml"]), &doc); err != nil {
		t.Fatalf("Decoding config.yaml of %s: %v", cm.Name, err)
	}
	le := doc.LeaderElection
	if le.ResourceName != schedulerName || le.ResourceNamespace != operatorNamespace {
		t.Errorf("The configuration elects its leader on lease %s/%s, want %s/%s", le.ResourceNamespace, le.ResourceName, operatorNamespace, schedulerName)
	}
	if len(doc.Profiles) != 1 || doc.Profiles[0].SchedulerName != schedulerName {
		t.Errorf("Profiles of the configuration: %+v, want one named %s", doc.Profiles, schedulerName)
	}
	if leaseRole.Namespace != le.ResourceNamespace {
		t.Errorf("The lease Role is in namespace %s, the lease in %s", leaseRole.Namespace, le.ResourceNamespace)
	}
	for _, rule := range leaseRole.Rules {
		if !slices.Equal(rule.ResourceNames, []string{le.ResourceName}) {
			t.Errorf("The lease Role grants %v, but the configuration uses the lease %s", rule.ResourceNames, le.ResourceName)
		}
	}
}

// checkDeployment checks that the scheduler Deployment runs the operator's image with the
// configuration of cm: its --config path resolves into the mounted ConfigMap, and the hash is on
// the pod template.
func checkDeployment(t *testing.T, p *schedulingv1alpha1.SchedulerProfile, cm *corev1.ConfigMap, d *appsv1.Deployment) {
	t.Helper()
	tmpl := d.Spec.Template
	if got := tmpl.Annotations[controllers.AnnotationConfigHash]; got != p.Status.ConfigHash {
		t.Errorf("Pod template annotation %s=%q, want the status' configHash %q", controllers.AnnotationConfigHash, got, p.Status.ConfigHash)
	}
	if got, want := tmpl.Spec.ServiceAccountName, p.Name+"-scheduler"; got != want {
		t.Errorf("serviceAccountName %q, want %q", got, want)
	}
	if len(tmpl.Spec.Containers) != 1 {
		t.Fatalf("The pod template has %d containers, want 1", len(tmpl.Spec.Containers))
	}
	c := tmpl.Spec.Containers[0]
	if c.Image != testImage {
		t.Errorf("Image %q, want the operator's %q", c.Image, testImage)
	}
	configPath := ""
	for _, arg := range c.Args {
		if v, ok := strings.CutPrefix(arg, "--config="); ok {
			configPath = v
		}
	}
	if configPath == "" {
		t.Fatalf("The container args %q have no --config", c.Args)
	}
	mounted := ""
	for _, m := range c.VolumeMounts {
		for _, v := range tmpl.Spec.Volumes {
			if v.Name == m.Name && v.ConfigMap != nil && path.Dir(configPath) == path.Clean(m.MountPath) {
				mounted = v.ConfigMap.Name
			}
		}
	}
	if mounted != cm.Name {
		t.Errorf("--config=%s is in ConfigMap %q, want %q (volumes %+v, mounts %+v)", configPath, mounted, cm.Name, tmpl.Spec.Volumes, c.VolumeMounts)
	}
	if _, ok := cm.Data[path.Base(configPath)]; !ok {
		t.Errorf("ConfigMap %s has no key %s that --config=%s reads", cm.Name, path.Base(configPath), configPath)
	}
}

// TestControllerRollsOutSpecChange changes a profile and checks the change becomes a new
// ConfigMap and a rolling update of the Deployment, keeping the old ConfigMap for the old pods.
func TestControllerRollsOutSpecChange(t *testing.T) {
	k := suiteCluster()
	k.startOperator(t, k.cfg)
	name := uniqueName("ctl-change")
	k.createProfile(t, makeProfile(name).obj())
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
	if got := d.Spec.Template.Annotations[controllers.AnnotationConfigHash]; got != after.Status.ConfigHash {
		t.Errorf("The pod template's hash is %q, want the new %q", got, after.Status.ConfigHash)
	}
	old := &corev1.ConfigMap{}
	if err := k.admin.Get(t.Context(), client.ObjectKey{Namespace: operatorNamespace, Name: before.Status.ConfigMapName}, old); err != nil {
		t.Errorf("The previous ConfigMap %s, which the old pods mount: %v", before.Status.ConfigMapName, err)
	}
	// The Deployment controller has not seen the new template yet.
	k.waitForConditions(t, name, configValid, rollingOut, available)
	eventually(t, reconcileTimeout, "the RolloutStarted event of "+after.Status.ConfigMapName, func(ctx context.Context) error {
		_, err := k.findEvent(ctx, after, corev1.EventTypeNormal, "RolloutStarted", after.Status.ConfigMapName)
		return err
	})

	k.markDeploymentAvailable(t, after.Status.DeploymentName)
	k.waitForConditions(t, name, configValid, available, rolledOut, notDegraded)
}

// TestControllerSteadyStateWritesNothing runs the reconciler by hand, through the manager's cache
// as in production, and counts its writes: once the profile's objects and status are settled, a
// pass makes no write request and emits no event, and no object changes its resourceVersion.
// No controller runs, so every pass is one that the test started, and the test waits for the
// cache to hold what the apiserver holds before each pass: the counts are deterministic.
func TestControllerSteadyStateWritesNothing(t *testing.T) {
	k := suiteCluster()
	k.ensureOperatorNamespace(t)
	mgr, _ := newManager(t, k.cfg)
	runManager(t, mgr)
	var requests requestLog
	base, err := client.NewWithWatch(requests.wrap(k.cfg), client.Options{
		Scheme: mgr.GetScheme(),
		Mapper: mgr.GetRESTMapper(),
		Cache:  &client.CacheOptions{Reader: mgr.GetCache()},
	})
	if err != nil {
		t.Fatalf("Creating the client: %v", err)
	}
	var calls writeLog
	recorder := events.NewFakeRecorder(100)
	r := controllers.NewSchedulerProfileReconciler(countWrites(base, &calls), recorder, operatorNamespace, testImage)

	name := uniqueName("ctl-steady")
	k.createProfile(t, makeProfile(name).replicas(2).pluginConfig("NodeResourcesFit", mostAllocated).obj())
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
		res.writeRequests, res.requests = requests.take()
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
	wantStatusOnly := []string{fmt.Sprintf("status patch *v1alpha1.SchedulerProfile /%s", name)}
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
	k.createProfile(t, makeProfile(name).obj())
	good := k.waitForRollout(t, name)
	k.markDeploymentAvailable(t, good.Status.DeploymentName)
	good = k.waitForConditions(t, name, configValid, available, rolledOut, notDegraded)
	objs := k.waitForOwned(t, good, good.Status.ConfigMapName)
	rvBefore := resourceVersions(objs)
	cmsBefore := k.profileConfigMaps(t, name)

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
	eventually(t, reconcileTimeout, "a Warning event InvalidConfig", func(ctx context.Context) error {
		_, err := k.findEvent(ctx, bad, corev1.EventTypeWarning, schedulingv1alpha1.ReasonInvalidConfig, invalidScoringMessage)
		return err
	})
	// Nothing of the running scheduler was written, nor is later.
	consistently(t, 2*time.Second, "the objects of "+name+" unchanged", func(ctx context.Context) error {
		objs, err := fetchOwned(ctx, k.admin, bad, good.Status.ConfigMapName)
		if err != nil {
			return err
		}
		if diff := cmp.Diff(rvBefore, resourceVersions(objs)); diff != "" {
			return fmt.Errorf("resourceVersions changed (-before +after):\n%s", diff)
		}
		if cms := k.profileConfigMaps(t, name); !slices.Equal(cms, cmsBefore) {
			return fmt.Errorf("ConfigMaps changed from %v to %v", cmsBefore, cms)
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

// profileConfigMaps returns the names of the ConfigMaps of profile name.
func (k *cluster) profileConfigMaps(t *testing.T, name string) []string {
	t.Helper()
	var list corev1.ConfigMapList
	if err := k.admin.List(t.Context(), &list, client.InNamespace(operatorNamespace), client.MatchingLabels{controllers.LabelProfile: name}); err != nil {
		t.Fatalf("Listing the ConfigMaps of %s: %v", name, err)
	}
	var names []string
	for _, cm := range list.Items {
		names = append(names, cm.Name)
	}
	slices.Sort(names)
	return names
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
	k.createProfile(t, makeProfile(older).schedulerName(shared).obj())
	k.createProfile(t, makeProfile(younger).schedulerName(shared).obj())

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
	eventually(t, reconcileTimeout, "a Warning event SchedulerNameConflict", func(ctx context.Context) error {
		_, err := k.findEvent(ctx, p, corev1.EventTypeWarning, schedulingv1alpha1.ReasonSchedulerNameConflict, older)
		return err
	})
	consistently(t, 2*time.Second, "nothing of "+younger+" runs", func(ctx context.Context) error {
		d := &appsv1.Deployment{}
		err := k.admin.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: younger + "-scheduler"}, d)
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("the Deployment of the refused profile: %v", err)
		}
		if cms := k.profileConfigMaps(t, younger); len(cms) > 0 {
			return fmt.Errorf("the refused profile has ConfigMaps %v", cms)
		}
		return nil
	})

	// No garbage collector runs: the older profile's objects stay, which is fine for this test.
	if err := k.admin.Delete(t.Context(), &schedulingv1alpha1.SchedulerProfile{ObjectMeta: metav1.ObjectMeta{Name: older}}); err != nil {
		t.Fatalf("Deleting %s: %v", older, err)
	}
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
	k.createProfile(t, makeProfile(name).obj())
	p := k.waitForRollout(t, name)
	objs := k.waitForOwned(t, p, p.Status.ConfigMapName)

	t.Run("deleted ConfigMap", func(t *testing.T) {
		cm := objs[objConfigMap].(*corev1.ConfigMap)
		if err := k.admin.Delete(t.Context(), cm); err != nil {
			t.Fatalf("Deleting ConfigMap %s: %v", cm.Name, err)
		}
		eventually(t, reconcileTimeout, "ConfigMap "+cm.Name+" to be recreated", func(ctx context.Context) error {
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
		eventually(t, reconcileTimeout, "the container args of "+key.String()+" to be restored", func(ctx context.Context) error {
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
		eventually(t, reconcileTimeout, "RoleBinding "+rb.Name+" to be recreated", func(ctx context.Context) error {
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
