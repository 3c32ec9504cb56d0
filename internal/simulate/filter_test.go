package simulate

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"

	"github.com/schedops/scheduler-profile-operator/scheduler/profile"
)

// filterCase is a cluster large enough that the Filter step stops before the last node and
// starts each cycle where the last one stopped: 400 nodes in three zones, every seventh tainted
// (Filter rejects it) and every fifth small, each running a low-priority pod. The workload
// fills most of the room, a few of its pods spread over the zones, a few fit on no node, and
// the high-priority pods, which the queue takes first, fit only where they preempt. Those select
// the 50 nodes of a pool: with more nodes where preemption might help than the candidates it
// looks for, upstream's dry run visits them in the order of a Go map.
func filterCase() (*Cluster, *Workload) {
	c := &Cluster{Objects: []k8sruntime.Object{priorityClass("low"), priorityClass("mid"), priorityClass("high")}}
	for i := range 400 {
		name := fmt.Sprintf("node-%03d", i)
		n := node(name, fmt.Sprintf("zone-%d", i%3), "4")
		if i%5 == 0 {
			n = node(name, fmt.Sprintf("zone-%d", i%3), "3")
		}
		if i%8 == 1 {
			n.Labels["pool"] = "urgent"
		}
		if i%7 == 0 {
			n.Spec.Taints = []corev1.Taint{{Key: "dedicated", Value: "other", Effect: corev1.TaintEffectNoSchedule}}
		}
		c.Objects = append(c.Objects, n, running("run-"+name, name, "2", "low"))
	}
	w := &Workload{}
	sizes := []string{"500m", "1", "1500m", "250m"}
	for i := range 300 {
		p := pod(fmt.Sprintf("p-%03d", i), sizes[i%len(sizes)])
		p.Spec.PriorityClassName = "mid"
		if i%60 == 59 {
			p = pod(fmt.Sprintf("p-%03d", i), "16")
			p.Spec.PriorityClassName = "mid"
		}
		if i%10 == 0 {
			p.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
				MaxSkew: 1, TopologyKey: zoneLabel, WhenUnsatisfiable: corev1.DoNotSchedule,
				LabelSelector: &metav1.LabelSelector{MatchLabels: p.Labels},
			}}
		}
		w.Pods = append(w.Pods, p)
	}
	for i := range 30 {
		p := pod(fmt.Sprintf("urgent-%02d", i), "3")
		p.Spec.PriorityClassName = "high"
		p.Spec.NodeSelector = map[string]string{"pool": "urgent"}
		w.Pods = append(w.Pods, p)
	}
	return c, w
}

// filterRun is what a simulation of filterCase found, and how many Filter verdicts it took
// from the blocks evaluated ahead.
type filterRun struct {
	results []PodResult
	given   int
}

// simulateFilter simulates the default profile as Run does, with the nodes of the Filter step
// evaluated ahead of it or, serialFilter, each as the step visits it.
func simulateFilter(t *testing.T, c *Cluster, w *Workload, serialFilter bool) filterRun {
	t.Helper()
	s, bs := simulateDefault(t, c, w, serialFilter)
	r := filterRun{results: s.results(bs)}
	for _, f := range s.sched.Profiles {
		if in, ok := f.(inOrder); ok && in.ahead != nil {
			r.given += in.ahead.given
		}
	}
	return r
}

// simulateDefault simulates the default profile as Run does, and returns the simulation and
// its batches once it has scheduled them.
func simulateDefault(t *testing.T, c *Cluster, w *Workload, serialFilter bool) (*simulation, []batch) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	cfg, err := profile.DecodeConfig(defaultProfile(t).Config)
	if err != nil {
		t.Fatal(err)
	}
	s, err := newSimulation(ctx, cfg, append(c.objectsExceptPending(), w.Controllers...), serialFilter)
	if err != nil {
		t.Fatal(err)
	}
	pods, err := s.queueOrder(w.Pods, c)
	if err != nil {
		t.Fatal(err)
	}
	bs := batches(pods)
	if err := s.scheduleAll(ctx, bs); err != nil {
		t.Fatal(err)
	}
	return s, bs
}

// TestFilterAheadAgrees: with the nodes of the Filter step evaluated ahead of it, every pod goes
// where it goes when the step evaluates each node as it visits it, the same pods are preempted
// and the same are unschedulable, with the same messages.
func TestFilterAheadAgrees(t *testing.T) {
	c, w := filterCase()
	serial := simulateFilter(t, c, w, true)
	ahead := simulateFilter(t, c, w, false)
	if serial.given != 0 || ahead.given == 0 {
		t.Fatalf("verdicts taken from ahead: %d serially and %d ahead, want none and some", serial.given, ahead.given)
	}
	if diff := cmp.Diff(serial.results, ahead.results); diff != "" {
		t.Fatalf("evaluated ahead, the simulation differs (-serial +ahead):\n%s", diff)
	}
	var bound, preempted int
	for _, r := range serial.results {
		if r.Node != "" {
			bound++
		}
		preempted += len(r.Preempted)
	}
	if bound == 0 || bound == len(serial.results) || preempted == 0 {
		t.Fatalf("want some pods bound, some not, and some preemptions; got %d of %d bound, %d preempted", bound, len(serial.results), preempted)
	}
	t.Logf("%d of %d pods bound, %d preempted, %d verdicts from ahead", bound, len(serial.results), preempted, ahead.given)
}
