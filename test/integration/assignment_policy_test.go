package integration

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/controllers"
	"github.com/schedops/scheduler-profile-operator/controllers/assignment"
	"github.com/schedops/scheduler-profile-operator/internal/operatorenv"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
)

// assignTimeout bounds the wait for the apiserver to evaluate a changed policy or its params:
// its informers see a change a moment after it is written.
const assignTimeout = 60 * time.Second

// runSchedulerPod creates a pod of the Deployment's current template, running and ready, as the
// ReplicaSet controller and a kubelet would: the scheduler serves its names from then on.
func (k *cluster) runSchedulerPod(t *testing.T, deployment, suffix string) *corev1.Pod {
	t.Helper()
	ctx := t.Context()
	d := &appsv1.Deployment{}
	if err := k.admin.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: deployment}, d); err != nil {
		t.Fatalf("Reading Deployment %s: %v", deployment, err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: operatorNamespace, Name: deployment + "-" + suffix,
			Labels: d.Spec.Template.Labels, Annotations: d.Spec.Template.Annotations},
		Spec: d.Spec.Template.Spec,
	}
	pod.Spec.NodeName = "node-0"
	if err := k.admin.Create(ctx, pod); err != nil {
		t.Fatalf("Creating pod %s: %v", pod.Name, err)
	}
	t.Cleanup(func() { _ = k.admin.Delete(context.Background(), pod, client.GracePeriodSeconds(0)) })
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
	if err := k.admin.Status().Update(ctx, pod); err != nil {
		t.Fatalf("Marking pod %s ready: %v", pod.Name, err)
	}
	if err := testutil.MarkDeploymentAvailable(ctx, k.admin, client.ObjectKeyFromObject(d)); err != nil {
		t.Fatal(err)
	}
	return pod
}

// servedProfile creates a profile and runs its scheduler, and waits until its status says that
// it is served.
func (k *cluster) servedProfile(t *testing.T, p *schedulingv1alpha1.SchedulerProfile) *schedulingv1alpha1.SchedulerProfile {
	t.Helper()
	k.createProfile(t, p)
	rolled := k.waitForRollout(t, p.Name)
	k.runSchedulerPod(t, rolled.Status.DeploymentName, "0")
	return k.waitForServed(t, p.Name, rolled.Status.SchedulerName)
}

// waitForServed waits until a profile's status.servedSchedulerName is want.
func (k *cluster) waitForServed(t *testing.T, name, want string) *schedulingv1alpha1.SchedulerProfile {
	t.Helper()
	var p *schedulingv1alpha1.SchedulerProfile
	k.waitForProfile(t, name, "servedSchedulerName "+want, func(got *schedulingv1alpha1.SchedulerProfile) error {
		p = got
		if got.Status.ServedSchedulerName != want {
			return fmt.Errorf("servedSchedulerName is %q", got.Status.ServedSchedulerName)
		}
		return nil
	})
	return p
}

// assignedNamespace creates a namespace with labels (key, value pairs), deleted when the test ends.
func (k *cluster) assignedNamespace(t *testing.T, prefix string, kv ...string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: uniqueName(prefix), Labels: map[string]string{}}}
	for i := 0; i+1 < len(kv); i += 2 {
		ns.Labels[kv[i]] = kv[i+1]
	}
	if err := k.admin.Create(t.Context(), ns); err != nil {
		t.Fatalf("Creating namespace: %v", err)
	}
	t.Cleanup(func() { _ = k.admin.Delete(context.Background(), ns) })
	return ns.Name
}

// dryRunPod creates pod with dry run and returns what the apiserver made of it.
func dryRunPod(ctx context.Context, c client.Client, pod *corev1.Pod) (*corev1.Pod, error) {
	pod = pod.DeepCopy()
	err := c.Create(ctx, pod, client.DryRunAll)
	return pod, err
}

// waitForAssignment waits until a dry-run pod made by mk gets the scheduler name and annotation.
func (k *cluster) waitForAssignment(t *testing.T, what string, mk func() *corev1.Pod, wantScheduler, wantNote string) {
	t.Helper()
	testutil.Eventually(t, assignTimeout, what, func(ctx context.Context) error {
		got, err := dryRunPod(ctx, k.admin, mk())
		if err != nil {
			return err
		}
		if got.Spec.SchedulerName != wantScheduler || got.Annotations[schedulingv1alpha1.AnnotationAssignment] != wantNote {
			return fmt.Errorf("scheduler %q, annotation %q; want %q, %q", got.Spec.SchedulerName, got.Annotations[schedulingv1alpha1.AnnotationAssignment], wantScheduler, wantNote)
		}
		return nil
	})
}

