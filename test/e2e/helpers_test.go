package e2e

import (
	"context"
	"fmt"
	"iter"
	"maps"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/nodeaffinity"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/internal/localcluster"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
)

// dedicatedKey labels and taints the nodes of one test; only that test's pods tolerate the taint,
// so tests, and the operator's own scheduler pods, never share nodes.
const dedicatedKey = "e2e.schedops.io/test"

// testNodes are the fake nodes of one test.
type testNodes struct {
	test string
}

// nodeSpec is one fake node: its name suffix, labels and CPUs.
type nodeSpec struct {
	name   string
	labels map[string]string
	cpus   int64
}

// makeNodes creates the test's nodes, tainted and labelled with the test's name, and waits until
// they are Ready.
func makeNodes(t *testing.T, test string, specs ...nodeSpec) testNodes {
	t.Helper()
	var nodes []*corev1.Node
	for _, s := range specs {
		// A kwok node of the local cluster, given the test's label, taint and resources.
		kwokNode := &testutil.NodeWrapper{Node: *localcluster.FakeNode(test+"-"+s.name, nil, nil)}
		nodes = append(nodes, kwokNode.Label(dedicatedKey, test).Labels(s.labels).
			Taint(corev1.Taint{Key: dedicatedKey, Value: test, Effect: corev1.TaintEffectNoSchedule}).
			Capacity(map[corev1.ResourceName]string{corev1.ResourceCPU: strconv.FormatInt(s.cpus, 10), corev1.ResourceMemory: "64Gi", corev1.ResourcePods: "110"}).
			Obj())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	if err := cluster.CreateNodes(ctx, nodes); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, n := range nodes {
			_ = k8s.Delete(context.Background(), n)
		}
	})
	return testNodes{test: test}
}

// pod returns a pod of the test for scheduler, requesting cpu millicores.
func (tn testNodes) pod(name, scheduler string, milliCPU int64) *corev1.Pod {
	return testutil.MakePod(tn.test+"-"+name, "default").Label(dedicatedKey, tn.test).SchedulerName(scheduler).
		NodeSelector(map[string]string{dedicatedKey: tn.test}).
		Toleration(corev1.Toleration{Key: dedicatedKey, Operator: corev1.TolerationOpEqual, Value: tn.test, Effect: corev1.TaintEffectNoSchedule}).
		Request(corev1.ResourceCPU, fmt.Sprintf("%dm", milliCPU)).Request(corev1.ResourceMemory, "64Mi").Obj()
}

// schedule creates the pods one after the other, waiting for each to be bound, and returns the
// node of each. One at a time, each decision sees the ones before it.
func schedule(t *testing.T, pods ...*corev1.Pod) []*corev1.Node {
	t.Helper()
	var out []*corev1.Node
	for _, p := range pods {
		if err := k8s.Create(context.Background(), p); err != nil {
			t.Fatalf("creating pod %s: %v", p.Name, err)
		}
		t.Cleanup(func() { _ = k8s.Delete(context.Background(), p, client.GracePeriodSeconds(0)) })
		out = append(out, waitBound(t, p))
	}
	return out
}

// waitBound waits until the pod is bound and returns its node.
func waitBound(t *testing.T, p *corev1.Pod) *corev1.Node {
	t.Helper()
	got := &corev1.Pod{}
	testutil.Eventually(t, 60*time.Second, "pod "+p.Name+" to be bound", func(ctx context.Context) error {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(p), got); err != nil {
			return err
		}
		if got.Spec.NodeName == "" {
			return fmt.Errorf("not bound; conditions %v", got.Status.Conditions)
		}
		return nil
	})
	n := &corev1.Node{}
	if err := k8s.Get(t.Context(), client.ObjectKey{Name: got.Spec.NodeName}, n); err != nil {
		t.Fatal(err)
	}
	return n
}

// applyProfile creates or replaces a profile from YAML and deletes it when the test ends. If the
// test fails, the operator's log of the test is printed.
func applyProfile(t *testing.T, doc string) *schedulingv1alpha1.SchedulerProfile {
	t.Helper()
	operator.LogOnFailure(t)
	p := &schedulingv1alpha1.SchedulerProfile{}
	if err := yaml.UnmarshalStrict([]byte(doc), p); err != nil {
		t.Fatalf("parsing profile: %v", err)
	}
	p.APIVersion, p.Kind = schedulingv1alpha1.GroupVersion.String(), "SchedulerProfile"
	ctx := context.Background()
	existing := &schedulingv1alpha1.SchedulerProfile{}
	if err := k8s.Get(ctx, client.ObjectKeyFromObject(p), existing); err == nil {
		// The operator writes the status between a read and an update: read again and retry.
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(p), existing); err != nil {
				return err
			}
			existing.Spec = p.Spec
			return k8s.Update(ctx, existing)
		})
		if err != nil {
			t.Fatalf("updating profile %s: %v", p.Name, err)
		}
		return existing
	}
	if err := k8s.Create(ctx, p); err != nil {
		t.Fatalf("creating profile %s: %v", p.Name, err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), p) })
	return p
}

