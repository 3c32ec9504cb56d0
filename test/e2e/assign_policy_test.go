package e2e

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/controllers/assignment"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
	"github.com/schedops/scheduler-profile-operator/test/framework"
)

// servedAs waits until a profile's status.servedSchedulerName is want.
func servedAs(t *testing.T, name, want string, timeout time.Duration) *schedulingv1alpha1.SchedulerProfile {
	t.Helper()
	p := &schedulingv1alpha1.SchedulerProfile{}
	testutil.Eventually(t, timeout, "SchedulerProfile "+name+" served as "+want, func(ctx context.Context) error {
		if err := k8s.Get(ctx, client.ObjectKey{Name: name}, p); err != nil {
			return err
		}
		if p.Status.ServedSchedulerName != want {
			return fmt.Errorf("servedSchedulerName %q", p.Status.ServedSchedulerName)
		}
		return nil
	})
	return p
}

// assignedPod creates a pod of the test's nodes that names no scheduler in namespace, and
// returns it as created: with the scheduler name and annotation the policy gave it.
func assignedPod(t *testing.T, nodes testNodes, name, namespace string) *corev1.Pod {
	t.Helper()
	pod := nodes.pod(name, "", 100)
	pod.Namespace, pod.Spec.SchedulerName = namespace, ""
	createAtOnce(t, pod)
	return pod
}

// waitAssigning waits until the policy assigns a dry-run pod of namespace to want: the apiserver
// sees a new namespace, and a new served name, a moment after they are written.
func waitAssigning(t *testing.T, nodes testNodes, namespace, want string) {
	t.Helper()
	testutil.Eventually(t, 60*time.Second, "the policy to assign the pods of "+namespace+" to "+want, func(ctx context.Context) error {
		probe := nodes.pod("probe", "", 100)
		probe.Namespace, probe.Spec.SchedulerName = namespace, ""
		if err := k8s.Create(ctx, probe, client.DryRunAll); err != nil {
			return err
		}
		if probe.Spec.SchedulerName != want {
			return fmt.Errorf("scheduler %q, annotation %q", probe.Spec.SchedulerName, probe.Annotations[schedulingv1alpha1.AnnotationAssignment])
		}
		return nil
	})
}

// waitPodEvent waits for an event of reason about the pod in its namespace.
func waitPodEvent(t *testing.T, namespace, pod, reason string) string {
	t.Helper()
	note := ""
	testutil.Eventually(t, 60*time.Second, "event "+reason+" on pod "+pod, func(ctx context.Context) error {
		var list eventsv1.EventList
		if err := k8s.List(ctx, &list, client.InNamespace(namespace)); err != nil {
			return err
		}
		for _, e := range list.Items {
			if e.Regarding.Kind == "Pod" && e.Regarding.Name == pod && e.Reason == reason {
				note = e.Note
				return nil
			}
		}
		return errors.New("none yet")
	})
	return note
}

