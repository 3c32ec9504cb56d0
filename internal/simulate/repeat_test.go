package simulate

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/scheduler/profile"
)

const zoneLabel = "topology.kubernetes.io/zone"

// priorities are the values of the test's PriorityClasses.
var priorities = map[string]int32{"low": 10, "mid": 100, "high": 1000}

// running is a pod the cluster runs on node, of priority class class, with its priority set as
// admission sets it.
func running(name, node, cpu, class string) *corev1.Pod {
	p := pod(name, cpu)
	p.Namespace, p.Spec.NodeName, p.Status.Phase = "default", node, corev1.PodRunning
	p.Spec.PriorityClassName = class
	p.Spec.Priority = ptr.To(priorities[class])
	return p
}

func priorityClass(name string) *schedulingv1.PriorityClass {
	return &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: priorities[name]}
}

// twoPreemptorsCase is the case of issue 37: two high-priority pods that fit only where
// low-priority pods run, on two identical nodes, so that each must preempt on a different node,
// the first with a tie between the two; a third node is full of pods it may not preempt. A real
// scheduler binds both, preempting four pods; the low-priority pods of the workload after them
// find no room.
func twoPreemptorsCase() (*Cluster, *Workload) {
	c := &Cluster{Objects: []k8sruntime.Object{
		node("node-a", "zone-a", "4"), node("node-b", "zone-b", "4"), node("node-c", "zone-a", "4"),
		priorityClass("low"), priorityClass("high"),
		running("low-a1", "node-a", "2", "low"), running("low-a2", "node-a", "2", "low"),
		running("low-b1", "node-b", "2", "low"), running("low-b2", "node-b", "2", "low"),
		running("high-c1", "node-c", "4", "high"),
	}}
	w := &Workload{}
	for _, name := range []string{"urgent-1", "urgent-2"} {
		w.Pods = append(w.Pods, classed(name, "4", "high"))
	}
	for i := range 3 {
		w.Pods = append(w.Pods, classed(fmt.Sprintf("batch-%d", i), "1", "low"))
	}
	return c, w
}

// manyCandidatesCase is 400 full nodes of 2 CPUs in three zones, each running a low-priority
// pod, and three high-priority pods of 2 CPUs, each of which fits only by preempting on a node
// of its own. Every node is a candidate, more than the 100 the dry run looks for; the
// candidates tie on every criterion but the name, so each preemptor takes the node whose name
// sorts first among the candidates the dry run found: node-000, node-001 and node-002, the
// first nodes of the scheduler's order, when it checks the nodes in that order.
func manyCandidatesCase() (*Cluster, *Workload) {
	w := &Workload{}
	for i := range 3 {
		w.Pods = append(w.Pods, classed(fmt.Sprintf("urgent-%d", i), "2", "high"))
	}
	return fullNodes(400), w
}

// fullNodes is n nodes of 2 CPUs in three zones, node-000 on, each full with a low-priority pod
// named low-<node>, and the PriorityClasses low and high.
func fullNodes(n int) *Cluster {
	c := &Cluster{Objects: []k8sruntime.Object{priorityClass("low"), priorityClass("high")}}
	for i := range n {
		name := fmt.Sprintf("node-%03d", i)
		c.Objects = append(c.Objects, node(name, fmt.Sprintf("zone-%d", i%3), "2"), running("low-"+name, name, "2", "low"))
	}
	return c
}

// classed is a pending pod of priority class class.
func classed(name, cpu, class string) *corev1.Pod {
	p := pod(name, cpu)
	p.Spec.PriorityClassName = class
	return p
}

// gangPreemptionCase is 150 full nodes of 2 CPUs in three zones, each running a low-priority
// pod, and a gang of three high-priority pods of 2 CPUs, which fits only by preempting three of
// them, one per pod, and a pod of the gang's priority after it.
func gangPreemptionCase() (*Cluster, *Workload) {
	c := fullNodes(150)
	w := &Workload{Controllers: []k8sruntime.Object{&schedulingv1beta1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "urgent"},
		Spec:       schedulingv1beta1.PodGroupSpec{PriorityClassName: "high", SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: 3}}},
	}}}
	for i := range 3 {
		p := classed(fmt.Sprintf("urgent-%d", i), "2", "high")
		p.Namespace = "default"
		p.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: ptr.To("urgent")}
		w.Pods = append(w.Pods, p)
	}
	w.Pods = append(w.Pods, classed("single", "2", "high"))
	return c, w
}

