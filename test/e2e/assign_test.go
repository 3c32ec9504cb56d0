package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
)

// TestNamespaceAssignment: a Deployment that names no scheduler, in a namespace labelled with a
// profile's scheduler name, has its pods bound by that profile's scheduler (they land in its node
// pool, although the default scheduler would use the bigger node outside it). While the profile's
// scheduler is not available, the pods of a namespace assigned to it are left on the default
// scheduler and bound by it: none waits Pending because of the operator.
func TestNamespaceAssignment(t *testing.T) {
	const test = "assign"
	makeNodes(t, test,
		nodeSpec{name: "batch", cpus: 4, labels: map[string]string{poolKey: "batch"}},
		nodeSpec{name: "general", cpus: 32, labels: map[string]string{poolKey: "general"}})
	served := applyProfile(t, `
metadata: {name: e2e-assign}
spec:
  plugins:
    multiPoint: {enabled: [{name: NodePool}]}
  pluginConfig:
  - name: NodePool
    args: {nodeSelector: {matchLabels: {pool: batch}}}`)
	served = waitCondition(t, served.Name, schedulingv1alpha1.ConditionConfigValid, metav1.ConditionTrue, "", 30*time.Second)
	waitScheduler(t, served.Name, served.Status.ConfigHash)
	waitCondition(t, served.Name, schedulingv1alpha1.ConditionAvailable, metav1.ConditionTrue, "", 60*time.Second)
	// Its scheduler pod has a node selector no node matches: never available.
	waiting := applyProfile(t, `
metadata: {name: e2e-assign-waiting}
spec:
  scheduler: {nodeSelector: {e2e.schedops.io/no-such-node: "true"}}`)
	waitCondition(t, waiting.Name, schedulingv1alpha1.ConditionConfigValid, metav1.ConditionTrue, "", 30*time.Second)
	waitCondition(t, waiting.Name, schedulingv1alpha1.ConditionAvailable, metav1.ConditionFalse, "", 30*time.Second)

	for _, c := range []struct {
		namespace, profile, wantScheduler, wantPool, wantAnnotation string
	}{
		{"e2e-assigned", served.Name, served.Name, "batch", "assigned"},
		{"e2e-assigned-waiting", waiting.Name, schedulingv1alpha1.DefaultSchedulerName, "", "fallback"},
	} {
		assignedNamespace(t, c.namespace, c.profile)
		deploy := workload(c.namespace, test, 3)
		// The apiserver's policy sees a new namespace, and a newly served name, a moment after
		// they are written: a dry-run pod of the workload's template until then.
		testutil.Eventually(t, 60*time.Second, "the policy to assign the pods of "+c.namespace+" to "+c.wantScheduler, func(ctx context.Context) error {
			probe := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: c.namespace}, Spec: *deploy.Spec.Template.Spec.DeepCopy()}
			if err := k8s.Create(ctx, probe, client.DryRunAll); err != nil {
				return err
			}
			if note := probe.Annotations[schedulingv1alpha1.AnnotationAssignment]; probe.Spec.SchedulerName != c.wantScheduler || !strings.HasPrefix(note, c.wantAnnotation) {
				return fmt.Errorf("scheduler %q, annotation %q", probe.Spec.SchedulerName, note)
			}
			return nil
		})
		testutil.Eventually(t, 30*time.Second, "a Deployment in namespace "+c.namespace, func(ctx context.Context) error {
			return k8s.Create(ctx, deploy)
		})
		pods := &corev1.PodList{}
		testutil.Eventually(t, 90*time.Second, "the 3 pods of namespace "+c.namespace+" to be bound", func(ctx context.Context) error {
			if err := k8s.List(ctx, pods, client.InNamespace(c.namespace)); err != nil {
				return err
			}
			bound := 0
			for _, p := range pods.Items {
				if p.Spec.NodeName != "" {
					bound++
				}
			}
			if len(pods.Items) != 3 || bound != 3 {
				return fmt.Errorf("%d pods, %d bound", len(pods.Items), bound)
			}
			return nil
		})
		for _, p := range pods.Items {
			note := p.Annotations[schedulingv1alpha1.AnnotationAssignment]
			t.Logf("namespace %s: pod %s scheduler %s on %s: %s", c.namespace, p.Name, p.Spec.SchedulerName, p.Spec.NodeName, note)
			if p.Spec.SchedulerName != c.wantScheduler {
				t.Errorf("pod %s/%s has scheduler name %q, want %q", p.Namespace, p.Name, p.Spec.SchedulerName, c.wantScheduler)
			}
			if !strings.HasPrefix(note, c.wantAnnotation) {
				t.Errorf("pod %s/%s is annotated %q, want it to start with %q", p.Namespace, p.Name, note, c.wantAnnotation)
			}
			if c.wantPool != "" {
				n := &corev1.Node{}
				if err := k8s.Get(t.Context(), client.ObjectKey{Name: p.Spec.NodeName}, n); err != nil {
					t.Fatal(err)
				}
				if n.Labels[poolKey] != c.wantPool {
					t.Errorf("pod %s/%s went to node %s of pool %q, want pool %q", p.Namespace, p.Name, n.Name, n.Labels[poolKey], c.wantPool)
				}
			}
		}
	}
}

// assignedNamespace creates a namespace whose pods are assigned to schedulerName, deleted when
// the test ends.
func assignedNamespace(t *testing.T, name, schedulerName string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{schedulingv1alpha1.LabelAssignSchedulerName: schedulerName}}}
	if err := k8s.Create(t.Context(), ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), ns) })
}

// workload is a Deployment of replicas pods that names no scheduler, placed on the test's nodes.
func workload(namespace, test string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": "workload"}
	pod := testutil.MakePod("workload", namespace).Label("app", "workload").
		NodeSelector(map[string]string{dedicatedKey: test}).
		Toleration(corev1.Toleration{Key: dedicatedKey, Operator: corev1.TolerationOpEqual, Value: test, Effect: corev1.TaintEffectNoSchedule}).
		Request(corev1.ResourceCPU, "500m").Obj()
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "workload", Namespace: namespace},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: pod.Spec},
		},
	}
}
