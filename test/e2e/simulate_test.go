package e2e

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/internal/operatorenv"
	"github.com/schedops/scheduler-profile-operator/internal/simulate"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
	"github.com/schedops/scheduler-profile-operator/scheduler/profile"
)

// simulationCase is one sample profile, the nodes of its own, and the workload that is first
// simulated on a snapshot of the cluster and then scheduled by the profile's real scheduler.
type simulationCase struct {
	// name is the test's name: its nodes' label and taint, and the prefix of its nodes and pods.
	name string
	// sample is the file in config/samples; the profile is applied as e2e-<name>.
	sample string
	nodes  []nodeSpec
	// pods and milliCPU are the workload: pods identical pods of milliCPU each.
	pods     int
	milliCPU int64
	// label is the node label the placements are counted by: the node, the zone or the pool.
	label string
	// want and wantUnschedulable are the pods per label value and the pods refused that the
	// workload forces (see the test's comment): both sides must give them.
	want              map[string]int
	wantUnschedulable int
	// service makes the pods a workload (a Service selects them), which the default topology
	// spreading constraints of the spreading sample apply to.
	service bool
}

// TestSimulationMatchesScheduling: for the bin-packing, zone-spreading and node-pool samples, the
// workload that `manager simulate` schedules on a snapshot of the live cluster (`manager
// snapshot`'s code, its file round trip, and the configuration `manager simulate -f` renders
// from the sample) is then created for real, one pod at a time as the simulation creates it, and
// scheduled by the operator's scheduler of the same profile. Where the pods went agrees exactly:
// pods per node and the nodes used (bin-packing), pods per zone (spreading), pods bound in the
// pool and unschedulable (node pool).
//
// The comparison is exact, not statistical, because each workload leaves the scheduler no choice
// in what is compared, whatever the order in which either scheduler breaks ties between equal
// nodes (which may differ: the simulation visits nodes in order, upstream does not):
//   - bin-packing: four nodes of 4, 6, 8 and 10 CPUs, equal memory, six pods of 1 CPU. With
//     MostAllocated every pod scores a node by its requested share, which differs for every node
//     (25, 16, 12, 10% for the first pod): the pods fill the 4-CPU node (4 pods, then it is full)
//     and then the 6-CPU one (2 pods). No two nodes ever tie, so even the set of nodes is forced.
//   - spreading: zones a (two nodes), b and c (one each), all with room for every pod, and six
//     pods of one Service. The zone constraint is DoNotSchedule with maxSkew 1, so after every
//     pod no zone has two more than another: six pods can only end 2-2-2. Which node of zone a
//     takes its pods is a soft preference and is not compared.
//   - node pool: the pool (pool=batch) is two nodes of 4 CPUs; a 16-CPU node outside it has
//     room for all. Ten identical pods of 1 CPU: the first eight fill the pool, whatever the
//     order, and the last two fit in no node of the pool: 8 bound in the pool, 0 outside it,
//     2 unschedulable. The real scheduler retries those two on cluster events, but nothing frees
//     room in the pool, so they stay unschedulable, as a recheck at the end asserts.
//
// Both schedulers see the workload one pod at a time, each pod after the previous one is bound
// or refused, and the pods are identical, so the queue order (priority, then creation) is the
// same on both sides. Each case has its own tainted nodes, pods that only tolerate those nodes
// and its own profile, names and labels (sim-*), all deleted when its subtest ends.
func TestSimulationMatchesScheduling(t *testing.T) {
	cases := []simulationCase{{
		name:   "sim-binpack",
		sample: "scheduling_v1alpha1_schedulerprofile_binpack.yaml",
		nodes:  []nodeSpec{{name: "a", cpus: 4}, {name: "b", cpus: 6}, {name: "c", cpus: 8}, {name: "d", cpus: 10}},
		pods:   6, milliCPU: 1000,
		label: corev1.LabelHostname,
		want:  map[string]int{"sim-binpack-a": 4, "sim-binpack-b": 2},
	}, {
		name:   "sim-spread",
		sample: "scheduling_v1alpha1_schedulerprofile_spread.yaml",
		nodes: []nodeSpec{
			{name: "a1", cpus: 8, labels: map[string]string{zoneKey: "a"}}, {name: "a2", cpus: 8, labels: map[string]string{zoneKey: "a"}},
			{name: "b1", cpus: 8, labels: map[string]string{zoneKey: "b"}}, {name: "c1", cpus: 8, labels: map[string]string{zoneKey: "c"}},
		},
		pods: 6, milliCPU: 500,
		label:   zoneKey,
		want:    map[string]int{"a": 2, "b": 2, "c": 2},
		service: true,
	}, {
		name:   "sim-pool",
		sample: "scheduling_v1alpha1_schedulerprofile_nodepool.yaml",
		nodes: []nodeSpec{
			{name: "batch-spot", cpus: 4, labels: map[string]string{poolKey: "batch", "node.kubernetes.io/lifecycle": "spot"}},
			{name: "batch-ondemand", cpus: 4, labels: map[string]string{poolKey: "batch", "node.kubernetes.io/lifecycle": "on-demand"}},
			{name: "general", cpus: 16, labels: map[string]string{poolKey: "general", "node.kubernetes.io/lifecycle": "spot"}},
		},
		pods: 10, milliCPU: 1000,
		label: poolKey,
		want:  map[string]int{"batch": 8}, wantUnschedulable: 2,
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) { testSimulationMatches(t, c) })
	}
}

