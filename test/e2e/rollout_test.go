package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/test/framework"
)

// maxRolloutGap bounds the longest time without a binding while a scheduler rolls. The old leader
// releases its lease when it stops, and a ready standby (its caches already synced) takes it at its
// next try: the rendered retryPeriod is 1 s with client-go's jitter factor 1.2, so within 2.2 s,
// plus the binding itself; the margin is for a loaded 2-core machine.
// A standby that never got the lease released, or a new process that is not ready when the old
// one stops, would leave pods waiting for the 15 s lease duration or longer.
const maxRolloutGap = 5 * time.Second

// TestRolloutGap: while pods arrive one every 100 ms, a profile change rolls the scheduler, and the
// pods keep being bound: the longest gap between two bindings stays under maxRolloutGap.
func TestRolloutGap(t *testing.T) {
	for _, replicas := range []int{1, 2} {
		t.Run(fmt.Sprintf("replicas=%d", replicas), func(t *testing.T) { testRolloutGap(t, replicas) })
	}
}

func testRolloutGap(t *testing.T, replicas int) {
	name := fmt.Sprintf("e2e-gap-%d", replicas)
	nodes := makeNodes(t, name, nodeSpec{name: "a", cpus: 64}, nodeSpec{name: "b", cpus: 64}, nodeSpec{name: "c", cpus: 64})
	profileFor := func(strategy string) string {
		return fmt.Sprintf(`
metadata: {name: %s}
spec:
  scheduler: {replicas: %d}
  pluginConfig:
  - name: NodeResourcesFit
    args: {scoringStrategy: {type: %s}}`, name, replicas, strategy)
	}
	applyProfile(t, profileFor("LeastAllocated"))
	p := waitCondition(t, name, schedulingv1alpha1.ConditionConfigValid, metav1.ConditionTrue, "", 30*time.Second)
	waitReplicas(t, p.Status.DeploymentName, p.Status.ConfigHash, replicas)
	t.Cleanup(func() {
		_ = k8s.DeleteAllOf(context.Background(), &corev1.Pod{}, client.InNamespace("default"),
			client.MatchingLabels{dedicatedKey: name}, client.GracePeriodSeconds(0))
	})

	bound := watchBindings(t, name)
	stopPods := createPods(t, nodes, name, 100*time.Millisecond)
	time.Sleep(2 * time.Second)
	first := p.Status.ConfigHash
	applyProfile(t, profileFor("MostAllocated"))
	p = waitCondition(t, name, schedulingv1alpha1.ConditionConfigValid, metav1.ConditionTrue, "", 30*time.Second)
	if p.Status.ConfigHash == first {
		t.Fatal("the config hash did not change")
	}
	rollStart := time.Now()
	waitReplicas(t, p.Status.DeploymentName, p.Status.ConfigHash, replicas)
	rolled := time.Since(rollStart)
	// Pods keep coming after the last old scheduler stopped, so a gap at the hand-over is measured.
	time.Sleep(2 * time.Second)
	created := stopPods()
	gap, at := framework.LongestGap(bound.Wait(t, created, 60*time.Second))
	t.Logf("replicas=%d: %d pods, rollout done in the runner %s after the new hash was seen; longest gap between bindings %s, ending at %s",
		replicas, len(created), rolled.Round(100*time.Millisecond), gap.Round(10*time.Millisecond), at.Format("15:04:05.000"))
	if gap >= maxRolloutGap {
		t.Errorf("no pod was bound for %s during the rollout, want under %s", gap, maxRolloutGap)
	}
}

// createPods creates a pod of the test for schedulerName every interval until the returned
// function is called; that returns the names of the pods created.
func createPods(t *testing.T, nodes testNodes, schedulerName string, interval time.Duration) func() []string {
	return framework.CreatePods(t, k8s, interval, func(i int) *corev1.Pod {
		return nodes.pod(fmt.Sprintf("p%04d", i), schedulerName, 10)
	})
}

// watchBindings watches the pods of a test and records when each one is first seen bound.
func watchBindings(t *testing.T, test string) *framework.Bindings {
	t.Helper()
	cfg, err := cluster.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	return framework.WatchBindings(t, cfg, k8s, "default", map[string]string{dedicatedKey: test})
}
