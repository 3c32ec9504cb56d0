package manager

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/schedops/scheduler-profile-operator/internal/simulate"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/ with the current output")

// The fixtures of docs/tasks/simulate-a-change.md.
const (
	simCluster  = "docs/examples/simulate/cluster.yaml"
	simWorkload = "docs/examples/simulate/workload.yaml"
	sample      = "config/samples/scheduling_v1alpha1_schedulerprofile_"
)

// TestSimulateGolden runs the samples on the example cluster and workload and compares the
// reports with testdata/simulate/<name>.txt. The runs are deterministic (see package simulate),
// so the whole report is compared, placements included.
// atRoot runs the test from the repository's root, where the commands' file arguments (samples,
// examples) are named as a user names them there; it returns this package's directory.
func atRoot(t *testing.T) string {
	t.Helper()
	here, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(filepath.Join("..", "..", ".."))
	return here
}

func TestSimulateGolden(t *testing.T) {
	here := atRoot(t)
	tests := []struct {
		name string
		args []string
	}{
		{"binpack", []string{"-f", sample + "binpack.yaml"}},
		{"spread", []string{"-f", sample + "spread.yaml"}},
		{"nodepool", []string{"-f", sample + "nodepool.yaml"}},
		{"shared", []string{"-f", "config/samples/scheduling_v1alpha1_scheduler_shared.yaml"}},
		{"compare", []string{"-f", sample + "spread.yaml", "--compare", sample + "binpack.yaml"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append(tt.args, "--cluster", simCluster, "--workload", simWorkload, "--columns", "topology.kubernetes.io/zone,pool")
			var stdout, stderr bytes.Buffer
			if code := runSimulate(args, &stdout, &stderr); code != 0 {
				t.Fatalf("exit code %d, stderr:\n%s", code, stderr.String())
			}
			if stderr.Len() > 0 {
				t.Errorf("want no advice on the samples on the example cluster, got:\n%s", stderr.String())
			}
			golden := filepath.Join(here, "testdata", "simulate", tt.name+".txt")
			if *update {
				if err := os.WriteFile(golden, stdout.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(want), stdout.String()); diff != "" {
				t.Errorf("report differs from %s (-want +got):\n%s", golden, diff)
			}
		})
	}
}

// TestSimulateSummaries checks the numbers a comparison relies on, in the JSON report, against
// what each profile is for: bin-packing fills the fewest nodes, spreading evens the zones, the
// pool profile binds only in its pool; the pod no node can hold is unschedulable with the
// scheduler's own reason, and the running database pod's requests count.
func TestSimulateSummaries(t *testing.T) {
	atRoot(t)
	tests := []struct {
		profile   string
		nodesUsed int
		perZone   map[string]int
		// nodes are the only nodes the web pods may land on, nil for any.
		nodes []string
	}{
		{profile: "binpack", nodesUsed: 2, perZone: map[string]int{"zone-a": 2, "zone-b": 4}},
		{profile: "spread", nodesUsed: 4, perZone: map[string]int{"zone-a": 3, "zone-b": 3}},
		{profile: "nodepool", nodesUsed: 2, perZone: map[string]int{"zone-a": 3, "zone-b": 3}, nodes: []string{"node-a2", "node-b2"}},
	}
	for _, tt := range tests {
		t.Run(tt.profile, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := runSimulate([]string{"-f", sample + tt.profile + ".yaml", "--cluster", simCluster, "--workload", simWorkload, "-o", "json", "--fail-on-unschedulable"}, &stdout, &stderr)
			if code != exitUnschedulable {
				t.Fatalf("exit code %d, want %d (the huge pod fits nowhere); stderr:\n%s", code, exitUnschedulable, stderr.String())
			}
			var report simulate.Report
			if err := json.Unmarshal(stdout.Bytes(), &report); err != nil {
				t.Fatalf("not a JSON report: %v\n%s", err, stdout.String())
			}
			s := report.Runs[0].Summary
			if s.Bound != 6 || s.Unschedulable != 1 || s.NodesUsed != tt.nodesUsed || !cmp.Equal(s.PodsPerZone, tt.perZone) {
				t.Errorf("summary %+v, want 6 bound, 1 unschedulable, %d nodes used, per zone %v", s, tt.nodesUsed, tt.perZone)
			}
			if s.CPU.Max > 100 {
				t.Errorf("a node is requested %.1f%% of its CPU: the running pod was not seen", s.CPU.Max)
			}
			for _, p := range report.Runs[0].Pods {
				switch {
				case p.Pod == "default/huge":
					if p.Node != "" || !strings.Contains(p.Reason, "Insufficient cpu") {
						t.Errorf("huge: node %q, reason %q; want unschedulable for Insufficient cpu", p.Node, p.Reason)
					}
				case tt.nodes != nil && !strings.Contains(strings.Join(tt.nodes, ","), p.Node):
					t.Errorf("%s went to %s, outside %v", p.Pod, p.Node, tt.nodes)
				}
			}
		})
	}
}