func testSimulationMatches(t *testing.T, c simulationCase) {
	nodes := makeNodes(t, c.name, c.nodes...)
	sample, sim := sampleProfile(t, c.sample, "e2e-"+c.name)
	p := applyProfile(t, profileDoc(t, sample))
	p = waitCondition(t, p.Name, schedulingv1alpha1.ConditionConfigValid, metav1.ConditionTrue, "", 30*time.Second)
	// The simulation builds its scheduler from byte for byte the configuration the operator
	// rolled out for the profile.
	if p.Status.ConfigHash != sim.hash {
		t.Fatalf("the operator rolled out config %s for %s, the simulation renders %s", p.Status.ConfigHash, p.Name, sim.hash)
	}
	waitScheduler(t, p.Name, p.Status.ConfigHash)
	if c.service {
		createService(t, c.name, map[string]string{dedicatedKey: c.name})
	}
	var pods []*corev1.Pod
	for i := range c.pods {
		pods = append(pods, nodes.pod(strconv.Itoa(i), sim.schedulerName, c.milliCPU))
	}

	// Simulated: on a snapshot of the cluster as it is now, before any pod of the workload exists.
	snapshot := takeSnapshot(t)
	workload := &simulate.Workload{}
	for _, pod := range pods {
		workload.Pods = append(workload.Pods, pod.DeepCopy())
	}
	results, err := simulate.Run(t.Context(), sim.profile, snapshot, workload, simulate.Options{})
	if err != nil {
		t.Fatalf("simulating: %v", err)
	}
	simulated := reportPlacements(simulate.NewRunReport(sim.profile.Name, snapshot, workload, results, []string{c.label}, c.label))

	// Scheduled: the same pods, for real.
	scheduled := scheduleOrRefuse(t, c.label, pods)

	if simulated.bound+simulated.unschedulable != c.pods {
		t.Errorf("the simulation reported %d of %d pods", simulated.bound+simulated.unschedulable, c.pods)
	}
	// Only bin-packing forces the node of each pod; the others force pods per zone or pool.
	agree(t, p.Name, simulated, scheduled, c.label == corev1.LabelHostname)
	// What the workload forces: had it left a choice, an agreement would be luck.
	if !maps.Equal(scheduled.byLabel, c.want) || scheduled.unschedulable != c.wantUnschedulable {
		t.Errorf("scheduled %v per %s and %d unschedulable, want %v and %d: the workload does not force the placements", scheduled.byLabel, c.label, scheduled.unschedulable, c.want, c.wantUnschedulable)
	}
}

// simulationProfile is a sample as `manager simulate -f` renders it.
type simulationProfile struct {
	profile       simulate.Profile
	hash          string
	schedulerName string
}