// TestAssignmentThroughPolicy: assignment on a cluster with a controller manager and real
// schedulers, decided in the apiserver by the operator's policies.
//   - A rename held by Guard: the new name's namespace falls back and its pod is bound by the
//     default scheduler; the old name's namespace stays assigned and its pod is bound by the
//     profile's running scheduler.
//   - A PodGroup of 4 created while its profile becomes served: all 4 pods have one scheduler name.
//   - A pod naming a profile from a namespace outside its spec.access is refused.
//   - The operator's process stopped: a pod of a labelled namespace is still assigned.
//   - The profile deleted with a pending assigned pod of a Deployment: the pod gets the
//     SchedulerNotServed Event, and after the suite's --stranded-pod-grace it is deleted, and the
//     Deployment's new pod falls back and is bound by the default scheduler.
func TestAssignmentThroughPolicy(t *testing.T) {
	const test = "assign-policy"
	nodes := makeNodes(t, test, nodeSpec{name: "a", cpus: 8}, nodeSpec{name: "b", cpus: 8})

	t.Run("held rename", func(t *testing.T) {
		const name = "e2e-held"
		applyProfile(t, `
metadata: {name: e2e-held}
spec:
  rollout: {preview: {mode: Guard}}`)
		servedAs(t, name, name, 90*time.Second)
		old := "e2e-held-old"
		assignedNamespace(t, old, name)
		waitAssigning(t, nodes, old, name)
		running := assignedPod(t, nodes, "held-running", old)
		if running.Spec.SchedulerName != name {
			t.Fatalf("pod %s got scheduler %q, want %s", running.Name, running.Spec.SchedulerName, name)
		}
		waitBound(t, running)

		// The rename would strand the running pod of the old name: Guard holds it.
		applyProfile(t, `
metadata: {name: e2e-held}
spec:
  schedulerName: e2e-held-v2
  rollout: {preview: {mode: Guard}}`)
		waitCondition(t, name, schedulingv1alpha1.ConditionProgressing, metav1.ConditionFalse, schedulingv1alpha1.ReasonPreviewRefused, 120*time.Second)
		p := servedAs(t, name, name, 30*time.Second)
		if p.Status.SchedulerName != "e2e-held-v2" {
			t.Errorf("status.schedulerName %q, want the desired e2e-held-v2", p.Status.SchedulerName)
		}
		renamed := "e2e-held-new"
		assignedNamespace(t, renamed, "e2e-held-v2")
		var fallback *corev1.Pod
		testutil.Eventually(t, 30*time.Second, "the held name's namespace to fall back", func(ctx context.Context) error {
			fallback = nodes.pod(fmt.Sprintf("held-new-%d", time.Now().UnixNano()%100000), "", 100)
			fallback.Namespace, fallback.Spec.SchedulerName = renamed, ""
			if err := k8s.Create(ctx, fallback, client.DryRunAll); err != nil {
				return err
			}
			if note := fallback.Annotations[schedulingv1alpha1.AnnotationAssignment]; !strings.HasPrefix(note, "fallback: SchedulerProfile e2e-held is served as e2e-held") {
				return fmt.Errorf("annotation %q", note)
			}
			return nil
		})
		fallback = assignedPod(t, nodes, "held-new", renamed)
		if fallback.Spec.SchedulerName != schedulingv1alpha1.DefaultSchedulerName {
			t.Errorf("the held name's pod got scheduler %q, want %s", fallback.Spec.SchedulerName, schedulingv1alpha1.DefaultSchedulerName)
		}
		waitBound(t, fallback)
		kept := assignedPod(t, nodes, "held-kept", old)
		if kept.Spec.SchedulerName != name {
			t.Errorf("the old name's pod got scheduler %q, want %s", kept.Spec.SchedulerName, name)
		}
		waitBound(t, kept)
	})

	t.Run("gang", func(t *testing.T) {
		const name = "e2e-gang-assign"
		ns := "e2e-gang-assign"
		assignedNamespace(t, ns, name)
		applyProfile(t, `
metadata: {name: e2e-gang-assign}`)
		// The PodGroup records its decision when it is created; one created before the policy
		// saw the new namespace has none: a new one is made until one has.
		var pg *schedulingv1beta1.PodGroup
		testutil.Eventually(t, 60*time.Second, "a PodGroup with a decision", func(ctx context.Context) error {
			if pg != nil {
				_ = k8s.Delete(ctx, pg)
			}
			pg = testutil.MakePodGroup(fmt.Sprintf("gang-%d", time.Now().UnixNano()%100000), ns).Gang(4).Obj()
			if err := k8s.Create(ctx, pg); err != nil {
				return err
			}
			if note := pg.Annotations[schedulingv1alpha1.AnnotationAssignment]; note == "" {
				return errors.New("no decision")
			}
			return nil
		})
		t.Cleanup(func() { _ = k8s.Delete(context.Background(), pg) })
		t.Logf("PodGroup %s: %s", pg.Name, pg.Annotations[schedulingv1alpha1.AnnotationAssignment])
		var gang []*corev1.Pod
		member := func(i int) {
			pod := nodes.pod(fmt.Sprintf("gang-%d", i), "", 100)
			pod.Namespace, pod.Spec.SchedulerName = ns, ""
			pod.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: ptr.To(pg.Name)}
			createAtOnce(t, pod)
			gang = append(gang, pod)
		}
		member(0)
		member(1)
		servedAs(t, name, name, 90*time.Second)
		waitAssigning(t, nodes, ns, name)
		member(2)
		member(3)
		for _, pod := range gang {
			t.Logf("pod %s: scheduler %s, %s", pod.Name, pod.Spec.SchedulerName, pod.Annotations[schedulingv1alpha1.AnnotationAssignment])
			if pod.Spec.SchedulerName != gang[0].Spec.SchedulerName {
				t.Errorf("pod %s of the PodGroup got scheduler %q, pod %s %q: a group must have one", pod.Name, pod.Spec.SchedulerName, gang[0].Name, gang[0].Spec.SchedulerName)
			}
			if want := pg.Annotations[schedulingv1alpha1.AnnotationAssignment] + " (PodGroup " + pg.Name + ")"; pod.Annotations[schedulingv1alpha1.AnnotationAssignment] != want {
				t.Errorf("pod %s is annotated %q, want %q, its group's decision", pod.Name, pod.Annotations[schedulingv1alpha1.AnnotationAssignment], want)
			}
		}
	})

	t.Run("access", func(t *testing.T) {
		applyProfile(t, `
metadata: {name: e2e-access}
spec:
  access: {namespaceSelector: {matchLabels: {team: ml}}}`)
		testutil.Eventually(t, 60*time.Second, "a pod naming e2e-access from default to be refused", func(ctx context.Context) error {
			err := k8s.Create(ctx, nodes.pod("access", "e2e-access", 100), client.DryRunAll)
			if err == nil {
				return errors.New("admitted")
			}
			if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "SchedulerProfile e2e-access admits only the namespaces of its spec.access.namespaceSelector") {
				t.Fatalf("refused with %v, want Forbidden naming the profile", err)
			}
			return nil
		})
	})

	t.Run("operator stopped", func(t *testing.T) {
		const name = "e2e-assign-down"
		applyProfile(t, `
metadata: {name: e2e-assign-down}`)
		servedAs(t, name, name, 90*time.Second)
		ns := "e2e-assign-down"
		assignedNamespace(t, ns, name)
		waitAssigning(t, nodes, ns, name)
		restartOperator(t, func() {
			pod := assignedPod(t, nodes, "down", ns)
			if pod.Spec.SchedulerName != name {
				t.Errorf("with the operator stopped, the pod got scheduler %q, want %s", pod.Spec.SchedulerName, name)
			}
			waitBound(t, pod)
		})
	})

	t.Run("stranded", func(t *testing.T) {
		const name = "e2e-strand"
		// The profile's pool has no node: its pods stay pending under it, while the default
		// scheduler would bind them.
		applyProfile(t, `
metadata: {name: e2e-strand}
spec:
  plugins:
    multiPoint: {enabled: [{name: NodePool}]}
  pluginConfig:
  - name: NodePool
    args: {nodeSelector: {matchLabels: {pool: none}}}`)
		servedAs(t, name, name, 90*time.Second)
		ns := "e2e-strand"
		assignedNamespace(t, ns, name)
		waitAssigning(t, nodes, ns, name)
		deploy := workload(ns, test, 1)
		if err := k8s.Create(t.Context(), deploy); err != nil {
			t.Fatal(err)
		}
		first := waitDeploymentPod(t, ns, func(p *corev1.Pod) bool { return p.Spec.SchedulerName == name })
		waitUnschedulable(t, first)
		p := &schedulingv1alpha1.SchedulerProfile{}
		if err := k8s.Get(t.Context(), client.ObjectKey{Name: name}, p); err != nil {
			t.Fatal(err)
		}
		if err := k8s.Delete(t.Context(), p); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %s", assignment.EventReasonSchedulerNotServed, waitPodEvent(t, ns, first.Name, assignment.EventReasonSchedulerNotServed))
		// The pass that recorded the event counted the pod; the grace has not ended yet.
		if n, err := testutil.CounterSum("schedops_stranded_pods", "scheduler_name", name); err != nil || n != 1 {
			t.Errorf("schedops_stranded_pods{scheduler_name=%q} = %v (%v), want 1", name, n, err)
		}
		t.Logf("%s: %s", assignment.EventReasonStrandedPodDeleted, waitPodEvent(t, ns, first.Name, assignment.EventReasonStrandedPodDeleted))
		again := waitDeploymentPod(t, ns, func(p *corev1.Pod) bool { return p.UID != first.UID })
		t.Logf("the recreated pod %s: scheduler %s, %s", again.Name, again.Spec.SchedulerName, again.Annotations[schedulingv1alpha1.AnnotationAssignment])
		if again.Spec.SchedulerName != schedulingv1alpha1.DefaultSchedulerName || !strings.HasPrefix(again.Annotations[schedulingv1alpha1.AnnotationAssignment], "fallback: ") {
			t.Errorf("the recreated pod has scheduler %q and annotation %q, want default-scheduler and a fallback", again.Spec.SchedulerName, again.Annotations[schedulingv1alpha1.AnnotationAssignment])
		}
		waitBound(t, again)
	})
}

// waitDeploymentPod waits for a pod of namespace that ok accepts, and returns it.
func waitDeploymentPod(t *testing.T, namespace string, ok func(*corev1.Pod) bool) *corev1.Pod {
	t.Helper()
	var found *corev1.Pod
	testutil.Eventually(t, 90*time.Second, "a pod of namespace "+namespace, func(ctx context.Context) error {
		var pods corev1.PodList
		if err := k8s.List(ctx, &pods, client.InNamespace(namespace)); err != nil {
			return err
		}
		for i := range pods.Items {
			if p := &pods.Items[i]; p.DeletionTimestamp == nil && ok(p) {
				found = p
				return nil
			}
		}
		return fmt.Errorf("%d pods, none wanted", len(pods.Items))
	})
	return found
}

// restartOperator stops the suite's operator, runs while, and starts it again with the same
// settings.
func restartOperator(t *testing.T, while func()) {
	t.Helper()
	if err := operator.Stop(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		var err error
		if operator, err = framework.Start(operatorConfig, operatorOptions); err != nil {
			t.Fatalf("starting the operator again: %v", err)
		}
	}()
	while()
}
