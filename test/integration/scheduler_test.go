package integration

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"

	"github.com/schedops/scheduler-profile-operator/internal/testutil"
	"github.com/schedops/scheduler-profile-operator/scheduler/plugins/nodepool"
)

// Resources of every node and every pod of the scheduler tests.
//
// They are chosen so that the in-tree resource scores are the same on every node, and only
// NodeLabelPreference separates the nodes (pkg/scheduler/framework/plugins/noderesources, v1.37.2):
//   - NodeResourcesBalancedAllocation (weight 1) scores by the standard deviation of the cpu and
//     memory fractions. A pod of 10m/10Mi on a node of 4000m/4000Mi requests the same fraction of
//     both, so the deviation is 0 with and without the pod, and every node scores 75.
//   - NodeResourcesFit, LeastAllocated (weight 1), scores (allocatable-requested)*100/allocatable
//     in integers: 99 on an empty node, and still 99 on a node holding up to 3 such pods
//     (3960*100/4000 = 99), so the podCount pods below see equal scores everywhere.
//   - TaintToleration, NodeAffinity, ImageLocality, PodTopologySpread and InterPodAffinity score
//     every node alike for bare pods without affinities on untainted nodes without images.
//
// NodeLabelPreference normalizes tier=spot to 100 and the others to 0; with its weight of 2 it adds
// 200 to n-a-spot, so every pod of the pool lands there. Even if the resource scores differed, each
// can move a node by at most 100 points times its weight of 1, and only by about one point per
// four pods of this size.
const (
	nodeCPU    = "4"
	nodeMemory = "4000Mi"
	podCPU     = "10m"
	podMemory  = "10Mi"
	podCount   = 4
)

// schedulingTimeout bounds every wait for the scheduler to act on a pod; binding on an idle
// envtest takes well under a second.
const schedulingTimeout = 30 * time.Second

// TestSchedulerPlacesPodsInPoolByPreference is the acceptance test of the out-of-tree plugins: it
// runs the real bin/kube-scheduler against the envtest apiserver with a profile that enables
// NodePool (pool=a) and NodeLabelPreference (tier=spot), and checks where real pods land. Nodes are
// API objects only: the scheduler needs no kubelet to bind.
func TestSchedulerPlacesPodsInPoolByPreference(t *testing.T) {
	ctx := t.Context()
	binary := schedulerBinary(t)
	// A suffix per run keeps names unique across -count=N and apart from other tests' objects.
	run := utilrand.String(5)
	schedulerName := "pool-a-" + run
	nodeName := func(n string) string { return fmt.Sprintf("sched-it-%s-%s", run, n) }

	nodes := map[string]map[string]string{
		nodeName("n-a-spot"):     {"pool": "a", "tier": "spot"},
		nodeName("n-a-ondemand"): {"pool": "a", "tier": "on-demand"},
		nodeName("n-b-spot"):     {"pool": "b", "tier": "spot"},
	}
	for name, labels := range nodes {
		createReadyNode(t, ctx, k8sClient, name, labels)
	}

	dir := t.TempDir()
	kubeconfig := writeKubeconfig(t, cfg, dir)
	config := writeFile(t, dir, "config.yaml", schedulerConfig(kubeconfig, schedulerName, ""))
	startScheduler(t, binary, config)

	t.Run("pods land in the pool on the preferred node", func(t *testing.T) {
		var keys []types.NamespacedName
		for i := range podCount {
			pod := createPod(t, ctx, k8sClient, "default", fmt.Sprintf("sched-it-%s-%d", run, i), schedulerName, nil)
			keys = append(keys, types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name})
		}
		for _, key := range keys {
			node := waitForBinding(t, key)
			labels, ok := nodes[node]
			if !ok {
				t.Errorf("Pod %s was bound to node %q, which this test did not create", key, node)
				continue
			}
			if labels["pool"] != "a" {
				t.Errorf("Pod %s was bound to node %s with pool=%s: NodePool must keep it in pool=a", key, node, labels["pool"])
				continue
			}
			if want := nodeName("n-a-spot"); node != want {
				t.Errorf("Pod %s was bound to node %s (tier=%s), want %s: NodeLabelPreference must prefer tier=spot", key, node, labels["tier"], want)
			}
		}
	})

	t.Run("a pod that only fits outside the pool stays pending", func(t *testing.T) {
		// NodeAffinity passes only n-b-spot, and NodePool rejects it.
		pod := createPod(t, ctx, k8sClient, "default", fmt.Sprintf("sched-it-%s-pool-b", run), schedulerName, map[string]string{"pool": "b"})
		key := types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}

		var last *corev1.PodCondition
		testutil.Eventually(t, schedulingTimeout, "pod "+key.String()+" to be reported unschedulable", func(ctx context.Context) error {
			if err := k8sClient.Get(ctx, key, pod); err != nil {
				return err
			}
			if pod.Spec.NodeName != "" {
				t.Fatalf("Pod %s was bound to node %s", key, pod.Spec.NodeName)
			}
			last = testutil.PodScheduled(pod)
			if last == nil || last.Status != corev1.ConditionFalse || last.Reason != corev1.PodReasonUnschedulable {
				return fmt.Errorf("PodScheduled condition %+v", last)
			}
			return nil
		})
		if !strings.Contains(last.Message, nodepool.ErrReasonOutsidePool) {
			t.Errorf("PodScheduled message of pod %s is %q, want it to contain %q", key, last.Message, nodepool.ErrReasonOutsidePool)
		}

		// The condition is written before a binding could be; read again to see that none followed.
		if err := k8sClient.Get(ctx, key, pod); err != nil {
			t.Fatalf("Getting pod %s: %v", key, err)
		}
		if pod.Spec.NodeName != "" {
			t.Errorf("Pod %s was bound to node %s after it was reported unschedulable", key, pod.Spec.NodeName)
		}
	})
}