// waitCondition waits until the profile's condition has status (and reason, if given) for the
// profile's current generation, and returns the profile.
func waitCondition(t *testing.T, name, typ string, status metav1.ConditionStatus, reason string, timeout time.Duration) *schedulingv1alpha1.SchedulerProfile {
	t.Helper()
	p := &schedulingv1alpha1.SchedulerProfile{}
	testutil.Eventually(t, timeout, fmt.Sprintf("%s %s=%s %s", name, typ, status, reason), func(ctx context.Context) error {
		if err := k8s.Get(ctx, client.ObjectKey{Name: name}, p); err != nil {
			return err
		}
		c := meta.FindStatusCondition(p.Status.Conditions, typ)
		if c == nil || c.Status != status || (reason != "" && c.Reason != reason) || c.ObservedGeneration != p.Generation {
			return fmt.Errorf("conditions: %s", conditions(p))
		}
		return nil
	})
	return p
}

func conditions(p *schedulingv1alpha1.SchedulerProfile) string {
	var parts []string
	for _, c := range p.Status.Conditions {
		parts = append(parts, fmt.Sprintf("%s=%s/%s (gen %d): %s", c.Type, c.Status, c.Reason, c.ObservedGeneration, c.Message))
	}
	return strings.Join(parts, "; ")
}

// waitScheduler waits until the runner runs the configuration with hash for the profile.
func waitScheduler(t *testing.T, profile, hash string) {
	t.Helper()
	testutil.Eventually(t, 60*time.Second, "the scheduler of "+profile+" to run config "+hash, func(context.Context) error {
		if got := runner.Hash(profile + "-scheduler"); got != hash {
			return fmt.Errorf("runs %q", got)
		}
		return nil
	})
}

// waitRolledOut waits until a previewed profile's change from the configuration from ("" for
// none) has rolled out, and returns the profile: status.configHash is the configuration its
// preview was of, Progressing is False with RolloutComplete for its generation, the
// Deployment's pod template carries the hash, and the runner's scheduler runs it alone.
func waitRolledOut(t *testing.T, name, from string) *schedulingv1alpha1.SchedulerProfile {
	t.Helper()
	p := &schedulingv1alpha1.SchedulerProfile{}
	testutil.Eventually(t, 120*time.Second, fmt.Sprintf("the change of %s from %q to roll out", name, from), func(ctx context.Context) error {
		if err := k8s.Get(ctx, client.ObjectKey{Name: name}, p); err != nil {
			return err
		}
		hash := p.Status.ConfigHash
		c := meta.FindStatusCondition(p.Status.Conditions, schedulingv1alpha1.ConditionProgressing)
		if hash == "" || hash == from || hash != p.Status.Preview.To.ConfigHash || c == nil || c.Status != metav1.ConditionFalse ||
			c.Reason != schedulingv1alpha1.ReasonRolloutComplete || c.ObservedGeneration != p.Generation {
			return fmt.Errorf("status.configHash %q, preview %+v; conditions: %s", hash, p.Status.Preview, conditions(p))
		}
		d := &appsv1.Deployment{}
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: p.Status.DeploymentName}, d); err != nil {
			return err
		}
		if got := d.Spec.Template.Annotations[schedulingv1alpha1.AnnotationConfigHash]; got != hash {
			return fmt.Errorf("the Deployment's pod template has config hash %q, want %s", got, hash)
		}
		return nil
	})
	waitScheduler(t, name, p.Status.ConfigHash)
	return p
}

// createService creates a Service of default that selects pods by selector, and deletes it when
// the test ends: the default topology spreading constraints apply to the pods of a workload.
func createService(t *testing.T, name string, selector map[string]string) {
	t.Helper()
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec:       corev1.ServiceSpec{Selector: selector, Ports: []corev1.ServicePort{{Port: 80}}},
	}
	if err := k8s.Create(context.Background(), svc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), svc) })
}

func countByLabel(nodes []*corev1.Node, key string) map[string]int {
	out := map[string]int{}
	for _, n := range nodes {
		out[n.Labels[key]]++
	}
	return out
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// poolReason is why the scheduler of a profile with a NodePool rejects the nodes outside the
// pool for a pod created after it served: the pod carries the pool as required node affinity
// (projection), which NodeAffinity, running before NodePool, checks first.
const poolReason = nodeaffinity.ErrReasonPod

func mapValues(m map[string]int) iter.Seq[int] { return maps.Values(m) }

// metaLen is the number of items of a list.
func metaLen(l client.ObjectList) int {
	n, err := meta.ExtractList(l)
	if err != nil {
		panic(err)
	}
	return len(n)
}
