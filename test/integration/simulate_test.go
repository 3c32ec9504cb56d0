package integration

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/internal/simulate"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
	"github.com/schedops/scheduler-profile-operator/scheduler/profile"
)

// TestSimulateLiveCluster snapshots a real apiserver and simulates its pending pods: the
// snapshot holds the nodes, the running pod and the pending pods of the profile's scheduler
// name, is read with lists only (the request log has no write), and survives a round trip
// through the snapshot file; the simulation sees the running pod's requests, so that the
// pending pods go to the other node.
func TestSimulateLiveCluster(t *testing.T) {
	ctx := t.Context()
	id := uniqueName("sim")
	selector := map[string]string{"simulate-test": id}
	full, free := id+"-full", id+"-free"
	createReadyNode(t, ctx, k8sClient, full, selector)
	createReadyNode(t, ctx, k8sClient, free, selector)
	running := testutil.MakePod(id+"-running", "default").Request(corev1.ResourceCPU, nodeCPU).Obj()
	running.Spec.NodeName = full
	createObject(t, running)
	for _, name := range []string{"a", "b"} {
		createPod(t, ctx, k8sClient, "default", id+"-"+name, id, selector)
	}

	var log testutil.RequestLog
	cs, err := kubernetes.NewForConfig(log.Wrap(cfg))
	if err != nil {
		t.Fatal(err)
	}
	var file bytes.Buffer
	list := simulate.NewListWriter(&file)
	stats, err := simulate.Snapshot(ctx, cs, simulate.SnapshotOptions{StripPods: true}, list.Write)
	if err != nil {
		t.Fatalf("Snapshot: %v", err)
	}
	if err := list.Close(); err != nil {
		t.Fatal(err)
	}
	writes, all := log.Take()
	if len(writes) > 0 || all == 0 {
		t.Errorf("the snapshot made %d requests, writes %v; want reads only", all, writes)
	}
	if stats["Node"] < 2 || stats["Pod"] < 3 || stats["Namespace"] == 0 {
		t.Errorf("snapshot %s: want at least 2 Nodes, 3 Pods and the Namespaces", stats)
	}
	objs, err := simulate.ReadObjects(&file)
	if err != nil {
		t.Fatalf("reading the snapshot back: %v", err)
	}
	cluster := &simulate.Cluster{Objects: objs}

	cfgYAML, err := profile.Render(&schedulingv1alpha1.SchedulerProfile{ObjectMeta: metav1.ObjectMeta{Name: id}}, profile.Settings{Namespace: operatorNamespace})
	if err != nil {
		t.Fatal(err)
	}
	workload := &simulate.Workload{Pods: cluster.PendingPods([]string{id})}
	if len(workload.Pods) != 2 {
		t.Fatalf("want the 2 pending pods of scheduler %s in the snapshot, got %d", id, len(workload.Pods))
	}
	results, err := simulate.Run(ctx, simulate.Profile{Name: id, Config: cfgYAML.YAML}, cluster, workload, simulate.Options{})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	for _, r := range results {
		if r.Node != free {
			t.Errorf("%s went to %q (%s), want %s: %s is full with the running pod", r.Pod, r.Node, r.Reason, free, full)
		}
	}
	if writes, _ := log.Take(); len(writes) > 0 {
		t.Errorf("the simulation wrote to the cluster: %v", writes)
	}
	var pending corev1.PodList
	if err := k8sClient.List(ctx, &pending, client.InNamespace("default")); err != nil {
		t.Fatal(err)
	}
	for _, p := range pending.Items {
		if strings.HasPrefix(p.Name, id+"-") && p.Name != running.Name && p.Spec.NodeName != "" {
			t.Errorf("pod %s was bound in the real cluster, to %s", p.Name, p.Spec.NodeName)
		}
	}
}

// createObject creates obj as the administrator and deletes it when the test ends, at once.
func createObject(t *testing.T, obj client.Object) {
	t.Helper()
	if err := k8sClient.Create(t.Context(), obj); err != nil {
		t.Fatalf("Creating %s: %v", obj.GetName(), err)
	}
	t.Cleanup(func() {
		if err := client.IgnoreNotFound(k8sClient.Delete(context.Background(), obj, client.GracePeriodSeconds(0))); err != nil {
			t.Errorf("Deleting %s: %v", obj.GetName(), err)
		}
	})
}

// TestSimulateCommandsLive runs the built manager: `snapshot` of the envtest apiserver to a
// file, then `simulate` of the cluster's pending pods on that file and on the live cluster
// (--kubeconfig), which print the same report.
func TestSimulateCommandsLive(t *testing.T) {
	ctx := t.Context()
	dir := t.TempDir()
	manager := filepath.Join(dir, "manager")
	build := exec.Command("go", "build", "-o", manager, ".")
	build.Dir = filepath.Join("..", "..")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the manager: %v\n%s", err, out)
	}
	id := uniqueName("simcli")
	selector := map[string]string{"simulate-test": id}
	createReadyNode(t, ctx, k8sClient, id+"-node", selector)
	createPod(t, ctx, k8sClient, "default", id+"-a", id, selector)
	kubeconfig := writeKubeconfig(t, cfg, dir)
	profileFile := writeFile(t, dir, "profile.yaml", "apiVersion: scheduling.schedops.io/v1alpha1\nkind: SchedulerProfile\nmetadata: {name: "+id+"}\n")
	snapshot := filepath.Join(dir, "snapshot.yaml")

	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(manager, args...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("manager %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
		}
		t.Logf("manager %s:\n%s%s", strings.Join(args, " "), stdout.String(), stderr.String())
		return stdout.String()
	}
	run("snapshot", "--kubeconfig", kubeconfig, "-o", snapshot, "--strip-pods")
	fromFile := run("simulate", "-f", profileFile, "--cluster", snapshot)
	live := run("simulate", "-f", profileFile, "--kubeconfig", kubeconfig)
	if !strings.Contains(fromFile, "default/"+id+"-a  "+id+"-node") {
		t.Errorf("the pending pod is not bound to %s-node in the simulation of the snapshot:\n%s", id, fromFile)
	}
	if fromFile != live {
		t.Errorf("the snapshot file and the live cluster give different reports:\n%s\n%s", fromFile, live)
	}
}