// waitForBinding waits until the pod is bound and returns its node.
func waitForBinding(t *testing.T, key types.NamespacedName) string {
	t.Helper()
	pod := &corev1.Pod{}
	testutil.Eventually(t, schedulingTimeout, "pod "+key.String()+" to be bound", func(ctx context.Context) error {
		if err := k8sClient.Get(ctx, key, pod); err != nil {
			return err
		}
		if pod.Spec.NodeName == "" {
			return fmt.Errorf("not bound; PodScheduled condition %+v", testutil.PodScheduled(pod))
		}
		return nil
	})
	return pod.Spec.NodeName
}

// TestSchedulerRejectsUnknownPluginArgs checks that the binary decodes out-of-tree plugin args
// strictly, so that a typo in a profile fails at start-up instead of being silently ignored.
// With --write-config-to the scheduler runs its whole Setup (decode, validation, plugin
// construction) and exits without contacting the apiserver. The same config without the unknown
// field must pass, so that the failure is known to come from that field alone.
func TestSchedulerRejectsUnknownPluginArgs(t *testing.T) {
	binary := schedulerBinary(t)
	dir := t.TempDir()
	kubeconfig := writeKubeconfig(t, cfg, dir)

	tests := []struct {
		name              string
		extraNodePoolArgs string
		// wantErr are parts of the output (klog quotes the error, so the field name is matched
		// apart from its quotes); none means the scheduler must exit 0.
		wantErr []string
	}{
		{name: "valid args", extraNodePoolArgs: ""},
		{name: "unknown field", extraNodePoolArgs: ", bogus: 1", wantErr: []string{"strict decoding error", "NodePool", "unknown field", "bogus"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			config := writeFile(t, dir, strings.ReplaceAll(tt.name, " ", "-")+".yaml", schedulerConfig(kubeconfig, "pool-a", tt.extraNodePoolArgs))
			written := filepath.Join(t.TempDir(), "written.yaml")

			ctx, cancel := context.WithTimeout(t.Context(), 60*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, binary, "--config", config, "--secure-port", "0", "--write-config-to", written)
			out, err := cmd.CombinedOutput()

			if len(tt.wantErr) == 0 {
				if err != nil {
					t.Fatalf("kube-scheduler --write-config-to failed: %v\n%s", err, out)
				}
				got, err := os.ReadFile(written)
				if err != nil {
					t.Fatalf("Reading the written config: %v", err)
				}
				if !strings.Contains(string(got), "kind: NodePoolArgs") {
					t.Errorf("The written config has no NodePoolArgs:\n%s", got)
				}
				return
			}
			if ctx.Err() != nil {
				t.Fatalf("kube-scheduler did not exit within 60s:\n%s", out)
			}
			if _, ok := err.(*exec.ExitError); !ok {
				t.Fatalf("kube-scheduler exited with %v, want a non-zero exit status\n%s", err, out)
			}
			for _, want := range tt.wantErr {
				if !strings.Contains(string(out), want) {
					t.Errorf("kube-scheduler output does not contain %q:\n%s", want, out)
				}
			}
		})
	}
}
