package e2e

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
)

// TestSharedSchedulerMembers: a bin-packing and a spreading profile of one Scheduler run in one
// scheduler process, and each places its pods by its own plugins, with the other's pods on the
// same nodes.
func TestSharedSchedulerMembers(t *testing.T) {
	nodes := makeNodes(t, "shared",
		nodeSpec{name: "a1", cpus: 8, labels: map[string]string{zoneKey: "a"}}, nodeSpec{name: "a2", cpus: 8, labels: map[string]string{zoneKey: "a"}},
		nodeSpec{name: "b1", cpus: 8, labels: map[string]string{zoneKey: "b"}}, nodeSpec{name: "c1", cpus: 8, labels: map[string]string{zoneKey: "c"}})
	applyScheduler(t, testutil.MakeScheduler("e2e-shared").Obj())
	applyProfile(t, `
metadata: {name: e2e-shared-binpack}
spec:
  schedulerRef: {name: e2e-shared}
  plugins:
    score: {disabled: [{name: NodeResourcesBalancedAllocation}, {name: PodTopologySpread}]}
  pluginConfig:
  - name: NodeResourcesFit
    args: {scoringStrategy: {type: MostAllocated, resources: [{name: cpu, weight: 1}]}}`)
	applyProfile(t, `
metadata: {name: e2e-shared-spread}
spec:
  schedulerRef: {name: e2e-shared}
  pluginConfig:
  - name: PodTopologySpread
    args:
      defaultingType: List
      defaultConstraints: [{maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule}]`)
	s := waitServes(t, "e2e-shared", "e2e-shared-binpack", "e2e-shared-spread")
	for _, name := range []string{"e2e-shared-binpack", "e2e-shared-spread"} {
		p := waitCondition(t, name, schedulingv1alpha1.ConditionAvailable, metav1.ConditionTrue, "", 30*time.Second)
		if p.Status.DeploymentName != s.Status.DeploymentName {
			t.Errorf("profile %s names Deployment %q, want the Scheduler's %q", name, p.Status.DeploymentName, s.Status.DeploymentName)
		}
	}
	// One process serves both: neither member has a scheduler Deployment of its own.
	var own appsv1.DeploymentList
	if err := k8s.List(context.Background(), &own, client.InNamespace(operatorNamespace), client.HasLabels{schedulingv1alpha1.LabelProfile}); err != nil {
		t.Fatal(err)
	}
	for _, d := range own.Items {
		if p := d.Labels[schedulingv1alpha1.LabelProfile]; p == "e2e-shared-binpack" || p == "e2e-shared-spread" {
			t.Errorf("member %s has a Deployment of its own: %s", p, d.Name)
		}
	}

	// Default spreading constraints apply to the pods of a workload: a Service selects the
	// spreading member's pods, and only them.
	createService(t, "e2e-shared-spread", map[string]string{"app": "spread"})

	// The members' pods alternate, so that each decision of one member sees the other's pods.
	var binpacked, spread []*corev1.Node
	for i := range 6 {
		bp := nodes.pod(fmt.Sprintf("bp-%d", i), "e2e-shared-binpack", 1000)
		sp := nodes.pod(fmt.Sprintf("sp-%d", i), "e2e-shared-spread", 500)
		sp.Labels["app"] = "spread"
		binpacked = append(binpacked, schedule(t, bp)...)
		spread = append(spread, schedule(t, sp)...)
	}
	// The bin-packing pods stay the most allocated node's: the spreading pods, half their size, go
	// to the least allocated nodes of their zone.
	if c := countByLabel(binpacked, "kubernetes.io/hostname"); len(c) != 1 {
		t.Errorf("bin-packing pods per node = %v, want all 6 on one node", c)
	}
	if c := countByLabel(spread, zoneKey); c["a"] != 2 || c["b"] != 2 || c["c"] != 2 {
		t.Errorf("spreading pods per zone = %v, want 2 in each of a, b, c", c)
	}
}