// TestAssignmentPolicy: the apiserver assigns the pods of labelled namespaces through the
// operator's MutatingAdmissionPolicy, with no webhook server anywhere. A pod gets the served
// name and the annotation; one that names a scheduler, is bound or is a DaemonSet's keeps what it
// has; a name nobody serves falls back with a warning; dry-run only annotates. A rename that is
// held (here: invalid) keeps the old name served and the new one not; while the operator is
// stopped, pods are still assigned; a deleted profile's name falls back.
func TestAssignmentPolicy(t *testing.T) {
	k := suiteCluster()
	op := k.startOperator(t, k.cfg)
	name := uniqueName("assign")
	p := k.servedProfile(t, testutil.MakeProfile(name).Obj())

	labelled := k.assignedNamespace(t, "assign-labelled", schedulingv1alpha1.LabelAssignSchedulerName, name)
	dryRun := k.assignedNamespace(t, "assign-dry-run", schedulingv1alpha1.LabelAssignSchedulerName, name, schedulingv1alpha1.LabelAssignMode, schedulingv1alpha1.AssignModeDryRun)
	missing := k.assignedNamespace(t, "assign-missing", schedulingv1alpha1.LabelAssignSchedulerName, "assign-nobody")
	unknownMode := k.assignedNamespace(t, "assign-mode", schedulingv1alpha1.LabelAssignSchedulerName, name, schedulingv1alpha1.LabelAssignMode, "sometimes")
	plain := k.assignedNamespace(t, "assign-plain")
	k.waitForAssignment(t, "the policy to assign "+labelled, func() *corev1.Pod { return testutil.MakePod("probe", labelled).Obj() }, name, "assigned")
	// The SchedulerProfile CRD owns the policy: an uninstall, which deletes the CRD, deletes it.
	policy := &admissionregistrationv1.MutatingAdmissionPolicy{}
	if err := k.admin.Get(t.Context(), client.ObjectKey{Name: assignment.AssignPolicyName}, policy); err != nil {
		t.Fatal(err)
	}
	if refs := policy.OwnerReferences; len(refs) != 1 || refs[0].Kind != "CustomResourceDefinition" || refs[0].Name != "schedulerprofiles.scheduling.schedops.io" {
		t.Errorf("The policy's owners are %+v, want the SchedulerProfile CRD", refs)
	}

	c, recorded := testutil.WarningClient(t, k.cfg, operatorenv.NewScheme())
	daemonPod := testutil.MakePod("daemon", labelled).Obj()
	daemonPod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "agent", UID: "0d2c1c52-5b0e-4c1e-9a53-2f1f0f6f3b11"}}
	bound := testutil.MakePod("bound", labelled).Obj()
	bound.Spec.NodeName = "node-0"
	cases := []struct {
		name          string
		pod           *corev1.Pod
		wantScheduler string
		wantNote      string
		wantWarning   string
	}{
		{name: "assigned", pod: testutil.MakePod("assigned", labelled).Obj(), wantScheduler: name, wantNote: "assigned"},
		{name: "names a scheduler", pod: testutil.MakePod("named", labelled).SchedulerName("other").Obj(), wantScheduler: "other", wantNote: "skipped: the pod names scheduler other"},
		{name: "bound", pod: bound, wantScheduler: schedulingv1alpha1.DefaultSchedulerName},
		{name: "a DaemonSet's", pod: daemonPod, wantScheduler: schedulingv1alpha1.DefaultSchedulerName},
		{name: "not labelled", pod: testutil.MakePod("plain", plain).Obj(), wantScheduler: schedulingv1alpha1.DefaultSchedulerName},
		{name: "dry-run", pod: testutil.MakePod("dry", dryRun).Obj(), wantScheduler: schedulingv1alpha1.DefaultSchedulerName, wantNote: "dry-run: would assign " + name},
		{name: "nobody serves", pod: testutil.MakePod("missing", missing).Obj(), wantScheduler: schedulingv1alpha1.DefaultSchedulerName,
			wantNote: "fallback: no SchedulerProfile has scheduler name assign-nobody", wantWarning: "the pod stays on default-scheduler: no SchedulerProfile has scheduler name assign-nobody"},
		{name: "unknown mode", pod: testutil.MakePod("mode", unknownMode).Obj(), wantScheduler: schedulingv1alpha1.DefaultSchedulerName,
			wantNote:    `skipped: unknown scheduling.schedops.io/scheduler-name-mode "sometimes", want enforce or dry-run`,
			wantWarning: `scheduler assignment skipped: unknown scheduling.schedops.io/scheduler-name-mode "sometimes", want enforce or dry-run`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			recorded.Take()
			if err := c.Create(t.Context(), tc.pod); err != nil {
				t.Fatalf("Creating the pod: %v", err)
			}
			if tc.pod.Spec.SchedulerName != tc.wantScheduler || tc.pod.Annotations[schedulingv1alpha1.AnnotationAssignment] != tc.wantNote {
				t.Errorf("scheduler %q, annotation %q; want %q, %q", tc.pod.Spec.SchedulerName, tc.pod.Annotations[schedulingv1alpha1.AnnotationAssignment], tc.wantScheduler, tc.wantNote)
			}
			got := recorded.Take()
			if tc.wantWarning == "" && len(got) > 0 || tc.wantWarning != "" && !slicesContains(got, tc.wantWarning) {
				t.Errorf("warnings %q, want %q", got, tc.wantWarning)
			}
		})
	}

	// A held rename: the old name stays served, its namespaces assigned; the new one is not.
	renamed := name + "-v2"
	renamedNS := k.assignedNamespace(t, "assign-renamed", schedulingv1alpha1.LabelAssignSchedulerName, renamed)
	k.updateProfile(t, name, func(p *schedulingv1alpha1.SchedulerProfile) {
		p.Spec.SchedulerName = renamed
		p.Spec.PluginConfig = []schedulingv1alpha1.PluginConfig{{Name: "NodeResourcesFit", Args: runtime.RawExtension{Raw: []byte(invalidScoring)}}}
	})
	k.waitForConditions(t, name, conditionWant{schedulingv1alpha1.ConditionConfigValid, metav1.ConditionFalse, schedulingv1alpha1.ReasonInvalidConfig})
	k.waitForServed(t, name, name)
	k.waitForAssignment(t, "the new, held name to fall back", func() *corev1.Pod { return testutil.MakePod("renamed", renamedNS).Obj() },
		schedulingv1alpha1.DefaultSchedulerName, "fallback: SchedulerProfile "+name+" is served as "+name+": its change to "+renamed+" is not rolled out ("+schedulingv1alpha1.ReasonInvalidConfig+")")
	k.waitForAssignment(t, "the old, served name to stay assigned", func() *corev1.Pod { return testutil.MakePod("kept", labelled).Obj() }, name, "assigned")

	// The policy does not need the operator.
	if err := op.Stop(); err != nil {
		t.Fatal(err)
	}
	stopped := testutil.MakePod("stopped", labelled).Obj()
	began := time.Now()
	if err := k.admin.Create(t.Context(), stopped); err != nil {
		t.Fatalf("Creating a pod while the operator is stopped: %v", err)
	}
	t.Logf("A pod of a labelled namespace was created in %v with the operator stopped", time.Since(began))
	if stopped.Spec.SchedulerName != name {
		t.Errorf("With the operator stopped, the pod got scheduler %q, want %q", stopped.Spec.SchedulerName, name)
	}

	// The profile deleted: its name is no longer served.
	k.startOperator(t, k.cfg)
	if err := k.admin.Delete(t.Context(), p); err != nil {
		t.Fatal(err)
	}
	k.waitForAssignment(t, "the deleted profile's name to fall back", func() *corev1.Pod { return testutil.MakePod("deleted", labelled).Obj() },
		schedulingv1alpha1.DefaultSchedulerName, "fallback: no SchedulerProfile has scheduler name "+name)
}

