package manager

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/internal/simulate"
)

// TestSimulateProjectionKeepsPlacements: projecting a profile's node restrictions onto its pods
// does not change what its scheduler decides. Every sample, on the example cluster and workload,
// gives the same report with the projection as with --no-projection (placements, summaries,
// nodes), and the pool sample's pods are projected (so that the comparison compares something).
// Only the reason of a pod no node can hold may name another filter: NodeAffinity, which runs
// before NodePool, now rejects the nodes outside the pool first.
func TestSimulateProjectionKeepsPlacements(t *testing.T) {
	atRoot(t)
	files := map[string]string{
		"binpack":  sample + "binpack.yaml",
		"spread":   sample + "spread.yaml",
		"nodepool": sample + "nodepool.yaml",
		"shared":   "config/samples/scheduling_v1alpha1_scheduler_shared.yaml",
	}
	run := func(t *testing.T, file string, more ...string) *simulate.Report {
		t.Helper()
		args := append([]string{"-f", file, "--cluster", simCluster, "--workload", simWorkload, "-o", "json"}, more...)
		var stdout, stderr bytes.Buffer
		if code := runSimulate(args, &stdout, &stderr); code != 0 {
			t.Fatalf("simulate %v: exit code %d, stderr:\n%s", more, code, stderr.String())
		}
		report := &simulate.Report{}
		if err := json.Unmarshal(stdout.Bytes(), report); err != nil {
			t.Fatal(err)
		}
		return report
	}
	for name, file := range files {
		t.Run(name, func(t *testing.T) {
			with, without := run(t, file), run(t, file, "--no-projection")
			for _, r := range [][]simulate.RunReport{with.Runs, without.Runs} {
				for i := range r {
					for j := range r[i].Pods {
						if pod := &r[i].Pods[j]; pod.Node == "" && pod.Reason != "" {
							pod.Reason = "unschedulable"
						}
					}
				}
			}
			if diff := cmp.Diff(without, with); diff != "" {
				t.Errorf("the report with projection differs from the one without (-without +with):\n%s", diff)
			}
		})
	}

	// The pool sample's pods get its selector: the comparison above is not of two identical inputs.
	p, names, err := loadSimulationProfile(files["nodepool"], defaultNamespace)
	if err != nil {
		t.Fatal(err)
	}
	objs, err := readObjectFile(simWorkload)
	if err != nil {
		t.Fatal(err)
	}
	w, err := simulate.ExpandWorkload(objs)
	if err != nil {
		t.Fatal(err)
	}
	if err := projectPods(w.Pods, files["nodepool"], p.Config, names); err != nil {
		t.Fatal(err)
	}
	projected := 0
	for _, pod := range w.Pods {
		if note, ok := pod.Annotations[v1alpha1.AnnotationProjectedNodeRestrictions]; ok {
			projected++
			if want := "SchedulerProfile batch-pool: NodePool nodeSelector (pool=batch)"; note != want {
				t.Errorf("pod %s/%s is annotated %q, want %q", pod.Namespace, pod.Name, note, want)
			}
		}
	}
	if projected == 0 {
		t.Errorf("no pod of %s was projected: the workload has no pod of the pool sample's scheduler name", simWorkload)
	}
	t.Logf("%d of %d pods of the workload projected for the pool sample", projected, len(w.Pods))
}
