package autoscaler

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/internal/schedrunner"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
	"github.com/schedops/scheduler-profile-operator/scheduler/plugins/nodepool"
)

const (
	// podCount pods of podCPU CPUs each fit no node of the cluster before Karpenter launches
	// some (the system node has 2 CPUs), and three fit a node of instanceType: two nodes take
	// them all.
	podCount = 6
	podCPU   = "5"

	// launchTimeout bounds the wait for Karpenter's nodes to be Ready, or for the pods to be
	// bound to them: a batch (batchMax), the launch, and kwok making the nodes Ready.
	launchTimeout = 2 * time.Minute
	// pendingFor is how long the pods must stay pending once the nodes Karpenter launched for
	// them are Ready.
	pendingFor = 20 * time.Second
	// projectionTimeout bounds the wait for the operator's projection to apply to new pods: the
	// apiserver's admission policies follow the operator's writes within a second or two.
	projectionTimeout = 30 * time.Second
)

// TestProjectionOff: with the projection disabled, Karpenter sees pods that any node fits and
// launches nodes of the NodePool it prefers, pool-a; the profile's scheduler keeps the pods off
// them (its NodePool plugin selects pool=b), so the pods stay pending on Ready nodes.
func TestProjectionOff(t *testing.T) {
	watchLogs(t)
	createNodePools(t, nodePool("pool-a", "a", 50), nodePool("pool-b", "b", 10))
	scheduler := createProfile(t, "on-pool-b-unprojected", schedulingv1alpha1.ProjectionDisabled)
	pods := createPods(t, "off", scheduler)
	for _, p := range pods {
		if note, ok := p.Annotations[schedulingv1alpha1.AnnotationProjectedNodeRestrictions]; ok {
			t.Fatalf("pod %s was projected although its profile disables the projection: %s=%q, affinity %v",
				p.Name, schedulingv1alpha1.AnnotationProjectedNodeRestrictions, note, p.Spec.Affinity)
		}
	}

	seen := launches{}
	start := time.Now()
	testutil.Eventually(t, launchTimeout, "Karpenter's pool-a nodes to be Ready", func(ctx context.Context) error {
		ready, err := seen.see(ctx)
		if err != nil {
			return err
		}
		if len(ready["pool-a"]) == 0 || len(ready["pool-a"]) < len(seen["pool-a"]) {
			return fmt.Errorf("NodeClaims launched %v, Ready %v", seen, ready)
		}
		return readyNodes(ctx, "a", len(ready["pool-a"]))
	})
	t.Logf("Karpenter launched %d pool-a nodes for the pods, Ready after %s", len(seen["pool-a"]), time.Since(start).Round(time.Second))

	testutil.Consistently(t, pendingFor, "the pods pending beside Ready pool-a nodes", func(ctx context.Context) error {
		if _, err := seen.see(ctx); err != nil {
			return err
		}
		for _, p := range pods {
			got := &corev1.Pod{}
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(p), got); err != nil {
				return err
			}
			if got.Spec.NodeName != "" {
				return fmt.Errorf("pod %s is bound to %s", p.Name, got.Spec.NodeName)
			}
		}
		return nil
	})
	testutil.Eventually(t, 30*time.Second, "the scheduler to reject the pool-a nodes", func(ctx context.Context) error {
		for _, p := range pods {
			got := &corev1.Pod{}
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(p), got); err != nil {
				return err
			}
			c := testutil.PodScheduled(got)
			if c == nil || c.Status != corev1.ConditionFalse || c.Reason != corev1.PodReasonUnschedulable ||
				!strings.Contains(c.Message, nodepool.ErrReasonOutsidePool) {
				return fmt.Errorf("pod %s: PodScheduled %+v", p.Name, c)
			}
		}
		return nil
	})
	if len(seen["pool-b"]) > 0 {
		t.Errorf("Karpenter launched pool-b NodeClaims %v for pods that said nothing of pools", seen["pool-b"])
	}
	c := testutil.PodScheduled(getPod(t, pods[0]))
	t.Logf("After %s, all %d pods pending: %s", time.Since(start).Round(time.Second), len(pods), c.Message)
}

