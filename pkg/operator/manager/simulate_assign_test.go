package manager

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/schedops/scheduler-profile-operator/internal/simulate"
)

// TestSimulateAssignsNamespaces: a workload pod that names no scheduler, in a namespace the
// cluster labels with a member's scheduler name, is simulated on that member, as the pod
// assignment policy would assign it; the pods of an unlabelled namespace go to the first
// member, and a dry-run namespace assigns nothing.
func TestSimulateAssignsNamespaces(t *testing.T) {
	atRoot(t)
	dir := t.TempDir()
	cluster := filepath.Join(dir, "cluster.yaml")
	workload := filepath.Join(dir, "workload.yaml")
	write := func(path, doc string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(cluster, `apiVersion: v1
kind: List
items:
- apiVersion: v1
  kind: Node
  metadata: {name: node-1}
  status:
    allocatable: {cpu: "8", memory: 16Gi, pods: "110"}
    conditions: [{type: Ready, status: "True"}]
- apiVersion: v1
  kind: Namespace
  metadata: {name: analytics, labels: {scheduling.schedops.io/scheduler-name: shared-spread}}
- apiVersion: v1
  kind: Namespace
  metadata:
    name: trial
    labels: {scheduling.schedops.io/scheduler-name: shared-spread, scheduling.schedops.io/scheduler-name-mode: dry-run}
`)
	pod := func(namespace, name string) string {
		return `---
apiVersion: v1
kind: Pod
metadata: {name: ` + name + `, namespace: ` + namespace + `}
spec:
  containers: [{name: app, image: app, resources: {requests: {cpu: 100m}}}]
`
	}
	write(workload, pod("analytics", "assigned")+pod("default", "unlabelled")+pod("trial", "dry-run"))

	var stdout, stderr bytes.Buffer
	if code := runSimulate([]string{"-f", "config/samples/scheduling_v1alpha1_scheduler_shared.yaml", "--cluster", cluster, "--workload", workload, "-o", "json"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit code %d, stderr:\n%s", code, stderr.String())
	}
	var report simulate.Report
	if err := json.Unmarshal(stdout.Bytes(), &report); err != nil {
		t.Fatalf("not a JSON report: %v\n%s", err, stdout.String())
	}
	got := map[string]string{}
	for _, p := range report.Runs[0].Pods {
		if p.Node == "" {
			t.Errorf("pod %s is not bound: %s", p.Pod, p.Reason)
		}
		got[p.Pod] = p.SchedulerName
	}
	want := map[string]string{"analytics/assigned": "shared-spread", "default/unlabelled": "shared-binpack", "trial/dry-run": "shared-binpack"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("scheduler name per pod (-want +got):\n%s", diff)
	}
}
