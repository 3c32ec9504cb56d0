package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/internal/operatorenv"
	"github.com/schedops/scheduler-profile-operator/internal/simulate"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
)

const (
	// previewName is TestPreview's profile and its scheduler name.
	previewName = "e2e-preview"
	// previewPriority is the PriorityClass of TestPreview's pods, above the filler's 0.
	previewPriority = "e2e-preview-high"
)

// previewSpread labels the pods of TestPreview's workload, which a Service selects: the
// profile's default zone constraint applies to them only.
var previewSpread = map[string]string{"e2e.schedops.io/spread": "preview"}

// previewProfile is TestPreview's profile in a preview mode: the pods of a workload are spread
// strictly over zones (maxSkew 1, DoNotSchedule), and every pod is scored by its node's CPU
// alone with the scoring strategy (MostAllocated or LeastAllocated). With emptyPool, its pods
// are sent to a node pool that no node is in.
func previewProfile(mode, strategy string, emptyPool bool) string {
	var pool, poolArgs string
	if emptyPool {
		pool = `
    multiPoint: {enabled: [{name: NodePool}]}`
		poolArgs = `
  - name: NodePool
    args: {nodeSelector: {matchLabels: {pool: none}}}`
	}
	return fmt.Sprintf(`
metadata: {name: %s}
spec:
  rollout: {preview: {mode: %s}}
  plugins:
    score: {disabled: [{name: NodeResourcesBalancedAllocation}]}%s
  pluginConfig:
  - name: PodTopologySpread
    args:
      defaultingType: List
      defaultConstraints: [{maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule}]
  - name: NodeResourcesFit
    args: {scoringStrategy: {type: %s, resources: [{name: cpu, weight: 1}]}}%s`, previewName, mode, pool, strategy, poolArgs)
}

// TestPreview follows a profile in Guard mode through three changes, and checks what each
// preview says against what the profile's real scheduler then does.
//
//  1. A benign change, from MostAllocated to LeastAllocated, with 3 pods running: the preview
//     moves 2 of them and leaves none unschedulable, and the change rolls out.
//  2. The 3 pods are deleted. `manager simulate --kubeconfig` schedules them again, then the 9
//     pods of a workload, with the configuration that now runs, on the live cluster; then the
//     real scheduler schedules the same pods, one at a time as the simulation does. Both
//     agree: the pods per node and per zone, nodes used, bound, unschedulable and the pod
//     preempted; and the 3 pods move as the preview said.
//  3. A change to a node pool that no node is in: Guard refuses it, naming the stranded pods,
//     and the running scheduler keeps binding; Report rolls it out, and a new pod then stays
//     pending with NodePool's reason.
//
// The comparisons are exact because the cluster leaves neither scheduler a choice. Zone a has
// nodes of 3 and 4 CPUs, zone b one of 5, zone c one of 2 that a filler of priority 0 fills;
// every pod asks for 1 CPU at priority 1000, and is scored by the percentage of its node's CPU
// (an integer): at every step the best node leads the next by 5 points or more, so that no tie
// is left to chance.
//   - MostAllocated puts the 3 pods on the 3-CPU node (1 node used); LeastAllocated on the
//     5-CPU, 4-CPU and 3-CPU nodes in turn (3 nodes): 2 move.
//   - The workload's pods may never leave one zone 2 pods ahead of another. The third has to
//     go to zone c, where only evicting the filler makes room: it is preempted. Zone c then
//     holds 2, so zones a and b take 3 each, and the ninth pod, which only zone c could take,
//     is unschedulable: the others are of its own priority. In all, with the first 3 pods:
//     11 bound (zone a 5, b 4, c 2) on all 4 nodes, 1 unschedulable, 1 preempted.
func TestPreview(t *testing.T) {
	nodes, filler := previewCluster(t)
	applyProfile(t, previewProfile("Guard", "MostAllocated", false))
	first := waitRolledOut(t, previewName, "").Status.ConfigHash
	ran, pv := previewBenignChange(t, nodes, first)
	previewAgrees(t, nodes, filler, ran, pv)
	previewGuards(t, nodes, pv.To.ConfigHash)
}

// previewCluster creates TestPreview's nodes, the PriorityClass of its pods, the Service of its
// workload and the filler: a pod of priority 0 bound to the node of zone c, taking all its CPU.
func previewCluster(t *testing.T) (testNodes, *corev1.Pod) {
	nodes := makeNodes(t, "preview",
		nodeSpec{name: "a1", cpus: 3, labels: map[string]string{zoneKey: "a"}}, nodeSpec{name: "a2", cpus: 4, labels: map[string]string{zoneKey: "a"}},
		nodeSpec{name: "b1", cpus: 5, labels: map[string]string{zoneKey: "b"}}, nodeSpec{name: "c1", cpus: 2, labels: map[string]string{zoneKey: "c"}})
	pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: previewPriority}, Value: 1000}
	if err := k8s.Create(t.Context(), pc); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), pc) })
	createService(t, previewName, previewSpread)
	filler := nodes.pod("filler", corev1.DefaultSchedulerName, 2000)
	filler.Spec.NodeName = "preview-c1"
	createAtOnce(t, filler)
	return nodes, filler
}