// TestProjectionOn: with the projection (the default), the pods carry the profile's node pool
// as required node affinity, so Karpenter launches pool-b nodes only, although it prefers
// pool-a, and the profile's scheduler binds every pod to one of them.
func TestProjectionOn(t *testing.T) {
	watchLogs(t)
	createNodePools(t, nodePool("pool-a", "a", 50), nodePool("pool-b", "b", 10))
	scheduler := createProfile(t, "on-pool-b", "")
	requireProjection(t, makePod("on", scheduler, 0))
	pods := createPods(t, "on", scheduler)
	for _, p := range pods {
		if _, ok := p.Annotations[schedulingv1alpha1.AnnotationProjectedNodeRestrictions]; !ok {
			t.Fatalf("pod %s was not projected: annotations %v", p.Name, p.Annotations)
		}
	}
	t.Logf("The pods were created with %s=%q", schedulingv1alpha1.AnnotationProjectedNodeRestrictions,
		pods[0].Annotations[schedulingv1alpha1.AnnotationProjectedNodeRestrictions])

	seen := launches{}
	start := time.Now()
	var nodes map[string]*corev1.Node
	testutil.Eventually(t, launchTimeout, "every pod to be bound", func(ctx context.Context) error {
		if _, err := seen.see(ctx); err != nil {
			return err
		}
		if len(seen["pool-a"]) > 0 {
			t.Fatalf("Karpenter launched pool-a NodeClaims %v for pods projected onto pool=b", seen["pool-a"])
		}
		var err error
		nodes, err = boundNodes(ctx, pods)
		return err
	})
	t.Logf("Karpenter launched %d pool-b nodes; all %d pods bound after %s", len(seen["pool-b"]), len(pods), time.Since(start).Round(time.Second))
	for pod, n := range nodes {
		if n.Labels[poolLabel] != "b" || n.Labels[nodePoolLabel] != "pool-b" {
			t.Errorf("pod %s is bound to node %s with labels %s=%q %s=%q, want pool-b's", pod, n.Name,
				poolLabel, n.Labels[poolLabel], nodePoolLabel, n.Labels[nodePoolLabel])
		}
	}
	if _, err := seen.see(t.Context()); err != nil {
		t.Fatal(err)
	}
	if len(seen["pool-a"]) > 0 {
		t.Errorf("Karpenter launched pool-a NodeClaims %v for pods projected onto pool=b", seen["pool-a"])
	}
}

// watchLogs prints the operator's and Karpenter's logs of the test if it fails.
func watchLogs(t *testing.T) {
	operator.LogOnFailure(t)
	karpenter.logOnFailure(t)
}

// createProfile creates a profile whose scheduler's NodePool plugin selects the nodes labelled
// pool=b, with spec.projection.nodeRestrictions mode ("" for the default, Enabled), deletes it
// when the test ends, and returns its scheduler name once the profile is Available and its
// scheduler runs.
func createProfile(t *testing.T, name string, mode schedulingv1alpha1.ProjectionMode) string {
	t.Helper()
	p := testutil.MakeProfile(name).NodePool(map[string]string{poolLabel: "b"}).Obj()
	p.Spec.Projection.NodeRestrictions = mode
	if err := k8s.Create(context.Background(), p); err != nil {
		t.Fatalf("creating profile %s: %v", name, err)
	}
	t.Cleanup(func() {
		if err := k8s.Delete(context.Background(), p); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("deleting profile %s: %v", name, err)
		}
	})
	testutil.Eventually(t, 2*time.Minute, "profile "+name+" to be Available", func(ctx context.Context) error {
		if err := k8s.Get(ctx, client.ObjectKey{Name: name}, p); err != nil {
			return err
		}
		c := meta.FindStatusCondition(p.Status.Conditions, schedulingv1alpha1.ConditionAvailable)
		if c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != p.Generation || p.Status.SchedulerName == "" {
			return fmt.Errorf("conditions %+v", p.Status.Conditions)
		}
		return nil
	})
	waitSchedulerReady(t, p.Status.DeploymentName)
	return p.Status.SchedulerName
}

// waitSchedulerReady waits until the runner runs a ready scheduler process for the Deployment.
// Available says that the Deployment's pods run, and on kwok's nodes they only pretend to: a
// scheduler that cannot start would leave the pods without even a PodScheduled condition.
func waitSchedulerReady(t *testing.T, deployment string) {
	t.Helper()
	testutil.Eventually(t, time.Minute, "a ready scheduler process of "+deployment, func(context.Context) error {
		if slices.ContainsFunc(runner.Replicas(deployment), func(r schedrunner.Replica) bool { return r.Ready }) {
			return nil
		}
		logs, _ := filepath.Glob(filepath.Join(workDir, "schedulers", deployment+"-*.log"))
		if len(logs) == 0 {
			return errors.New("none started")
		}
		// The runner numbers its processes: the newest log has the highest number.
		newest := slices.MaxFunc(logs, func(a, b string) int { return cmp.Compare(logNumber(a), logNumber(b)) })
		return fmt.Errorf("%d started, none ready; the newest log (%s) ends with:\n%s", len(logs), newest, fileTail(newest, 0, 5))
	})
}

// logNumber is the number of the scheduler process whose log is path (<deployment>-<n>.log).
func logNumber(path string) int {
	base := strings.TrimSuffix(filepath.Base(path), ".log")
	n, _ := strconv.Atoi(base[strings.LastIndex(base, "-")+1:])
	return n
}