// slicesContains tells whether one of ss ends with s: the apiserver starts a policy's warning
// with the names of the policy and binding.
func slicesContains(ss []string, s string) bool {
	for _, v := range ss {
		if strings.HasSuffix(v, ": "+s) {
			return true
		}
	}
	return false
}

// TestProfileAccess: a profile with spec.access admits only the namespaces its selector selects.
// A pod naming its scheduler from another namespace is refused by the operator's
// ValidatingAdmissionPolicy with a message naming the profile; a namespace label that assigns it
// there assigns nothing, and says why.
func TestProfileAccess(t *testing.T) {
	k := suiteCluster()
	k.startOperator(t, k.cfg)
	name := uniqueName("access")
	k.servedProfile(t, testutil.MakeProfile(name).Access(map[string]string{"team": "ml"}).Obj())
	ml := k.assignedNamespace(t, "access-ml", "team", "ml", schedulingv1alpha1.LabelAssignSchedulerName, name)
	other := k.assignedNamespace(t, "access-other", "team", "web", schedulingv1alpha1.LabelAssignSchedulerName, name)

	k.waitForAssignment(t, "the admitted namespace to be assigned", func() *corev1.Pod { return testutil.MakePod("ml", ml).Obj() }, name, "assigned")
	k.waitForAssignment(t, "the other namespace to be skipped", func() *corev1.Pod { return testutil.MakePod("web", other).Obj() },
		schedulingv1alpha1.DefaultSchedulerName, "skipped: SchedulerProfile "+name+" admits only the namespaces of its spec.access.namespaceSelector")
	testutil.Eventually(t, assignTimeout, "a pod naming the profile from another namespace to be refused", func(ctx context.Context) error {
		_, err := dryRunPod(ctx, k.admin, testutil.MakePod("named", other).SchedulerName(name).Obj())
		if err == nil {
			return errors.New("the pod was admitted")
		}
		want := "namespace " + other + " may not use scheduler " + name + ": SchedulerProfile " + name + " admits only the namespaces of its spec.access.namespaceSelector"
		if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), want) {
			t.Fatalf("Refused with %v, want a Forbidden error saying %q", err, want)
		}
		return nil
	})
	if _, err := dryRunPod(t.Context(), k.admin, testutil.MakePod("named", ml).SchedulerName(name).Obj()); err != nil {
		t.Errorf("A pod naming the profile from an admitted namespace: %v", err)
	}
}