// sampleProfile reads a sample of config/samples, renames it (and its scheduler name, if it sets
// one) so that it serves this test's pods only, and renders and validates it as `manager
// simulate -f` does a SchedulerProfile.
func sampleProfile(t *testing.T, file, name string) (*schedulingv1alpha1.SchedulerProfile, simulationProfile) {
	t.Helper()
	paths, err := operatorenv.FindPaths()
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(paths.Root, "config", "samples", file))
	if err != nil {
		t.Fatal(err)
	}
	p := &schedulingv1alpha1.SchedulerProfile{}
	if err := yaml.UnmarshalStrict(data, p); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	p.Name = name
	if p.Spec.SchedulerName != "" {
		p.Spec.SchedulerName = name
	}
	cfg, err := profile.Render(p, profile.Settings{Namespace: operatorNamespace})
	if err != nil {
		t.Fatalf("rendering %s: %v", file, err)
	}
	if errs := profile.ValidateWithGates(cfg.YAML, p.Spec.Scheduler.FeatureGates, field.NewPath("spec", "scheduler", "featureGates")); len(errs) > 0 {
		t.Fatalf("%s is invalid: %v", file, errs.ToAggregate())
	}
	return p, simulationProfile{
		profile:       simulate.Profile{Name: p.Name, Config: cfg.YAML, FeatureGates: p.Spec.Scheduler.FeatureGates},
		hash:          cfg.Hash,
		schedulerName: cfg.SchedulerName,
	}
}

// profileDoc is the profile's name and spec as YAML, for applyProfile.
func profileDoc(t *testing.T, p *schedulingv1alpha1.SchedulerProfile) string {
	t.Helper()
	data, err := yaml.Marshal(map[string]any{"metadata": map[string]string{"name": p.Name}, "spec": p.Spec})
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// takeSnapshot snapshots the local cluster with `manager snapshot`'s code into the file format it
// writes, and reads that back as `manager simulate --cluster` does.
func takeSnapshot(t *testing.T) *simulate.Cluster {
	t.Helper()
	cfg, err := cluster.RESTConfig()
	if err != nil {
		t.Fatal(err)
	}
	clientset, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var file bytes.Buffer
	list := simulate.NewListWriter(&file)
	stats, err := simulate.Snapshot(t.Context(), clientset, simulate.SnapshotOptions{}, list.Write)
	if err == nil {
		err = list.Close()
	}
	if err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	objs, err := simulate.ReadObjects(&file)
	if err != nil {
		t.Fatalf("reading the snapshot: %v", err)
	}
	t.Logf("snapshot: %s (%d bytes)", stats, list.Bytes)
	return &simulate.Cluster{Objects: objs}
}

// placements are where a workload went, on one side of the comparison.
type placements struct {
	label string
	// pods are the node of each pod by namespace/name, "" for an unschedulable one; nodes are
	// the pods per node, byLabel the pods per value of the node label.
	pods                 map[string]string
	nodes, byLabel       map[string]int
	bound, unschedulable int
	nodesUsed            int
	// preempted are the running pods, namespace/name, that were evicted to make room, sorted.
	preempted []string
}

func (p placements) String() string {
	return fmt.Sprintf("%d bound, %d unschedulable, %d nodes used, %d preempted %v; pods per %s: %s; per node: %s",
		p.bound, p.unschedulable, p.nodesUsed, len(p.preempted), p.preempted, p.label, counts(p.byLabel), counts(p.nodes))
}

// reportPlacements are the placements that a simulation's report gives: its summary's counts
// (pods per zone by its zone label), and each pod's node and the running pods it preempted.
func reportPlacements(r simulate.RunReport) placements {
	out := placements{label: r.Summary.ZoneLabel, pods: map[string]string{}, nodes: map[string]int{}, byLabel: r.Summary.PodsPerZone,
		bound: r.Summary.Bound, unschedulable: r.Summary.Unschedulable, nodesUsed: r.Summary.NodesUsed}
	for _, p := range r.Pods {
		out.pods[p.Pod] = p.Node
		if p.Node != "" {
			out.nodes[p.Node]++
		}
		out.preempted = append(out.preempted, p.Preempted...)
	}
	slices.Sort(out.preempted)
	return out
}

// differences says where two placements differ: pods bound, unschedulable, preempted and per
// label value, and with perNode the pods per node and the nodes used.
func differences(a, b placements, perNode bool) []string {
	var out []string
	if a.bound != b.bound || a.unschedulable != b.unschedulable {
		out = append(out, fmt.Sprintf("bound/unschedulable %d/%d and %d/%d", a.bound, a.unschedulable, b.bound, b.unschedulable))
	}
	if !slices.Equal(a.preempted, b.preempted) {
		out = append(out, fmt.Sprintf("preempted %v and %v", a.preempted, b.preempted))
	}
	if !maps.Equal(a.byLabel, b.byLabel) {
		out = append(out, fmt.Sprintf("pods per %s %s and %s", a.label, counts(a.byLabel), counts(b.byLabel)))
	}
	if perNode && (!maps.Equal(a.nodes, b.nodes) || a.nodesUsed != b.nodesUsed) {
		out = append(out, fmt.Sprintf("pods per node %s (%d nodes used) and %s (%d)", counts(a.nodes), a.nodesUsed, counts(b.nodes), b.nodesUsed))
	}
	return out
}

// agree logs both sides of a comparison, and fails the test where the simulated placements
// differ from the scheduled ones (differences).
func agree(t *testing.T, what string, simulated, scheduled placements, perNode bool) {
	t.Helper()
	t.Logf("%s simulated: %s", what, simulated)
	t.Logf("%s scheduled: %s", what, scheduled)
	for _, d := range differences(simulated, scheduled, perNode) {
		t.Errorf("%s: the simulation and the scheduler disagree: %s (simulated, scheduled)", what, d)
	}
}

// counts prints a map sorted by key: "a=2 b=2".
func counts(m map[string]int) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
	}
	if len(parts) == 0 {
		return "-"
	}
	return strings.Join(parts, " ")
}