func TestSimulateErrors(t *testing.T) {
	atRoot(t)
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantErr  string
	}{
		{"no cluster", []string{"-f", sample + "binpack.yaml"}, exitUsage, "Usage: manager simulate"},
		{"bad output", []string{"-f", sample + "binpack.yaml", "--cluster", simCluster, "-o", "xml"}, exitUsage, "Usage: manager simulate"},
		{"invalid profile", []string{"-f", "docs/examples/broken-profile.yaml", "--cluster", simCluster}, exitError, "is invalid:"},
		{"not a workload", []string{"-f", sample + "binpack.yaml", "--cluster", simCluster, "--workload", sample + "binpack.yaml"}, exitError, "error:"},
		{"missing cluster file", []string{"-f", sample + "binpack.yaml", "--cluster", "nothing.yaml"}, exitError, "nothing.yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := runSimulate(tt.args, &stdout, &stderr); code != tt.wantCode {
				t.Errorf("exit code %d, want %d; stderr:\n%s", code, tt.wantCode, stderr.String())
			}
			if !strings.Contains(stderr.String(), tt.wantErr) {
				t.Errorf("stderr does not contain %q:\n%s", tt.wantErr, stderr.String())
			}
		})
	}
}

// TestSimulateGang: the gang of config/samples/gang (three 1-CPU pods, minCount 3) on two nodes
// of one CPU is unschedulable as a whole, where two pods alone would bind; with a third node
// added to the snapshot file, all three bind, one per node.
func TestSimulateGang(t *testing.T) {
	atRoot(t)
	const gangCluster = "docs/examples/simulate/gang-cluster.yaml"
	simulateGang := func(t *testing.T, cluster string) simulate.RunReport {
		t.Helper()
		var stdout, stderr bytes.Buffer
		args := []string{"-f", "config/samples/gang/schedulerprofile.yaml", "--cluster", cluster, "--workload", "config/samples/gang/podgroup.yaml", "-o", "json"}
		if code := runSimulate(args, &stdout, &stderr); code != 0 {
			t.Fatalf("exit code %d, stderr:\n%s", code, stderr.String())
		}
		var report simulate.Report
		if err := json.Unmarshal(stdout.Bytes(), &report); err != nil {
			t.Fatal(err)
		}
		return report.Runs[0]
	}
	run := simulateGang(t, gangCluster)
	if run.Summary.Bound != 0 || run.Summary.Unschedulable != 3 {
		t.Errorf("on 2 nodes: %d bound, %d unschedulable; want the gang unschedulable as a whole (0 and 3)", run.Summary.Bound, run.Summary.Unschedulable)
	}
	if !strings.Contains(run.Pods[0].Reason, "minCount (3) cannot be satisfied") {
		t.Errorf("reason %q does not say the gang cannot be satisfied", run.Pods[0].Reason)
	}

	data, err := os.ReadFile(gangCluster)
	if err != nil {
		t.Fatal(err)
	}
	third := strings.ReplaceAll(string(data)[strings.Index(string(data), "- apiVersion: v1"):strings.Index(string(data), "- apiVersion: v1\n  kind: Node\n  metadata:\n    name: small-2")], "small-1", "small-3")
	bigger := filepath.Join(t.TempDir(), "cluster.yaml")
	if err := os.WriteFile(bigger, append(data, third...), 0o644); err != nil {
		t.Fatal(err)
	}
	run = simulateGang(t, bigger)
	nodes := map[string]bool{}
	for _, p := range run.Pods {
		nodes[p.Node] = true
	}
	if run.Summary.Bound != 3 || len(nodes) != 3 || nodes[""] {
		t.Errorf("on 3 nodes: pods %+v; want all 3 bound, one per node", run.Pods)
	}
}