// previewPods are n pods of TestPreview named prefix-i, of 1 CPU and the high priority; spread
// makes them the workload's.
func previewPods(nodes testNodes, prefix string, n int, spread bool) []*corev1.Pod {
	var out []*corev1.Pod
	for i := range n {
		pod := nodes.pod(fmt.Sprintf("%s-%d", prefix, i), previewName, 1000)
		pod.Spec.PriorityClassName = previewPriority
		if spread {
			maps.Copy(pod.Labels, previewSpread)
		}
		out = append(out, pod)
	}
	return out
}

// previewBenignChange runs 3 pods with the MostAllocated configuration that runs, then changes
// the profile to LeastAllocated: the preview moves some pods and strands none, and Guard rolls
// the change out. It returns the node each pod ran on, by namespace/name, and the preview.
func previewBenignChange(t *testing.T, nodes testNodes, running string) (map[string]string, schedulingv1alpha1.PreviewStatus) {
	pods := previewPods(nodes, "w1", 3, false)
	ran, used := map[string]string{}, map[string]bool{}
	for i, n := range schedule(t, pods...) {
		ran[client.ObjectKeyFromObject(pods[i]).String()] = n.Name
		used[n.Name] = true
	}
	applyProfile(t, previewProfile("Guard", "LeastAllocated", false))
	pv := waitRolledOut(t, previewName, running).Status.Preview
	t.Logf("The preview of the benign change: %+v; the pods ran on %v", pv, ran)
	if pv.From.ConfigHash != running || pv.Pods != 3 || pv.Moved == 0 || pv.From.Unschedulable != 0 || pv.To.Unschedulable != 0 || len(pv.NewlyUnschedulable) != 0 {
		t.Errorf("status.preview = %+v, want the 3 pods of %s, some moved and none unschedulable", pv, running)
	}
	// The running configuration, simulated, placed the pods as its scheduler did.
	if int(pv.From.NodesUsed) != len(used) {
		t.Errorf("the preview has the running configuration use %d nodes, its scheduler used %d (%v)", pv.From.NodesUsed, len(used), ran)
	}
	return ran, pv
}

// previewAgrees deletes the pods that ran, simulates them and the workload with `manager
// simulate` on the live cluster, schedules the same pods for real, and compares: the
// simulation with the scheduler, the scheduler with what the workload forces, and the pods that
// ran with the preview of the change.
func previewAgrees(t *testing.T, nodes testNodes, filler *corev1.Pod, ran map[string]string, pv schedulingv1alpha1.PreviewStatus) {
	deleteAndWait(t, previewPods(nodes, "w1", 3, false))
	pods := append(previewPods(nodes, "w1", 3, false), previewPods(nodes, "w2", 9, true)...)
	report := simulateLive(t, previewProfile("Guard", "LeastAllocated", false), pods)
	simulated := reportPlacements(report)
	scheduled := scheduleOrRefuse(t, zoneKey, pods)
	// The scheduler evicts a victim by deleting it, which kwok completes at once.
	got := &corev1.Pod{}
	if err := k8s.Get(t.Context(), client.ObjectKeyFromObject(filler), got); apierrors.IsNotFound(err) || got.DeletionTimestamp != nil {
		scheduled.preempted = []string{client.ObjectKeyFromObject(filler).String()}
	}
	agree(t, previewName, simulated, scheduled, true)
	if report.Summary.Preempted != len(scheduled.preempted) {
		t.Errorf("the simulation's summary counts %d pods preempted, the scheduler preempted %v", report.Summary.Preempted, scheduled.preempted)
	}
	want := placements{label: zoneKey, bound: 11, unschedulable: 1, nodesUsed: 4, preempted: []string{"default/preview-filler"},
		byLabel: map[string]int{"a": 5, "b": 4, "c": 2}, nodes: map[string]int{"preview-a1": 2, "preview-a2": 3, "preview-b1": 4, "preview-c1": 2}}
	for _, d := range differences(want, scheduled, true) {
		t.Errorf("the workload does not force the placements: %s (wanted, scheduled)", d)
	}

	// The pods that ran moved as the preview of the change said.
	moved, used := 0, map[string]bool{}
	for pod, node := range ran {
		if scheduled.pods[pod] != node {
			moved++
		}
		if scheduled.pods[pod] != "" {
			used[scheduled.pods[pod]] = true
		}
	}
	if int(pv.Moved) != moved || int(pv.To.NodesUsed) != len(used) || moved != 2 {
		t.Errorf("the preview moved %d pods onto %d nodes; the scheduler moved %d onto %d nodes (want 2)", pv.Moved, pv.To.NodesUsed, moved, len(used))
	}
}