// TestAssignmentOfGangs: the pods of one PodGroup get one decision, the one the PodGroup got at
// its creation, however the served names change while its pods are created. On an apiserver of
// its own that serves PodGroups.
func TestAssignmentOfGangs(t *testing.T) {
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join("..", "..", "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	env.ControlPlane.GetAPIServer().Configure().Append("feature-gates", "GenericWorkload=true").Append("runtime-config", "scheduling.k8s.io/v1beta1=true")
	rc, err := env.Start()
	if err != nil {
		t.Fatalf("Starting an envtest apiserver that serves PodGroups: %v", err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("Stopping the envtest apiserver: %v", err)
		}
	})
	admin, err := client.New(rc, client.Options{Scheme: operatorenv.NewScheme()})
	if err != nil {
		t.Fatal(err)
	}
	k := &cluster{cfg: rc, admin: admin}
	k.startOperator(t, rc)
	ctx := t.Context()
	name := uniqueName("gang")
	k.createProfile(t, testutil.MakeProfile(name).Obj())
	rolled := k.waitForRollout(t, name)
	ns := k.assignedNamespace(t, "gang", schedulingv1alpha1.LabelAssignSchedulerName, name)
	testutil.Eventually(t, assignTimeout, "the gangs' policy", func(ctx context.Context) error {
		return k.admin.Get(ctx, client.ObjectKey{Name: assignment.AssignGangsPolicyName}, &metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingAdmissionPolicyBinding"}})
	})

	podGroup := func(group string) *schedulingv1beta1.PodGroup {
		pg := &schedulingv1beta1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: group},
			Spec: schedulingv1beta1.PodGroupSpec{SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: 4}}}}
		if err := k.admin.Create(ctx, pg); err != nil {
			t.Fatalf("Creating PodGroup %s: %v", group, err)
		}
		return pg
	}
	member := func(group string, i int) *corev1.Pod {
		pod := testutil.MakePod(fmt.Sprintf("%s-%d", group, i), ns).Obj()
		pod.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: ptr.To(group)}
		if err := k.admin.Create(ctx, pod); err != nil {
			t.Fatalf("Creating pod %s: %v", pod.Name, err)
		}
		return pod
	}

	// A PodGroup created while the profile is not served yet: its pods stay on
	// default-scheduler, those created after the profile became served too.
	early := podGroup("early")
	testutil.Eventually(t, assignTimeout, "PodGroup early to record its decision", func(ctx context.Context) error {
		if err := k.admin.Get(ctx, client.ObjectKeyFromObject(early), early); err != nil {
			return err
		}
		if early.Annotations[schedulingv1alpha1.AnnotationAssignment] == "" {
			// The policy may not have been in effect at the creation: a new group.
			_ = k.admin.Delete(ctx, early)
			early = podGroup(uniqueName("early"))
			return errors.New("not annotated")
		}
		return nil
	})
	t.Logf("PodGroup %s: %s", early.Name, early.Annotations[schedulingv1alpha1.AnnotationAssignment])
	var gang []*corev1.Pod
	gang = append(gang, member(early.Name, 0), member(early.Name, 1))
	k.runSchedulerPod(t, rolled.Status.DeploymentName, "0")
	k.waitForServed(t, name, name)
	k.waitForAssignment(t, "a pod outside a group to be assigned", func() *corev1.Pod { return testutil.MakePod("single", ns).Obj() }, name, "assigned")
	gang = append(gang, member(early.Name, 2), member(early.Name, 3))
	for _, pod := range gang {
		if pod.Spec.SchedulerName != schedulingv1alpha1.DefaultSchedulerName {
			t.Errorf("Pod %s of PodGroup %s got scheduler %q, want %s like the whole group", pod.Name, early.Name, pod.Spec.SchedulerName, schedulingv1alpha1.DefaultSchedulerName)
		}
		t.Logf("Pod %s: %s, %s", pod.Name, pod.Spec.SchedulerName, pod.Annotations[schedulingv1alpha1.AnnotationAssignment])
	}

	// A PodGroup created while the profile is served: all its pods get the profile. The apiserver
	// sees the PodGroup policy's newly served name a moment after the pod policy's (each policy
	// object is reloaded on its own), so a group created within that moment is created again.
	late := podGroup("late")
	testutil.Eventually(t, assignTimeout, "PodGroup late to record the profile", func(ctx context.Context) error {
		if err := k.admin.Get(ctx, client.ObjectKeyFromObject(late), late); err != nil {
			return err
		}
		if note := late.Annotations[schedulingv1alpha1.AnnotationAssignment]; note != "assigned" {
			_ = k.admin.Delete(ctx, late)
			late = podGroup(uniqueName("late"))
			return fmt.Errorf("annotated %q", note)
		}
		return nil
	})
	for i := range 4 {
		pod := member(late.Name, i)
		if pod.Spec.SchedulerName != name || pod.Annotations[schedulingv1alpha1.AnnotationAssignment] != "assigned (PodGroup "+late.Name+")" {
			t.Errorf("Pod %s got scheduler %q, annotation %q; want %s, assigned (PodGroup %s)", pod.Name, pod.Spec.SchedulerName, pod.Annotations[schedulingv1alpha1.AnnotationAssignment], name, late.Name)
		}
	}
}