// TestSimulateAdvice: simulate prints the advice on the profile, cluster checks included, to
// stderr, and the report to stdout as without advice: the zone-spread sample on a cluster without
// zone labels leaves its workloads' pods Pending, and says why before the report shows it.
func TestSimulateAdvice(t *testing.T) {
	atRoot(t)
	cluster := filepath.Join(t.TempDir(), "cluster.yaml")
	var nodes strings.Builder
	nodes.WriteString("apiVersion: v1\nkind: List\nitems:\n")
	for _, name := range []string{"node-1", "node-2"} {
		nodes.WriteString("- apiVersion: v1\n  kind: Node\n  metadata: {name: " + name + ", labels: {kubernetes.io/hostname: " + name + "}}\n" +
			"  status: {allocatable: {cpu: \"4\", memory: 8Gi, pods: \"110\"}, conditions: [{type: Ready, status: \"True\"}]}\n")
	}
	nodes.WriteString("- apiVersion: scheduling.k8s.io/v1\n  kind: PriorityClass\n  metadata: {name: high}\n  value: 1000\n")
	if err := os.WriteFile(cluster, []byte(nodes.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := runSimulate([]string{"-f", sample + "spread.yaml", "--cluster", cluster, "--workload", simWorkload}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit code %d, want 0: advice is no error; stderr:\n%s", code, stderr.String())
	}
	for _, want := range []string{
		"SchedulerProfile spread: advice (docs/reference/advice.md):",
		"  SPA301: spec.pluginConfig[PodTopologySpread].args.defaultConstraints[0] (DoNotSchedule) spreads on topology.kubernetes.io/zone, which 0 of 2 nodes carry",
	} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr does not contain %q:\n%s", want, stderr.String())
		}
	}
	if strings.Contains(stderr.String(), "SPA501") {
		t.Errorf("SPA501 with preemption on:\n%s", stderr.String())
	}
	if strings.Contains(stdout.String(), "SPA301") || !strings.Contains(stdout.String(), "Profile spread: 0 bound, 7 unschedulable") {
		t.Errorf("want the report alone on stdout, got:\n%s", stdout.String())
	}
}

// TestSimulateLimits: a simulation that reaches --time-limit or --cpu-limit prints its report,
// which says which limit stopped it and how far it got, names it on stderr and exits with
// status 4.
func TestSimulateLimits(t *testing.T) {
	atRoot(t)
	tests := []struct {
		name string
		flag []string
		// stopped begins the message; the pods decided within a CPU time limit vary.
		stopped string
	}{
		{"wall clock", []string{"--time-limit", "1ns"}, "the simulation stopped at its wall-clock time limit of 1ns, with 0 of 7 pods decided: the other 7 were not simulated"},
		{"CPU time", []string{"--cpu-limit", "1ms"}, "the simulation stopped at its CPU time limit of 1ms, with "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			args := append([]string{"-f", sample + "binpack.yaml", "--cluster", simCluster, "--workload", simWorkload}, tt.flag...)
			if code := runSimulate(args, &stdout, &stderr); code != exitLimit {
				t.Fatalf("exit code %d, want %d; stderr:\n%s", code, exitLimit, stderr.String())
			}
			if !strings.Contains(stdout.String(), "STOPPED: "+tt.stopped) {
				t.Errorf("the report does not say the simulation stopped (%q):\n%s", tt.stopped, stdout.String())
			}
			if want := "profile binpack: " + tt.stopped; !strings.HasPrefix(stderr.String(), want) || strings.Count(stderr.String(), "\n") != 1 {
				t.Errorf("stderr %q, want one line beginning %q", stderr.String(), want)
			}
		})
	}
}