// previewGuards changes the profile to a node pool that no node is in, which would strand every
// pod of the profile: Guard refuses it and the running scheduler keeps binding; Report rolls it
// out, and a new pod then stays pending with NodePool's reason.
func previewGuards(t *testing.T, nodes testNodes, running string) {
	applyProfile(t, previewProfile("Guard", "LeastAllocated", true))
	refused := waitCondition(t, previewName, schedulingv1alpha1.ConditionProgressing, metav1.ConditionFalse, schedulingv1alpha1.ReasonPreviewRefused, 120*time.Second)
	pv := refused.Status.Preview
	// The running configuration leaves one pod unschedulable, as its scheduler did; the new one
	// strands the 11 others.
	if pv.From.ConfigHash != running || pv.Pods != 12 || pv.From.Unschedulable != 1 || pv.To.Unschedulable != 12 || pv.Moved != 11 {
		t.Errorf("status.preview = %+v, want the 12 pods of %s, 1 then 12 unschedulable, 11 moved", pv, running)
	}
	msg := meta.FindStatusCondition(refused.Status.Conditions, schedulingv1alpha1.ConditionProgressing).Message
	if !strings.Contains(msg, "11 more of the profile's 12 pods") || !strings.Contains(msg, "default/preview-") || !strings.Contains(msg, "node pool") {
		t.Errorf("the PreviewRefused message %q does not name the 11 stranded pods with NodePool's reason", msg)
	}
	if refused.Status.ConfigHash != running || runner.Hash(previewName+"-scheduler") != running {
		t.Errorf("the refused change rolled out: status.configHash %s, the scheduler runs %s, want %s", refused.Status.ConfigHash, runner.Hash(previewName+"-scheduler"), running)
	}
	// The old scheduler still binds.
	schedule(t, nodes.pod("pv-guarded", previewName, 500))

	applyProfile(t, previewProfile("Report", "LeastAllocated", true))
	rolled := waitRolledOut(t, previewName, running)
	if pv := rolled.Status.Preview; pv.To.Unschedulable == 0 || len(pv.NewlyUnschedulable) == 0 || !strings.Contains(pv.NewlyUnschedulable[0].Reason, "node pool") {
		t.Errorf("status.preview = %+v, want the pods the change leaves unschedulable", pv)
	}
	// What the preview said is what the real scheduler does: a new pod stays pending.
	stranded := nodes.pod("pv-stranded", previewName, 500)
	createAtOnce(t, stranded)
	if msg := waitUnschedulable(t, stranded); !strings.Contains(msg, poolReason) {
		t.Errorf("the new pod was refused with %q, want the pool's reason (%q)", msg, poolReason)
	}
}

// deleteAndWait deletes the pods at once and waits until they are gone.
func deleteAndWait(t *testing.T, pods []*corev1.Pod) {
	t.Helper()
	for _, pod := range pods {
		if err := client.IgnoreNotFound(k8s.Delete(t.Context(), pod, client.GracePeriodSeconds(0))); err != nil {
			t.Fatal(err)
		}
	}
	testutil.Eventually(t, 30*time.Second, "the pods to be gone", func(ctx context.Context) error {
		for _, pod := range pods {
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(pod), &corev1.Pod{}); !apierrors.IsNotFound(err) {
				return fmt.Errorf("pod %s: %v", pod.Name, err)
			}
		}
		return nil
	})
}

// simulateLive runs bin/manager (make test-e2e builds it) as `manager simulate` of the profile
// doc on the live cluster, with the pods as its workload file, and returns its one run.
func simulateLive(t *testing.T, doc string, pods []*corev1.Pod) simulate.RunReport {
	t.Helper()
	paths, err := operatorenv.FindPaths()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	profileFile, workloadFile := filepath.Join(dir, "profile.yaml"), filepath.Join(dir, "workload.yaml")
	var workload bytes.Buffer
	for _, pod := range pods {
		pod = pod.DeepCopy()
		pod.APIVersion, pod.Kind = "v1", "Pod"
		data, err := yaml.Marshal(pod)
		if err != nil {
			t.Fatal(err)
		}
		workload.WriteString("---\n")
		workload.Write(data)
	}
	if err := os.WriteFile(profileFile, []byte("apiVersion: scheduling.schedops.io/v1alpha1\nkind: SchedulerProfile\n"+doc), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(workloadFile, workload.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"simulate", "-f", profileFile, "--kubeconfig", cluster.Kubeconfig(), "--namespace", operatorNamespace,
		"--workload", workloadFile, "--zone-label", zoneKey, "-o", "json"}
	cmd := exec.CommandContext(t.Context(), filepath.Join(paths.Root, "bin", "manager"), args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("manager %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	report := &simulate.Report{}
	if err := json.Unmarshal(stdout.Bytes(), report); err != nil || len(report.Runs) != 1 {
		t.Fatalf("manager simulate printed %d runs (%v):\n%s", len(report.Runs), err, stdout.String())
	}
	return report.Runs[0]
}