// scheduleOrRefuse creates the pods one after the other, as the simulation does, waiting for the
// real scheduler to bind each or to report it unschedulable (PodScheduled=False, reason
// Unschedulable, and no node nominated) before the next, and counts where they went by the node
// label. A pod that preempts others is nominated to the node they leave and bound once they are
// gone, as the simulation waits for it. At the end it checks that every pod is still where it
// was: a refused pod was not bound later.
func scheduleOrRefuse(t *testing.T, label string, pods []*corev1.Pod) placements {
	t.Helper()
	out := placements{label: label, pods: map[string]string{}, nodes: map[string]int{}, byLabel: map[string]int{}}
	for _, pod := range pods {
		createAtOnce(t, pod)
		key := client.ObjectKeyFromObject(pod).String()
		testutil.Eventually(t, 60*time.Second, "pod "+pod.Name+" to be bound or unschedulable", func(ctx context.Context) error {
			got := &corev1.Pod{}
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(pod), got); err != nil {
				return err
			}
			if got.Spec.NodeName != "" {
				out.pods[key] = got.Spec.NodeName
				return nil
			}
			if c := testutil.PodScheduled(got); c != nil && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable && got.Status.NominatedNodeName == "" {
				out.pods[key] = ""
				return nil
			}
			return fmt.Errorf("not bound; nominated node %q, conditions %v", got.Status.NominatedNodeName, got.Status.Conditions)
		})
	}
	for _, pod := range current(t, pods) {
		key := client.ObjectKeyFromObject(pod).String()
		if pod.Spec.NodeName != out.pods[key] {
			t.Errorf("pod %s moved from node %q to %q after it was placed", pod.Name, out.pods[key], pod.Spec.NodeName)
		}
		if pod.Spec.NodeName == "" {
			out.unschedulable++
			continue
		}
		n := &corev1.Node{}
		if err := k8s.Get(t.Context(), client.ObjectKey{Name: pod.Spec.NodeName}, n); err != nil {
			t.Fatal(err)
		}
		out.bound++
		out.nodes[n.Name]++
		out.byLabel[n.Labels[label]]++
	}
	out.nodesUsed = len(out.nodes)
	return out
}
