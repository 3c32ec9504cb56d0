package webhook

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
)

// TestPodAssignment: the apiserver calls the pod assignment webhook of config/webhook for the
// pods of labelled namespaces. A pod there gets the served profile's scheduler name and the
// annotation; one that names a scheduler, is bound or is a DaemonSet's keeps what it has; a pod
// of an unlabelled namespace is untouched; while the profile is not Available, or there is none,
// the pod stays on default-scheduler with the annotation and a warning; dry-run only annotates.
func TestPodAssignment(t *testing.T) {
	ctx := t.Context()
	served := availableProfile(t, "assign-served")
	pending := testutil.MakeProfile("assign-pending").Obj()
	create(t, pending)
	// The reconciler has written the pending profile's status: not Available.
	waitProfile(t, pending.Name, func(p *schedulingv1alpha1.SchedulerProfile) error {
		if c := meta.FindStatusCondition(p.Status.Conditions, schedulingv1alpha1.ConditionAvailable); c == nil || c.Status != metav1.ConditionFalse {
			return fmt.Errorf("Available is %v, want False", c)
		}
		return nil
	})

	labelled := assignNamespace(t, "assign-labelled", schedulingv1alpha1.LabelAssignSchedulerName, served)
	waiting := assignNamespace(t, "assign-waiting", schedulingv1alpha1.LabelAssignSchedulerName, pending.Name)
	dryRun := assignNamespace(t, "assign-dry-run", schedulingv1alpha1.LabelAssignSchedulerName, served, schedulingv1alpha1.LabelAssignMode, schedulingv1alpha1.AssignModeDryRun)
	missing := assignNamespace(t, "assign-missing", schedulingv1alpha1.LabelAssignSchedulerName, "assign-nobody")
	plain := assignNamespace(t, "assign-plain")

	c, recorded := warningClient(t)
	// The operator's cache sees a new namespace a moment after it is created: wait until a
	// dry-run pod of each labelled one is annotated.
	for _, ns := range []string{labelled, waiting, dryRun, missing} {
		testutil.Eventually(t, waitTimeout, "the webhook to see namespace "+ns, func(ctx context.Context) error {
			pod := testutil.MakePod("probe", ns).Obj()
			if err := k8sClient.Create(ctx, pod, client.DryRunAll); err != nil {
				return err
			}
			if pod.Annotations[schedulingv1alpha1.AnnotationAssignment] == "" {
				return errors.New("the pod is not annotated")
			}
			return nil
		})
	}

	assignments := func(name string) float64 {
		t.Helper()
		n, err := testutil.CounterSum("schedops_pod_assignments_total", "scheduler_name", name)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	servedBefore, pendingBefore := assignments(served), assignments(pending.Name)
	daemonPod := testutil.MakePod("daemon", labelled).Obj()
	daemonPod.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "DaemonSet", Name: "agent", UID: "0d2c1c52-5b0e-4c1e-9a53-2f1f0f6f3b11"}}
	const nobody = "no SchedulerProfile has scheduler name assign-nobody"

	notAvailable := "SchedulerProfile assign-pending is not Available (" + schedulingv1alpha1.ReasonNoReplicasAvailable + ")"
	cases := []struct {
		name          string
		pod           *corev1.Pod
		wantScheduler string
		wantNote      string
		wantWarnings  []string
	}{
		{name: "assigned", pod: testutil.MakePod("assigned", labelled).Obj(), wantScheduler: served, wantNote: "assigned"},
		{name: "an explicit name is kept", pod: testutil.MakePod("explicit", labelled).SchedulerName("other").Obj(),
			wantScheduler: "other", wantNote: "skipped: the pod names scheduler other"},
		{name: "a bound pod is untouched", pod: withNodeName(testutil.MakePod("bound", labelled).Obj(), "node-1"),
			wantScheduler: schedulingv1alpha1.DefaultSchedulerName},
		{name: "a DaemonSet's pod is untouched", pod: daemonPod, wantScheduler: schedulingv1alpha1.DefaultSchedulerName},
		{name: "no profile: fallback", pod: testutil.MakePod("nobody", missing).Obj(),
			wantScheduler: schedulingv1alpha1.DefaultSchedulerName, wantNote: "fallback: " + nobody,
			wantWarnings: []string{"the pod stays on default-scheduler, not scheduler assign-nobody: " + nobody}},
		{name: "an unlabelled namespace is untouched", pod: testutil.MakePod("plain", plain).Obj(),
			wantScheduler: schedulingv1alpha1.DefaultSchedulerName},
		{name: "not Available: fallback", pod: testutil.MakePod("fallback", waiting).Obj(),
			wantScheduler: schedulingv1alpha1.DefaultSchedulerName, wantNote: "fallback: " + notAvailable,
			wantWarnings: []string{"the pod stays on default-scheduler, not scheduler assign-pending: " + notAvailable}},
		{name: "dry-run only annotates", pod: testutil.MakePod("dry-run", dryRun).Obj(),
			wantScheduler: schedulingv1alpha1.DefaultSchedulerName, wantNote: "dry-run: would assign " + served},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			recorded.mu.Lock()
			recorded.list = nil
			recorded.mu.Unlock()
			if err := c.Create(ctx, tc.pod); err != nil {
				t.Fatalf("Creating pod %s/%s: %v", tc.pod.Namespace, tc.pod.Name, err)
			}
			got := &corev1.Pod{}
			if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(tc.pod), got); err != nil {
				t.Fatal(err)
			}
			if got.Spec.SchedulerName != tc.wantScheduler {
				t.Errorf("schedulerName %q, want %q", got.Spec.SchedulerName, tc.wantScheduler)
			}
			if note := got.Annotations[schedulingv1alpha1.AnnotationAssignment]; note != tc.wantNote {
				t.Errorf("Annotation %s is %q, want %q", schedulingv1alpha1.AnnotationAssignment, note, tc.wantNote)
			}
			recorded.mu.Lock()
			defer recorded.mu.Unlock()
			if diff := cmp.Diff(tc.wantWarnings, recorded.list); diff != "" {
				t.Errorf("Warnings (-want +got):\n%s", diff)
			}
		})
	}
	// Every annotated pod is counted under its namespace's scheduler name: assigned, skipped and
	// dry-run for the served one, the fallback for the pending one.
	if got := assignments(served) - servedBefore; got != 3 {
		t.Errorf("schedops_pod_assignments_total of %s grew by %v, want 3", served, got)
	}
	if got := assignments(pending.Name) - pendingBefore; got != 1 {
		t.Errorf("schedops_pod_assignments_total of %s grew by %v, want 1", pending.Name, got)
	}
}