// podEvent waits for an event of reason about a pod whose note contains text.
func (k *cluster) podEvent(t *testing.T, pod *corev1.Pod, reason, text string) {
	t.Helper()
	testutil.Eventually(t, assignTimeout, "event "+reason+" on pod "+pod.Name, func(ctx context.Context) error {
		var list eventsv1.EventList
		if err := k.admin.List(ctx, &list, client.InNamespace(pod.Namespace)); err != nil {
			return err
		}
		for _, e := range list.Items {
			if e.Regarding.Kind == "Pod" && e.Regarding.Name == pod.Name && e.Reason == reason && strings.Contains(e.Note, text) {
				return nil
			}
		}
		return errors.New("none yet")
	})
}

// TestStrandedPods: pending pods that the policy assigned to a name that then stops being served
// are reported: an Event on each pod and on the profile, status.strandedPods, the metric. With
// --stranded-pod-grace, the one a controller owns is deleted for its controller to recreate,
// the bare one is kept. A deleted profile's stranded pods stay counted in the metric.
func TestStrandedPods(t *testing.T) {
	k := suiteCluster()
	fast := func(o *controllers.ManagerOptions) { o.StrandedInterval = time.Second }
	op := k.startOperatorWith(t, fast)
	name := uniqueName("stranded")
	p := k.servedProfile(t, testutil.MakeProfile(name).Obj())
	ns := k.assignedNamespace(t, "stranded", schedulingv1alpha1.LabelAssignSchedulerName, name)
	k.waitForAssignment(t, "the policy to assign "+ns, func() *corev1.Pod { return testutil.MakePod("probe", ns).Obj() }, name, "assigned")
	owned := testutil.MakePod("owned", ns).Obj()
	owned.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-1", UID: "6b1f0c5e-2d1a-4a5e-9f3c-0c2b8c1d7e11", Controller: ptr.To(true)}}
	bare := testutil.MakePod("bare", ns).Obj()
	for _, pod := range []*corev1.Pod{owned, bare} {
		if err := k.admin.Create(t.Context(), pod); err != nil {
			t.Fatal(err)
		}
		if pod.Spec.SchedulerName != name {
			t.Fatalf("Pod %s got scheduler %q, want %s", pod.Name, pod.Spec.SchedulerName, name)
		}
	}

	// The scheduler stops serving: its pod is no longer ready.
	var sched corev1.Pod
	if err := k.admin.Get(t.Context(), client.ObjectKey{Namespace: operatorNamespace, Name: p.Status.DeploymentName + "-0"}, &sched); err != nil {
		t.Fatal(err)
	}
	sched.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}
	if err := k.admin.Status().Update(t.Context(), &sched); err != nil {
		t.Fatal(err)
	}
	k.waitForServed(t, name, "")
	for _, pod := range []*corev1.Pod{owned, bare} {
		k.podEvent(t, pod, assignment.EventReasonSchedulerNotServed, "the pod was assigned to scheduler "+name+", which no running scheduler serves")
	}
	k.waitForProfile(t, name, "status.strandedPods 2", func(p *schedulingv1alpha1.SchedulerProfile) error {
		if p.Status.StrandedPods != 2 {
			return fmt.Errorf("strandedPods %d", p.Status.StrandedPods)
		}
		return nil
	})
	k.waitForEvent(t, p, corev1.EventTypeWarning, assignment.EventReasonSchedulerNotServed, "2 pending pods were assigned to scheduler "+name)
	if n, err := testutil.CounterSum("schedops_stranded_pods", "scheduler_name", name); err != nil || n != 2 {
		t.Errorf("schedops_stranded_pods{scheduler_name=%q} = %v (%v), want 2", name, n, err)
	}
	if err := k.admin.Get(t.Context(), client.ObjectKeyFromObject(owned), &corev1.Pod{}); err != nil {
		t.Fatalf("Without a grace, the stranded pod was not kept: %v", err)
	}

	// With a grace, the owned pod goes, the bare one stays.
	if err := op.Stop(); err != nil {
		t.Fatal(err)
	}
	k.startOperatorWith(t, func(o *controllers.ManagerOptions) { fast(o); o.StrandedPodGrace = 2 * time.Second })
	testutil.Eventually(t, assignTimeout, "the owned stranded pod to be deleted", func(ctx context.Context) error {
		err := k.admin.Get(ctx, client.ObjectKeyFromObject(owned), &corev1.Pod{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there (%v)", err)
	})
	k.podEvent(t, owned, assignment.EventReasonStrandedPodDeleted, "for ReplicaSet web-1 to recreate it")
	k.waitForProfile(t, name, "status.strandedPods 1", func(p *schedulingv1alpha1.SchedulerProfile) error {
		if p.Status.StrandedPods != 1 {
			return fmt.Errorf("strandedPods %d", p.Status.StrandedPods)
		}
		return nil
	})
	if err := k.admin.Get(t.Context(), client.ObjectKeyFromObject(bare), &corev1.Pod{}); err != nil {
		t.Errorf("The bare stranded pod was not kept: %v", err)
	}

	// A served profile deleted with a pending assigned pod: the pod is stranded, with its Event
	// and in the metric.
	gone := uniqueName("stranded-gone")
	q := k.servedProfile(t, testutil.MakeProfile(gone).Obj())
	goneNS := k.assignedNamespace(t, "stranded-gone", schedulingv1alpha1.LabelAssignSchedulerName, gone)
	k.waitForAssignment(t, "the policy to assign "+goneNS, func() *corev1.Pod { return testutil.MakePod("probe", goneNS).Obj() }, gone, "assigned")
	left := testutil.MakePod("left", goneNS).Obj()
	if err := k.admin.Create(t.Context(), left); err != nil {
		t.Fatal(err)
	}
	if n, err := testutil.CounterSum("schedops_stranded_pods", "scheduler_name", gone); err != nil || n != 0 {
		t.Errorf("Before the deletion, schedops_stranded_pods{scheduler_name=%q} = %v (%v), want 0", gone, n, err)
	}
	if err := k.admin.Delete(t.Context(), q); err != nil {
		t.Fatal(err)
	}
	k.podEvent(t, left, assignment.EventReasonSchedulerNotServed, "no SchedulerProfile has scheduler name "+gone)
	testutil.Eventually(t, assignTimeout, "the deleted profile's stranded pod in the metric", func(context.Context) error {
		if n, err := testutil.CounterSum("schedops_stranded_pods", "scheduler_name", gone); err != nil || n != 1 {
			return fmt.Errorf("schedops_stranded_pods = %v (%v)", n, err)
		}
		return nil
	})
}