// tiesCase is 24 identical nodes in three zones and 40 pods of a few sizes: most choices are
// between nodes of equal score.
func tiesCase() (*Cluster, *Workload) {
	c := &Cluster{}
	for i := range 24 {
		c.Objects = append(c.Objects, node(fmt.Sprintf("node-%02d", i), fmt.Sprintf("zone-%d", i%3), "4"))
	}
	w := &Workload{}
	sizes := []string{"500m", "1", "1500m", "250m"}
	for i := range 40 {
		w.Pods = append(w.Pods, pod(fmt.Sprintf("p-%02d", i), sizes[i%len(sizes)]))
	}
	return c, w
}

// gangCase is two gangs and a pod on four identical nodes of one CPU: the gang of three 1-CPU
// pods binds, one pod per node; the gang of two that comes next finds one node left and is
// unschedulable as a whole; the single pod after it takes that node.
func gangCase() (*Cluster, *Workload) {
	c := &Cluster{}
	for i := range 4 {
		c.Objects = append(c.Objects, node(fmt.Sprintf("small-%d", i), "zone-a", "1"))
	}
	w := &Workload{}
	for _, g := range []struct {
		name string
		size int
	}{{"training", 3}, {"eval", 2}} {
		w.Controllers = append(w.Controllers, &schedulingv1beta1.PodGroup{
			ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: g.name},
			Spec:       schedulingv1beta1.PodGroupSpec{SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: int32(g.size)}}},
		})
		for i := range g.size {
			p := pod(fmt.Sprintf("%s-%d", g.name, i), "1")
			p.Namespace = "default"
			p.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: ptr.To(g.name)}
			w.Pods = append(w.Pods, p)
		}
	}
	w.Pods = append(w.Pods, pod("single", "1"))
	return c, w
}

// gangProfile is a profile with the GenericWorkload gate, which schedules PodGroups as gangs.
func gangProfile(t testing.TB) Profile {
	t.Helper()
	gates := map[string]bool{"GenericWorkload": true}
	cfg, err := profile.Render(&v1alpha1.SchedulerProfile{ObjectMeta: metav1.ObjectMeta{Name: "gang"}, Spec: v1alpha1.SchedulerProfileSpec{Scheduler: v1alpha1.SchedulerSettings{FeatureGates: gates}}}, profile.Settings{Namespace: "ns"})
	if err != nil {
		t.Fatal(err)
	}
	return Profile{Name: "gang", Config: cfg.YAML, FeatureGates: gates}
}

// simulateReport runs the default profile, or the gang profile for a workload with PodGroups,
// and returns its report.
func simulateReport(t testing.TB, c *Cluster, w *Workload) RunReport {
	t.Helper()
	p := defaultProfile(t)
	if len(w.Controllers) > 0 {
		p = gangProfile(t)
	}
	results, err := Run(context.Background(), p, c, w, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return NewRunReport("default", c, w, results, []string{zoneLabel}, zoneLabel)
}

// busy keeps every core busy with spinning goroutines, twice over, until the returned stop is
// called: the scheduler's goroutines then wait for a core, as on a loaded machine.
func busy() (stop func()) {
	var done atomic.Bool
	var wg sync.WaitGroup
	for range 2 * runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			x := 1
			for !done.Load() {
				for range 10000 {
					x = x*31 + 7
				}
			}
			_ = x
		})
	}
	return func() {
		done.Store(true)
		wg.Wait()
	}
}