// availableProfile creates a profile and marks its Deployment available, as the Deployment
// controller would, until the reconciler reports the profile Available; it returns the
// profile's scheduler name.
func availableProfile(t *testing.T, name string) string {
	t.Helper()
	create(t, testutil.MakeProfile(name).Obj())
	p := waitProfile(t, name, func(p *schedulingv1alpha1.SchedulerProfile) error {
		if p.Status.DeploymentName == "" {
			return errors.New("no Deployment yet")
		}
		return nil
	})
	if err := testutil.MarkDeploymentAvailable(t.Context(), k8sClient, client.ObjectKey{Namespace: namespace, Name: p.Status.DeploymentName}); err != nil {
		t.Fatal(err)
	}
	p = waitProfile(t, name, func(p *schedulingv1alpha1.SchedulerProfile) error {
		if !meta.IsStatusConditionTrue(p.Status.Conditions, schedulingv1alpha1.ConditionAvailable) {
			return errors.New("not Available")
		}
		return nil
	})
	return p.Status.SchedulerName
}

// waitProfile waits until a profile passes check and returns it.
func waitProfile(t *testing.T, name string, check func(*schedulingv1alpha1.SchedulerProfile) error) *schedulingv1alpha1.SchedulerProfile {
	t.Helper()
	p := &schedulingv1alpha1.SchedulerProfile{}
	testutil.Eventually(t, waitTimeout, "SchedulerProfile "+name, func(ctx context.Context) error {
		if err := k8sClient.Get(ctx, client.ObjectKey{Name: name}, p); err != nil {
			return err
		}
		return check(p)
	})
	return p
}

// assignNamespace creates a namespace with labels as key, value pairs and returns its name.
// Nothing deletes it: envtest runs no namespace controller to finish the deletion.
func assignNamespace(t *testing.T, name string, kv ...string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}}}
	for i := 0; i+1 < len(kv); i += 2 {
		ns.Labels[kv[i]] = kv[i+1]
	}
	if err := k8sClient.Create(t.Context(), ns); err != nil {
		t.Fatal(err)
	}
	return name
}

func withNodeName(pod *corev1.Pod, node string) *corev1.Pod {
	pod.Spec.NodeName = node
	return pod
}