// requireProjection waits until the operator projects onto a pod like probe (created with a
// dry run, so admission runs and nothing is stored), and fails the test if it never does.
func requireProjection(t *testing.T, probe *corev1.Pod) {
	t.Helper()
	testutil.Eventually(t, projectionTimeout, "the operator to project node restrictions onto new pods", func(ctx context.Context) error {
		p := probe.DeepCopy()
		if err := k8s.Create(ctx, p, client.DryRunAll); err != nil {
			return err
		}
		if _, ok := p.Annotations[schedulingv1alpha1.AnnotationProjectedNodeRestrictions]; !ok {
			return fmt.Errorf("a pod of scheduler %s is created without the annotation %s; its affinity: %v",
				p.Spec.SchedulerName, schedulingv1alpha1.AnnotationProjectedNodeRestrictions, p.Spec.Affinity)
		}
		return nil
	})
}

// makePod is the i-th pod of test for scheduler: it requests podCPU CPUs and tolerates the
// taint of the NodePools' nodes.
func makePod(test, scheduler string, i int) *corev1.Pod {
	return testutil.MakePod(fmt.Sprintf("%s-%d", test, i), "default").Label(dedicatedKey, test).SchedulerName(scheduler).
		Toleration(corev1.Toleration{Key: dedicatedKey, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}).
		Request(corev1.ResourceCPU, podCPU).Request(corev1.ResourceMemory, "64Mi").Obj()
}

// createPods creates podCount pods of test for scheduler at once, deletes them when the test
// ends, and returns them as the apiserver admitted them.
func createPods(t *testing.T, test, scheduler string) []*corev1.Pod {
	t.Helper()
	ctx := context.Background()
	t.Cleanup(func() { deletePods(t, test) })
	pods := make([]*corev1.Pod, podCount)
	for i := range pods {
		pods[i] = makePod(test, scheduler, i)
		if err := k8s.Create(ctx, pods[i]); err != nil {
			t.Fatalf("creating pod %s: %v", pods[i].Name, err)
		}
	}
	return pods
}

// deletePods deletes the pods of test at once and waits until they are gone.
func deletePods(t *testing.T, test string) {
	t.Helper()
	ctx := context.Background()
	selector := client.MatchingLabels{dedicatedKey: test}
	if err := k8s.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace("default"), selector, client.GracePeriodSeconds(0)); err != nil {
		t.Errorf("deleting the pods of %s: %v", test, err)
		return
	}
	err := testutil.Poll(ctx, time.Minute, func(ctx context.Context) error {
		pods := &corev1.PodList{}
		if err := k8s.List(ctx, pods, client.InNamespace("default"), selector); err != nil {
			return err
		}
		if len(pods.Items) > 0 {
			return fmt.Errorf("%d pods left", len(pods.Items))
		}
		return nil
	})
	if err != nil {
		t.Errorf("Deleting the pods of %s: %v", test, err)
	}
}

// getPod reads the pod again.
func getPod(t *testing.T, p *corev1.Pod) *corev1.Pod {
	t.Helper()
	got := &corev1.Pod{}
	if err := k8s.Get(t.Context(), client.ObjectKeyFromObject(p), got); err != nil {
		t.Fatal(err)
	}
	return got
}

// readyNodes fails unless at least want nodes labelled pool=pool are Ready.
func readyNodes(ctx context.Context, pool string, want int) error {
	nodes := &corev1.NodeList{}
	if err := k8s.List(ctx, nodes, client.MatchingLabels{poolLabel: pool}); err != nil {
		return err
	}
	var ready []string
	for _, n := range nodes.Items {
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status == corev1.ConditionTrue {
				ready = append(ready, n.Name)
			}
		}
	}
	if len(ready) < want {
		return fmt.Errorf("%d of %d pool=%s nodes Ready, want %d", len(ready), len(nodes.Items), pool, want)
	}
	return nil
}

// boundNodes returns the node of each pod, by the pod's name, once every pod is bound.
func boundNodes(ctx context.Context, pods []*corev1.Pod) (map[string]*corev1.Node, error) {
	nodes := map[string]*corev1.Node{}
	var pending []error
	for _, p := range pods {
		got := &corev1.Pod{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(p), got); err != nil {
			return nil, err
		}
		if got.Spec.NodeName == "" {
			pending = append(pending, fmt.Errorf("pod %s pending: %+v", p.Name, testutil.PodScheduled(got)))
			continue
		}
		n := &corev1.Node{}
		if err := k8s.Get(ctx, client.ObjectKey{Name: got.Spec.NodeName}, n); err != nil {
			return nil, err
		}
		nodes[p.Name] = n
	}
	return nodes, errors.Join(pending...)
}