// TestSharedSchedulerNoConflicts: four bin-packing profiles get a burst of pods at once on the same
// four small nodes, more pods than fit. As members of one Scheduler, one cache sees every decision:
// no node is overcommitted and every slot is used. As four profiles with schedulers of their own,
// each scheduler learns of the others' bindings only through its watch, and it decides a whole
// burst in less time than they take to arrive, so several of them fill the same node; the kubelet
// would reject the extra pods, but kwok admits everything, so the overcommit stays visible. That
// count is reported, not asserted: it depends on timing.
func TestSharedSchedulerNoConflicts(t *testing.T) {
	const (
		nodeCount  = 4
		nodeCPUs   = 2
		podMilli   = 200
		profiles   = 4
		perProfile = 15
	)
	slots := nodeCount * nodeCPUs * 1000 / podMilli
	// Every profile prefers the most allocated node that fits, so all decisions converge on the
	// same node: the worst case for schedulers with caches of their own.
	profileYAML := func(name, ref string) string {
		doc := "metadata: {name: " + name + "}\nspec:\n"
		if ref != "" {
			doc += "  schedulerRef: {name: " + ref + "}\n"
		}
		return doc + `  plugins:
    score: {disabled: [{name: NodeResourcesBalancedAllocation}, {name: PodTopologySpread}]}
  pluginConfig:
  - name: NodeResourcesFit
    args: {scoringStrategy: {type: MostAllocated, resources: [{name: cpu, weight: 1}]}}`
	}
	run := func(t *testing.T, test string, names []string) burstResult {
		var specs []nodeSpec
		for i := range nodeCount {
			specs = append(specs, nodeSpec{name: fmt.Sprint(i), cpus: nodeCPUs})
		}
		nodes := makeNodes(t, test, specs...)
		// One pod per profile first, one at a time: every scheduler has synced its caches and
		// serves before the burst starts.
		for _, name := range names {
			schedule(t, nodes.pod("warm-"+name, name, podMilli))
		}
		var pods []*corev1.Pod
		for i := range perProfile {
			for _, name := range names {
				pods = append(pods, nodes.pod(fmt.Sprintf("%s-%d", name, i), name, podMilli))
			}
		}
		res := burst(t, nodes, pods)
		checkViews(t, nodes, names, podMilli)
		return res
	}

	t.Run("shared", func(t *testing.T) {
		applyScheduler(t, testutil.MakeScheduler("e2e-conflict").Obj())
		var names []string
		for i := range profiles {
			names = append(names, fmt.Sprintf("e2e-conflict-shared-%d", i))
			applyProfile(t, profileYAML(names[i], "e2e-conflict"))
		}
		waitServes(t, "e2e-conflict", names...)
		got := run(t, "conflict-shared", names)
		t.Logf("One shared scheduler, %d profiles: %s", profiles, got)
		if got.overcommitted != 0 {
			t.Errorf("%d nodes overcommitted by the profiles of one Scheduler, want 0: %s", got.overcommitted, got.perNode)
		}
		if got.bound != slots {
			t.Errorf("%d pods bound, want %d: every slot filled, none twice", got.bound, slots)
		}
	})

	t.Run("dedicated", func(t *testing.T) {
		var names []string
		for i := range profiles {
			names = append(names, fmt.Sprintf("e2e-conflict-own-%d", i))
			applyProfile(t, profileYAML(names[i], ""))
		}
		for _, name := range names {
			p := waitCondition(t, name, schedulingv1alpha1.ConditionConfigValid, metav1.ConditionTrue, "", 30*time.Second)
			waitScheduler(t, name, p.Status.ConfigHash)
		}
		got := run(t, "conflict-own", names)
		t.Logf("%d dedicated schedulers: %s", profiles, got)
		// A scheduler's view of the others' pods can only lag, so it never leaves a slot free
		// that it could use: at least every slot is filled.
		if got.bound < slots {
			t.Errorf("%d pods bound, want at least the %d slots", got.bound, slots)
		}
	})
}

// burstResult is how a burst of pods settled on the test's nodes.
type burstResult struct {
	pods, bound, unschedulable int
	// overcommitted counts the nodes whose bound pods request more CPU than the node has.
	overcommitted int
	// perNode is "node=requested/allocatable" for every node, in name order.
	perNode string
	settled time.Duration
}

func (r burstResult) String() string {
	return fmt.Sprintf("%d pods, %d bound, %d unschedulable, %d overcommitted nodes, settled in %s (cpu requested/allocatable: %s)",
		r.pods, r.bound, r.unschedulable, r.overcommitted, r.settled.Round(time.Millisecond), r.perNode)
}