// TestRepeatableUnderLoad runs each case 20 times while every core is busy and wants the same
// report each time; and, for the preemption case, the outcome a real scheduler has.
func TestRepeatableUnderLoad(t *testing.T) {
	const runs = 20
	cases := []struct {
		name  string
		setup func() (*Cluster, *Workload)
		check func(t *testing.T, r RunReport)
	}{
		{"two preemptors", twoPreemptorsCase, func(t *testing.T, r RunReport) {
			byPod := map[string]PodReport{}
			for _, p := range r.Pods {
				byPod[p.Pod] = p
			}
			a, b := byPod["default/urgent-1"], byPod["default/urgent-2"]
			if a.Node == "" || b.Node == "" || a.Node == b.Node || a.Node == "node-c" || b.Node == "node-c" {
				t.Fatalf("want urgent-1 and urgent-2 bound to node-a and node-b, one each; got %q and %q (%s; %s)", a.Node, b.Node, a.Reason, b.Reason)
			}
			if len(a.Preempted) != 2 || len(b.Preempted) != 2 || r.Summary.Preempted != 4 {
				t.Fatalf("want two pods preempted by each, four in all; got %v, %v, %d", a.Preempted, b.Preempted, r.Summary.Preempted)
			}
			if r.Summary.Bound != 2 || r.Summary.Unschedulable != 3 {
				t.Fatalf("want 2 bound and the 3 batch pods unschedulable; got %d and %d", r.Summary.Bound, r.Summary.Unschedulable)
			}
		}},
		{"gangs", gangCase, func(t *testing.T, r RunReport) {
			nodes := map[string]string{}
			for _, p := range r.Pods {
				nodes[p.Pod] = p.Node
				if p.Node == "" {
					t.Logf("%s: %s", p.Pod, p.Reason)
				}
			}
			used := map[string]bool{nodes["default/training-0"]: true, nodes["default/training-1"]: true, nodes["default/training-2"]: true, nodes["default/single"]: true}
			if len(used) != 4 || used[""] || nodes["default/eval-0"] != "" || nodes["default/eval-1"] != "" {
				t.Fatalf("want the training gang and the single pod on the four nodes, one each, and the eval gang unschedulable; got %v", nodes)
			}
		}},
		{"preemption among 400 candidates", manyCandidatesCase, func(t *testing.T, r RunReport) {
			var nodes, victims []string
			for _, p := range r.Pods {
				nodes = append(nodes, p.Node)
				victims = append(victims, p.Preempted...)
			}
			slices.Sort(nodes)
			slices.Sort(victims)
			want := []string{"node-000", "node-001", "node-002"}
			wantVictims := []string{"default/low-node-000", "default/low-node-001", "default/low-node-002"}
			if !slices.Equal(nodes, want) || !slices.Equal(victims, wantVictims) {
				t.Fatalf("want the three preemptors on %v, preempting %v; got %v, preempting %v", want, wantVictims, nodes, victims)
			}
		}},
		{"a gang that preempts", gangPreemptionCase, func(t *testing.T, r RunReport) {
			nodes := map[string]bool{}
			for _, p := range r.Pods {
				if p.Node == "" || len(p.Preempted) != 1 || p.Preempted[0] != "default/low-"+p.Node {
					t.Fatalf("want every pod bound, each in place of the low-priority pod of its node; %s: %q, preempting %v (%s)", p.Pod, p.Node, p.Preempted, p.Reason)
				}
				nodes[p.Node] = true
			}
			if len(nodes) != 4 || r.Summary.Preempted != 4 {
				t.Fatalf("want the gang and the single pod on four nodes, four pods preempted; got %v, %d", nodes, r.Summary.Preempted)
			}
		}},
		{"ties between identical nodes", tiesCase, func(t *testing.T, r RunReport) {
			if r.Summary.Bound != 40 {
				t.Fatalf("want all 40 pods bound, got %d", r.Summary.Bound)
			}
		}},
	}
	stop := busy()
	defer stop()
	start := time.Now()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, w := tc.setup()
			first := simulateReport(t, c, w)
			tc.check(t, first)
			for run := 1; run < runs; run++ {
				if diff := cmp.Diff(first, simulateReport(t, c, w)); diff != "" {
					t.Fatalf("run %d of %d under load differs from the first (-first +this):\n%s", run+1, runs, diff)
				}
			}
		})
	}
	t.Logf("%d cases × %d runs with %d spinning goroutines on GOMAXPROCS=%d: %s", len(cases), runs, 2*runtime.GOMAXPROCS(0), runtime.GOMAXPROCS(0), time.Since(start).Round(time.Millisecond))
}

