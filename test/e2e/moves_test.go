package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
	"github.com/schedops/scheduler-profile-operator/test/framework"
)

// TestMoveWithoutGap moves a running profile into a Scheduler whose new revision cannot start
// (its pods fit no node), out again, and then into the Scheduler for good, while a pod of the
// profile's schedulerName is created every 200 ms. The profile keeps its own scheduler until the
// Scheduler's revision that contains it runs available, so its pods keep being bound: the longest
// gap between two bindings stays under maxRolloutGap, the bound of a rollout's own hand-over.
func TestMoveWithoutGap(t *testing.T) {
	const sched, stay, mover = "e2e-move", "e2e-move-stay", "e2e-move-m"
	// About 100 s of pods, five a second: five nodes of 110 pods each hold them.
	nodes := makeNodes(t, mover, nodeSpec{name: "a", cpus: 64}, nodeSpec{name: "b", cpus: 64}, nodeSpec{name: "c", cpus: 64},
		nodeSpec{name: "d", cpus: 64}, nodeSpec{name: "e", cpus: 64})
	applyScheduler(t, testutil.MakeScheduler(sched).Obj())
	applyProfile(t, fmt.Sprintf(`{metadata: {name: %s}, spec: {schedulerRef: {name: %s}}}`, stay, sched))
	waitServes(t, sched, stay)
	p := applyProfile(t, fmt.Sprintf(`{metadata: {name: %s}}`, mover))
	p = waitCondition(t, p.Name, schedulingv1alpha1.ConditionAvailable, metav1.ConditionTrue, "", 60*time.Second)
	waitScheduler(t, mover, p.Status.ConfigHash)
	own := mover + "-scheduler"
	t.Cleanup(func() {
		_ = k8s.DeleteAllOf(context.Background(), &corev1.Pod{}, client.InNamespace("default"),
			client.MatchingLabels{dedicatedKey: mover}, client.GracePeriodSeconds(0))
	})
	bound := watchBindings(t, mover)
	stopPods := createPods(t, nodes, mover, 200*time.Millisecond)
	time.Sleep(2 * time.Second)

	// In, while the Scheduler's new pods fit no node: it is rolled back, the profile keeps its own.
	updateScheduler(t, sched, func(s *schedulingv1alpha1.Scheduler) {
		s.Spec.NodeSelector = map[string]string{"e2e-no-such-label": "x"}
	})
	applyProfile(t, fmt.Sprintf(`{metadata: {name: %s}, spec: {schedulerRef: {name: %s}}}`, mover, sched))
	moved := time.Now()
	testutil.Eventually(t, unschedulableTimeout+60*time.Second, "the Scheduler's new revision to be rolled back", func(ctx context.Context) error {
		s := &schedulingv1alpha1.Scheduler{}
		if err := k8s.Get(ctx, client.ObjectKey{Name: sched}, s); err != nil {
			return err
		}
		if s.Status.FailedRevision == "" {
			return fmt.Errorf("no failed revision yet")
		}
		return deploymentExists(ctx, own)
	})
	t.Logf("The Scheduler's revision with %s was rolled back %s after the move; its own scheduler ran throughout", mover, time.Since(moved).Round(100*time.Millisecond))
	if err := deploymentExists(t.Context(), own); err != nil {
		t.Fatalf("the profile lost its own scheduler: %v", err)
	}

	// Out again: it is a profile with a scheduler of its own, which never stopped.
	applyProfile(t, fmt.Sprintf(`{metadata: {name: %s}}`, mover))
	waitCondition(t, mover, schedulingv1alpha1.ConditionAvailable, metav1.ConditionTrue, "", 60*time.Second)

	// In for good: the Scheduler's pods fit again; its own scheduler goes once the Scheduler serves it.
	updateScheduler(t, sched, func(s *schedulingv1alpha1.Scheduler) { s.Spec.NodeSelector = nil })
	applyProfile(t, fmt.Sprintf(`{metadata: {name: %s}, spec: {schedulerRef: {name: %s}}}`, mover, sched))
	waitServes(t, sched, mover, stay)
	serving := time.Now() // the runner runs the Scheduler's configuration with the profile
	testutil.Eventually(t, 60*time.Second, "the profile's own scheduler to be removed", func(ctx context.Context) error {
		if err := deploymentExists(ctx, own); err == nil {
			return fmt.Errorf("deployment %s still exists", own)
		}
		if n := len(runner.Replicas(own)); n > 0 {
			return fmt.Errorf("%d processes of %s still run", n, own)
		}
		return nil
	})
	t.Logf("Both schedulers served %s for at most %s: from the Scheduler running it to the last process of its own stopping",
		mover, time.Since(serving).Round(10*time.Millisecond))
	time.Sleep(2 * time.Second)
	created := stopPods()
	gap, at := framework.LongestGap(bound.Wait(t, created, 60*time.Second))
	t.Logf("%d pods, one every 200ms; longest gap between bindings %s, ending at %s", len(created), gap.Round(10*time.Millisecond), at.Format("15:04:05.000"))
	if gap >= maxRolloutGap {
		t.Errorf("no pod was bound for %s during the moves, want under %s", gap, maxRolloutGap)
	}
}

// updateScheduler changes a Scheduler's spec, retrying on conflicts.
func updateScheduler(t *testing.T, name string, mutate func(*schedulingv1alpha1.Scheduler)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		s := &schedulingv1alpha1.Scheduler{}
		if err := k8s.Get(t.Context(), client.ObjectKey{Name: name}, s); err != nil {
			return err
		}
		mutate(s)
		return k8s.Update(t.Context(), s)
	})
	if err != nil {
		t.Fatalf("updating Scheduler %s: %v", name, err)
	}
}

// deploymentExists fails when the named Deployment of the operator's namespace does not exist.
func deploymentExists(ctx context.Context, name string) error {
	return k8s.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: name}, &appsv1.Deployment{})
}
