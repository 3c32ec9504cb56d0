package integration

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/schedops/scheduler-profile-operator/internal/testutil"
)

// createReadyNode creates a Node with labels and the same allocatable resources as every other
// node of these tests, then makes it schedulable the way a kubelet and the node lifecycle
// controller would: a Ready condition, and without the not-ready taint that the
// TaintNodesByCondition admission plugin adds on creation (envtest runs no controller manager to
// remove it). The node is deleted when the test ends.
func createReadyNode(t *testing.T, ctx context.Context, c client.Client, name string, labels map[string]string) {
	t.Helper()
	node := testutil.MakeNode(name).Labels(labels).
		Capacity(map[corev1.ResourceName]string{corev1.ResourceCPU: nodeCPU, corev1.ResourceMemory: nodeMemory, corev1.ResourcePods: "110"}).
		Ready().Obj()
	// Create drops the status, which a kubelet would write next.
	status := node.Status
	if err := c.Create(ctx, node); err != nil {
		t.Fatalf("Creating node %s: %v", name, err)
	}
	t.Cleanup(func() {
		if err := client.IgnoreNotFound(c.Delete(context.Background(), node)); err != nil {
			t.Errorf("Deleting node %s: %v", name, err)
		}
	})
	node.Status = status
	if err := c.Status().Update(ctx, node); err != nil {
		t.Fatalf("Setting the status of node %s: %v", name, err)
	}

	patch := client.MergeFrom(node.DeepCopy())
	node.Spec.Taints = nil
	if err := c.Patch(ctx, node, patch); err != nil {
		t.Fatalf("Removing the taints of node %s: %v", name, err)
	}
	if len(node.Spec.Taints) != 0 {
		t.Fatalf("Node %s still has taints %v", name, node.Spec.Taints)
	}
}

// createPod creates a pod for schedulerName with requests of podCPU and podMemory, and deletes
// it when the test ends. The pod is deleted with no grace period: no kubelet exists to confirm a
// graceful deletion of a bound pod, which would otherwise stay terminating.
func createPod(t *testing.T, ctx context.Context, c client.Client, namespace, name, schedulerName string, nodeSelector map[string]string) *corev1.Pod {
	t.Helper()
	pod := testutil.MakePod(name, namespace).SchedulerName(schedulerName).NodeSelector(nodeSelector).
		Request(corev1.ResourceCPU, podCPU).Request(corev1.ResourceMemory, podMemory).Obj()
	if err := c.Create(ctx, pod); err != nil {
		t.Fatalf("Creating pod %s: %v", name, err)
	}
	t.Cleanup(func() {
		err := c.Delete(context.Background(), pod, client.GracePeriodSeconds(0))
		if client.IgnoreNotFound(err) != nil {
			t.Errorf("Deleting pod %s: %v", name, err)
		}
	})
	return pod
}