// randomCase is a cluster and a workload drawn from seed: nodes of a few sizes in up to three
// zones, some running pods of two priorities, and pending pods of three priorities, a few with
// a zone spread constraint, so that preemption, spreading and ties all occur.
func randomCase(seed uint64) (*Cluster, *Workload) {
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	c := &Cluster{Objects: []k8sruntime.Object{priorityClass("low"), priorityClass("mid"), priorityClass("high")}}
	classes := []string{"low", "mid", "high"}
	cpus := []string{"2", "4", "8"}
	zones := 1 + r.IntN(3)
	nodes := 2 + r.IntN(10)
	for i := range nodes {
		name := fmt.Sprintf("node-%02d", i)
		c.Objects = append(c.Objects, node(name, fmt.Sprintf("zone-%d", i%zones), cpus[r.IntN(len(cpus))]))
		for j := range r.IntN(3) {
			c.Objects = append(c.Objects, running(fmt.Sprintf("run-%02d-%d", i, j), name, "1", classes[r.IntN(2)]))
		}
	}
	w := &Workload{}
	for i := range 5 + r.IntN(30) {
		p := pod(fmt.Sprintf("p-%02d", i), []string{"250m", "1", "2", "3"}[r.IntN(4)])
		p.Spec.PriorityClassName = classes[r.IntN(len(classes))]
		if r.IntN(4) == 0 {
			p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
				MaxSkew: 1, TopologyKey: zoneLabel, WhenUnsatisfiable: corev1.ScheduleAnyway,
				LabelSelector: &metav1.LabelSelector{MatchLabels: p.Labels},
			}}
		}
		w.Pods = append(w.Pods, p)
	}
	return c, w
}

// FuzzRunRepeatable: for any cluster and workload randomCase draws, two simulations give the
// same report. `go test` runs the seeds below; `go test -fuzz FuzzRunRepeatable` draws more.
func FuzzRunRepeatable(f *testing.F) {
	for seed := range uint64(8) {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, seed uint64) {
		c, w := randomCase(seed)
		first := simulateReport(t, c, w)
		if len(first.Pods) != len(w.Pods) {
			t.Fatalf("seed %d: %d results for %d pods", seed, len(first.Pods), len(w.Pods))
		}
		if diff := cmp.Diff(first, simulateReport(t, c, w)); diff != "" {
			t.Fatalf("seed %d: the second run differs (-first +second):\n%s", seed, diff)
		}
	})
}

// manyPodsCase is tiesCase with 5000 more small pods: a workload that takes seconds of CPU.
func manyPodsCase() (*Cluster, *Workload) {
	c, w := tiesCase()
	for i := range 5000 {
		w.Pods = append(w.Pods, pod(fmt.Sprintf("more-%04d", i), "10m"))
	}
	return c, w
}

// TestRunLimit: a simulation that reaches its limit returns a LimitError with the pods decided
// until then, and the report says it stopped instead of giving the others a result.
func TestRunLimit(t *testing.T) {
	c, w := manyPodsCase()
	results, err := Run(context.Background(), defaultProfile(t), c, w, Options{Limit: 500 * time.Millisecond})
	var limit *LimitError
	if !errors.As(err, &limit) {
		t.Fatalf("want a LimitError, got %v", err)
	}
	if limit.CPU || limit.Pods != len(w.Pods) || limit.Decided != len(results) || limit.Decided >= limit.Pods {
		t.Fatalf("LimitError %+v for %d results of %d pods, want the wall-clock limit", limit, len(results), len(w.Pods))
	}
	for _, r := range results {
		if r.Node == "" {
			t.Fatalf("pod %s has no node (%s): only decided pods have a result, and these all fit", r.Pod, r.Reason)
		}
	}
	t.Logf("%d of %d pods decided in 500ms", limit.Decided, limit.Pods)
	run := NewRunReport("default", c, w, results, nil, zoneLabel)
	run.Stopped = limit.Error()
	var text strings.Builder
	if err := (&Report{Runs: []RunReport{run}}).WriteText(&text, nil); err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf("STOPPED: the simulation stopped at its wall-clock time limit of 500ms, with %d of %d pods decided: the other %d were not simulated", limit.Decided, limit.Pods, limit.Pods-limit.Decided)
	if !strings.Contains(text.String(), want) || run.Summary.NotSimulated != limit.Pods-limit.Decided {
		t.Fatalf("the report does not say the simulation stopped (want %q, %d not simulated):\n%s", want, limit.Pods-limit.Decided, text.String())
	}
}