// burst creates the pods all at once, waits until each is bound or found unschedulable, and
// measures the test's nodes. The nodes' pods that existed before count too.
func burst(t *testing.T, nodes testNodes, pods []*corev1.Pod) burstResult {
	t.Helper()
	selector := client.MatchingLabels{dedicatedKey: nodes.test}
	t.Cleanup(func() {
		_ = k8s.DeleteAllOf(context.Background(), &corev1.Pod{}, client.InNamespace("default"), selector, client.GracePeriodSeconds(0))
	})
	start := time.Now()
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for _, p := range pods {
		wg.Go(func() {
			if err := k8s.Create(context.Background(), p); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("creating pod %s: %w", p.Name, err))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}

	var list corev1.PodList
	testutil.Eventually(t, 60*time.Second, "every pod of the burst to be bound or unschedulable", func(ctx context.Context) error {
		if err := k8s.List(ctx, &list, client.InNamespace("default"), selector); err != nil {
			return err
		}
		undecided := 0
		for i := range list.Items {
			if list.Items[i].Spec.NodeName == "" && !unschedulable(&list.Items[i]) {
				undecided++
			}
		}
		if undecided > 0 {
			return fmt.Errorf("%d of %d pods neither bound nor unschedulable", undecided, len(list.Items))
		}
		return nil
	})
	res := burstResult{pods: len(list.Items), settled: time.Since(start)}

	for _, p := range list.Items {
		if p.Spec.NodeName == "" {
			res.unschedulable++
		} else {
			res.bound++
		}
	}
	requested, allocatable := usage(t, nodes.test)
	var perNode []string
	for _, name := range slices.Sorted(maps.Keys(allocatable)) {
		if requested[name] > allocatable[name] {
			res.overcommitted++
		}
		perNode = append(perNode, fmt.Sprintf("%s=%dm/%dm", name, requested[name], allocatable[name]))
	}
	res.perNode = strings.Join(perNode, " ")
	return res
}

// usage returns, in millicores, the CPU that the bound pods of the test request on each of its
// nodes, and the allocatable CPU of each node.
func usage(t *testing.T, test string) (requested, allocatable map[string]int64) {
	t.Helper()
	selector := client.MatchingLabels{dedicatedKey: test}
	var nodeList corev1.NodeList
	if err := k8s.List(context.Background(), &nodeList, selector); err != nil {
		t.Fatal(err)
	}
	var podList corev1.PodList
	if err := k8s.List(context.Background(), &podList, client.InNamespace("default"), selector); err != nil {
		t.Fatal(err)
	}
	requested, allocatable = map[string]int64{}, map[string]int64{}
	for _, n := range nodeList.Items {
		allocatable[n.Name] = n.Status.Allocatable.Cpu().MilliValue()
	}
	for _, p := range podList.Items {
		for _, c := range p.Spec.Containers {
			if p.Spec.NodeName != "" {
				requested[p.Spec.NodeName] += c.Resources.Requests.Cpu().MilliValue()
			}
		}
	}
	return requested, allocatable
}

// checkViews creates one more pod for each scheduler name, one at a time, and checks that it is
// bound if a node of the test has room for it and found unschedulable if none has. After a burst
// this shows that each scheduler sees the pods that the others bound: an overcommitted node comes
// from decisions taken before the others' bindings arrived, not from a scheduler blind to them.
func checkViews(t *testing.T, nodes testNodes, names []string, milliCPU int64) {
	t.Helper()
	for _, name := range names {
		requested, allocatable := usage(t, nodes.test)
		room := false
		for node, cpu := range allocatable {
			room = room || cpu-requested[node] >= milliCPU
		}
		p := nodes.pod("after-"+name, name, milliCPU)
		if err := k8s.Create(context.Background(), p); err != nil {
			t.Fatalf("creating pod %s: %v", p.Name, err)
		}
		t.Cleanup(func() { _ = k8s.Delete(context.Background(), p, client.GracePeriodSeconds(0)) })
		got := &corev1.Pod{}
		testutil.Eventually(t, 30*time.Second, "pod "+p.Name+" to be bound or unschedulable", func(ctx context.Context) error {
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(p), got); err != nil {
				return err
			}
			if got.Spec.NodeName == "" && !unschedulable(got) {
				return fmt.Errorf("neither; conditions %v", got.Status.Conditions)
			}
			return nil
		})
		if bound := got.Spec.NodeName != ""; bound != room {
			t.Errorf("after the burst, a pod of %s was bound to %q, with room on some node: %v (cpu requested %v of %v)", name, got.Spec.NodeName, room, requested, allocatable)
		}
	}
}

// unschedulable tells whether the scheduler found no node for the pod.
func unschedulable(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return true
		}
	}
	return false
}

// applyScheduler creates a Scheduler and deletes it when the test ends. If the test fails, the
// operator's log of the test is printed.
func applyScheduler(t *testing.T, s *schedulingv1alpha1.Scheduler) {
	t.Helper()
	operator.LogOnFailure(t)
	if err := k8s.Create(context.Background(), s); err != nil {
		t.Fatalf("creating Scheduler %s: %v", s.Name, err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), s) })
}

// waitServes waits until the Scheduler serves exactly the named profiles and the runner runs its
// configuration, and returns the Scheduler.
func waitServes(t *testing.T, name string, profiles ...string) *schedulingv1alpha1.Scheduler {
	t.Helper()
	s := &schedulingv1alpha1.Scheduler{}
	want := slices.Sorted(slices.Values(profiles))
	testutil.Eventually(t, 90*time.Second, "Scheduler "+name+" to run "+strings.Join(want, ", "), func(ctx context.Context) error {
		if err := k8s.Get(ctx, client.ObjectKey{Name: name}, s); err != nil {
			return err
		}
		var served []string
		for _, m := range s.Status.Profiles {
			served = append(served, m.Name)
		}
		if !slices.Equal(served, want) {
			return fmt.Errorf("serves %v", served)
		}
		if s.Status.ConfigHash == "" || runner.Hash(s.Status.DeploymentName) != s.Status.ConfigHash {
			return fmt.Errorf("the runner runs %q for Deployment %q, want %q", runner.Hash(s.Status.DeploymentName), s.Status.DeploymentName, s.Status.ConfigHash)
		}
		return nil
	})
	return s
}