// TestRunCPULimit: a simulation that needs more CPU time than its CPU time limit stops with a
// LimitError that names CPU time, with the pods decided until then; one whose CPU time limit is
// ample reports what a simulation without one does.
func TestRunCPULimit(t *testing.T) {
	c, w := manyPodsCase()
	results, err := Run(context.Background(), defaultProfile(t), c, w, Options{CPULimit: time.Millisecond})
	var limit *LimitError
	if !errors.As(err, &limit) {
		t.Fatalf("want a LimitError, got %v", err)
	}
	if !limit.CPU || limit.Limit != time.Millisecond || limit.Pods != len(w.Pods) || limit.Decided != len(results) || limit.Decided >= limit.Pods {
		t.Fatalf("LimitError %+v for %d results of %d pods, want the CPU time limit of 1ms", limit, len(results), len(w.Pods))
	}
	want := fmt.Sprintf("the simulation stopped at its CPU time limit of 1ms, with %d of %d pods decided: the other %d were not simulated", limit.Decided, limit.Pods, limit.Pods-limit.Decided)
	if limit.Error() != want {
		t.Errorf("error %q, want %q", limit.Error(), want)
	}
	t.Logf("%d of %d pods decided within 1ms of CPU time", limit.Decided, limit.Pods)

	c, w = tiesCase()
	unlimited, err := Run(context.Background(), defaultProfile(t), c, w, Options{})
	if err != nil {
		t.Fatal(err)
	}
	ample, err := Run(context.Background(), defaultProfile(t), c, w, Options{CPULimit: time.Hour})
	if err != nil {
		t.Fatalf("with an hour of CPU time: %v", err)
	}
	if diff := cmp.Diff(unlimited, ample); diff != "" {
		t.Errorf("an ample CPU time limit changed the results (-without +with):\n%s", diff)
	}
}

// TestRunChangesNothing: a simulation writes to none of the objects of the cluster or the
// workload it is given, though it binds, preempts, and sets each pod's namespace, scheduler name
// and priority and each PodGroup's priority on its own copies.
func TestRunChangesNothing(t *testing.T) {
	for name, setup := range map[string]func() (*Cluster, *Workload){"two preemptors": twoPreemptorsCase, "gangs": gangCase, "a gang that preempts": gangPreemptionCase} {
		t.Run(name, func(t *testing.T) {
			c, w := setup()
			wantObjects := make([]k8sruntime.Object, len(c.Objects))
			for i, obj := range c.Objects {
				wantObjects[i] = obj.DeepCopyObject()
			}
			wantPods := make([]*corev1.Pod, len(w.Pods))
			for i, p := range w.Pods {
				wantPods[i] = p.DeepCopy()
			}
			wantControllers := make([]k8sruntime.Object, len(w.Controllers))
			for i, obj := range w.Controllers {
				wantControllers[i] = obj.DeepCopyObject()
			}
			report := simulateReport(t, c, w)
			if report.Summary.Bound == 0 {
				t.Fatalf("want some pods bound, got %+v", report.Summary)
			}
			if !equality.Semantic.DeepEqual(wantObjects, c.Objects) {
				t.Errorf("the cluster's objects changed:\n%s", cmp.Diff(wantObjects, c.Objects))
			}
			if !equality.Semantic.DeepEqual(wantPods, w.Pods) {
				t.Errorf("the workload's pods changed:\n%s", cmp.Diff(wantPods, w.Pods))
			}
			if !equality.Semantic.DeepEqual(wantControllers, w.Controllers) {
				t.Errorf("the workload's controllers changed:\n%s", cmp.Diff(wantControllers, w.Controllers))
			}
		})
	}
}
