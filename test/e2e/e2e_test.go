package e2e

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
)

const (
	zoneKey = "topology.kubernetes.io/zone"
	poolKey = "pool"
)

// TestProfileBecomesAvailable: the operator's Deployment, its ReplicaSet and the pod that kwok runs
// make the profile Available.
func TestProfileBecomesAvailable(t *testing.T) {
	applyProfile(t, `{metadata: {name: e2e-available}}`)
	p := waitCondition(t, "e2e-available", schedulingv1alpha1.ConditionAvailable, metav1.ConditionTrue, schedulingv1alpha1.ReasonMinimumReplicasAvailable, 90*time.Second)
	waitCondition(t, "e2e-available", schedulingv1alpha1.ConditionProgressing, metav1.ConditionFalse, schedulingv1alpha1.ReasonRolloutComplete, 30*time.Second)
	d := &appsv1.Deployment{}
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: operatorNamespace, Name: p.Status.DeploymentName}, d); err != nil {
		t.Fatal(err)
	}
	if d.Status.AvailableReplicas != 1 || d.Spec.Template.Annotations["scheduling.schedops.io/config-hash"] != p.Status.ConfigHash {
		t.Errorf("Deployment %s: %d available, template hash %q, status hash %q", d.Name, d.Status.AvailableReplicas,
			d.Spec.Template.Annotations["scheduling.schedops.io/config-hash"], p.Status.ConfigHash)
	}
}

// TestBinPacking: with MostAllocated, six 1-CPU pods fill one 4-CPU node before the next.
func TestBinPacking(t *testing.T) {
	nodes := makeNodes(t, "binpack", nodeSpec{name: "a", cpus: 4}, nodeSpec{name: "b", cpus: 4}, nodeSpec{name: "c", cpus: 4}, nodeSpec{name: "d", cpus: 4})
	p := applyProfile(t, `
metadata: {name: e2e-binpack}
spec:
  plugins:
    score: {disabled: [{name: NodeResourcesBalancedAllocation}]}
  pluginConfig:
  - name: NodeResourcesFit
    args: {scoringStrategy: {type: MostAllocated, resources: [{name: cpu, weight: 1}]}}`)
	p = waitCondition(t, p.Name, schedulingv1alpha1.ConditionConfigValid, metav1.ConditionTrue, "", 30*time.Second)
	waitScheduler(t, p.Name, p.Status.ConfigHash)

	var pods []*corev1.Pod
	for i := range 6 {
		pods = append(pods, nodes.pod(fmt.Sprintf("bp-%d", i), "e2e-binpack", 1000))
	}
	counts := countByLabel(schedule(t, pods...), "kubernetes.io/hostname")
	got := slices.Sorted(mapValues(counts))
	if !slices.Equal(got, []int{2, 4}) {
		t.Errorf("pods per node = %v, want one full node (4) and one with 2: bin-packing fills the fewest nodes", counts)
	}
}

// TestSpreading: with a default zone constraint, six pods of a workload spread 2-2-2 over zones.
func TestSpreading(t *testing.T) {
	nodes := makeNodes(t, "spread",
		nodeSpec{name: "a1", cpus: 8, labels: map[string]string{zoneKey: "a"}}, nodeSpec{name: "a2", cpus: 8, labels: map[string]string{zoneKey: "a"}},
		nodeSpec{name: "b1", cpus: 8, labels: map[string]string{zoneKey: "b"}}, nodeSpec{name: "c1", cpus: 8, labels: map[string]string{zoneKey: "c"}})
	p := applyProfile(t, `
metadata: {name: e2e-spread}
spec:
  pluginConfig:
  - name: PodTopologySpread
    args:
      defaultingType: List
      defaultConstraints: [{maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule}]
  - name: NodeResourcesFit
    args: {scoringStrategy: {type: MostAllocated, resources: [{name: cpu, weight: 1}]}}`)
	p = waitCondition(t, p.Name, schedulingv1alpha1.ConditionConfigValid, metav1.ConditionTrue, "", 30*time.Second)
	waitScheduler(t, p.Name, p.Status.ConfigHash)

	// Default constraints apply to pods that belong to a workload: a Service selects them.
	createService(t, "e2e-spread", map[string]string{dedicatedKey: "spread"})

	var pods []*corev1.Pod
	for i := range 6 {
		pods = append(pods, nodes.pod(fmt.Sprintf("sp-%d", i), "e2e-spread", 500))
	}
	counts := countByLabel(schedule(t, pods...), zoneKey)
	if counts["a"] != 2 || counts["b"] != 2 || counts["c"] != 2 {
		t.Errorf("pods per zone = %v, want 2 in each of a, b, c (even though bin-packing scores favour one node)", counts)
	}
}

// TestNodePool: pods of a node-pool scheduler never leave the pool, prefer spot nodes in it, and
// follow nodes relabeled into and out of it.
func TestNodePool(t *testing.T) {
	nodes := makeNodes(t, "pool",
		nodeSpec{name: "batch-spot", cpus: 4, labels: map[string]string{poolKey: "batch", "lifecycle": "spot"}},
		nodeSpec{name: "batch-ondemand", cpus: 4, labels: map[string]string{poolKey: "batch", "lifecycle": "on-demand"}},
		nodeSpec{name: "general-1", cpus: 16, labels: map[string]string{poolKey: "general", "lifecycle": "spot"}},
		nodeSpec{name: "general-2", cpus: 16, labels: map[string]string{poolKey: "general"}})
	p := applyProfile(t, `
metadata: {name: e2e-pool}
spec:
  plugins:
    multiPoint: {enabled: [{name: NodePool}, {name: NodeLabelPreference, weight: 3}]}
  pluginConfig:
  - name: NodePool
    args: {nodeSelector: {matchLabels: {pool: batch}}}
  - name: NodeLabelPreference
    args: {preferences: [{key: lifecycle, values: [spot], weight: 10}]}`)
	p = waitCondition(t, p.Name, schedulingv1alpha1.ConditionConfigValid, metav1.ConditionTrue, "", 30*time.Second)
	waitScheduler(t, p.Name, p.Status.ConfigHash)

	var pods []*corev1.Pod
	for i := range 7 {
		pods = append(pods, nodes.pod(fmt.Sprintf("np-%d", i), "e2e-pool", 1000))
	}
	placed := schedule(t, pods...)
	if c := countByLabel(placed, poolKey); c["batch"] != 7 {
		t.Errorf("pods per pool = %v, want all 7 in pool batch", c)
	}
	// The spot node fills first (4 CPUs), the rest go to the on-demand node of the pool.
	if c := countByLabel(placed, "lifecycle"); c["spot"] != 4 || c["on-demand"] != 3 {
		t.Errorf("pods per lifecycle = %v, want the 4 CPUs of the spot node used first", c)
	}
	// An eighth pod fits nowhere in the pool: it stays pending with the pool's reason, although
	// the general nodes have room. The pod carries the pool as node affinity (projection), which
	// NodeAffinity, running before NodePool, rejects the other nodes by.
	extra := nodes.pod("np-extra", "e2e-pool", 2000)
	if err := k8s.Create(context.Background(), extra); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), extra, client.GracePeriodSeconds(0)) })
	testutil.Eventually(t, 60*time.Second, "the extra pod to be unschedulable", func(ctx context.Context) error {
		got := &corev1.Pod{}
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(extra), got); err != nil {
			return err
		}
		if got.Spec.NodeName != "" {
			t.Fatalf("the extra pod was bound to %s, outside what the pool can hold", got.Spec.NodeName)
		}
		for _, c := range got.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && contains(c.Message, poolReason) &&
				got.Annotations[schedulingv1alpha1.AnnotationProjectedNodeRestrictions] != "" {
				return nil
			}
		}
		return fmt.Errorf("conditions %v", got.Status.Conditions)
	})

	// The plugins keep what they read from a node's labels per node object: a relabeled node
	// counts with its new labels. general-1 enters the pool and takes the pending pod.
	relabel(t, "pool-general-1", poolKey, "batch")
	if n := waitBound(t, extra); n.Name != "pool-general-1" {
		t.Errorf("the pending pod went to %s, want pool-general-1, the node that entered the pool", n.Name)
	}
	// general-1 leaves the pool and general-2 enters it. A pod that only general-2 can hold
	// waits until the scheduler has seen general-2 enter, and so general-1 leave: the updates
	// of nodes reach it in order.
	big := nodes.pod("np-big", "e2e-pool", 15000)
	if err := k8s.Create(t.Context(), big); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), big, client.GracePeriodSeconds(0)) })
	relabel(t, "pool-general-1", poolKey, "general")
	relabel(t, "pool-general-2", poolKey, "batch")
	if n := waitBound(t, big); n.Name != "pool-general-2" {
		t.Fatalf("the pod of 15 CPUs went to %s, want pool-general-2", n.Name)
	}
	// general-1 is a spot node with the most room, but out of the pool: no pod goes there.
	for i := range 3 {
		if n := schedule(t, nodes.pod(fmt.Sprintf("np-after-%d", i), "e2e-pool", 300))[0]; n.Name == "pool-general-1" {
			t.Errorf("a pod went to pool-general-1 after it left the pool")
		}
	}
}

// relabel sets the label key=value on a node.
func relabel(t *testing.T, node, key, value string) {
	t.Helper()
	n := &corev1.Node{}
	if err := k8s.Get(t.Context(), client.ObjectKey{Name: node}, n); err != nil {
		t.Fatal(err)
	}
	patch := client.MergeFrom(n.DeepCopy())
	n.Labels[key] = value
	if err := k8s.Patch(t.Context(), n, patch); err != nil {
		t.Fatalf("relabeling %s: %v", node, err)
	}
}

// TestProfileChangeRolls: a changed preference rolls the Deployment to a new ReplicaSet, the
// restarted scheduler runs the new config, and new pods follow it.
func TestProfileChangeRolls(t *testing.T) {
	nodes := makeNodes(t, "roll", nodeSpec{name: "x", cpus: 8, labels: map[string]string{"color": "blue"}}, nodeSpec{name: "y", cpus: 8, labels: map[string]string{"color": "green"}})
	profileFor := func(color string) string {
		return `
metadata: {name: e2e-roll}
spec:
  plugins: {multiPoint: {enabled: [{name: NodeLabelPreference, weight: 10}]}}
  pluginConfig:
  - name: NodeLabelPreference
    args: {preferences: [{key: color, values: [` + color + `], weight: 100}]}`
	}
	p := applyProfile(t, profileFor("blue"))
	p = waitCondition(t, p.Name, schedulingv1alpha1.ConditionAvailable, metav1.ConditionTrue, "", 90*time.Second)
	firstHash := p.Status.ConfigHash
	waitScheduler(t, p.Name, firstHash)
	if n := schedule(t, nodes.pod("before", "e2e-roll", 100))[0]; n.Labels["color"] != "blue" {
		t.Fatalf("before the change the pod went to %s (%s), want blue", n.Name, n.Labels["color"])
	}

	applyProfile(t, profileFor("green"))
	p = waitCondition(t, p.Name, schedulingv1alpha1.ConditionProgressing, metav1.ConditionFalse, schedulingv1alpha1.ReasonRolloutComplete, 90*time.Second)
	if p.Status.ConfigHash == firstHash {
		t.Fatalf("the config hash did not change")
	}
	// The Deployment rolled: a ReplicaSet for the new config is scaled up, the old one to 0.
	var rss appsv1.ReplicaSetList
	if err := k8s.List(context.Background(), &rss, client.InNamespace(operatorNamespace), client.MatchingLabels{"scheduling.schedops.io/profile": "e2e-roll"}); err != nil {
		t.Fatal(err)
	}
	replicasByHash := map[string]int32{}
	for _, rs := range rss.Items {
		replicasByHash[rs.Spec.Template.Annotations["scheduling.schedops.io/config-hash"]] = *rs.Spec.Replicas
	}
	if replicasByHash[firstHash] != 0 || replicasByHash[p.Status.ConfigHash] != 1 {
		t.Errorf("ReplicaSet replicas by config hash = %v, want %s: 0 and %s: 1", replicasByHash, firstHash, p.Status.ConfigHash)
	}
	waitScheduler(t, p.Name, p.Status.ConfigHash)
	if n := schedule(t, nodes.pod("after", "e2e-roll", 100))[0]; n.Labels["color"] != "green" {
		t.Errorf("after the change the pod went to %s (%s), want green", n.Name, n.Labels["color"])
	}
}

// TestInvalidChangeRollsNothing: an invalid change leaves the Deployment alone, and the old
// scheduler keeps scheduling.
func TestInvalidChangeRollsNothing(t *testing.T) {
	nodes := makeNodes(t, "invalid", nodeSpec{name: "x", cpus: 8})
	p := applyProfile(t, `{metadata: {name: e2e-invalid}}`)
	p = waitCondition(t, p.Name, schedulingv1alpha1.ConditionAvailable, metav1.ConditionTrue, "", 90*time.Second)
	good := p.Status.ConfigHash
	waitScheduler(t, p.Name, good)
	before := &appsv1.Deployment{}
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: operatorNamespace, Name: p.Status.DeploymentName}, before); err != nil {
		t.Fatal(err)
	}

	applyProfile(t, `
metadata: {name: e2e-invalid}
spec:
  pluginConfig: [{name: NodeResourcesFit, args: {scoringStrategy: {type: Most}}}]`)
	p = waitCondition(t, p.Name, schedulingv1alpha1.ConditionConfigValid, metav1.ConditionFalse, schedulingv1alpha1.ReasonInvalidConfig, 30*time.Second)
	waitCondition(t, p.Name, schedulingv1alpha1.ConditionDegraded, metav1.ConditionTrue, schedulingv1alpha1.ReasonInvalidConfigNotRolledOut, 30*time.Second)
	if !contains(conditions(p), `spec.pluginConfig[0].args.scoringStrategy.type: Unsupported value: "Most"`) {
		t.Errorf("ConfigValid does not carry the validator's message: %s", conditions(p))
	}
	after := &appsv1.Deployment{}
	if err := k8s.Get(context.Background(), client.ObjectKeyFromObject(before), after); err != nil {
		t.Fatal(err)
	}
	if after.ResourceVersion != before.ResourceVersion || after.Generation != before.Generation {
		t.Errorf("the Deployment changed (resourceVersion %s -> %s)", before.ResourceVersion, after.ResourceVersion)
	}
	if p.Status.ConfigHash != good || runner.Hash(p.Status.DeploymentName) != good {
		t.Errorf("status hash %s, running %s, want the last good %s", p.Status.ConfigHash, runner.Hash(p.Status.DeploymentName), good)
	}
	schedule(t, nodes.pod("still-scheduled", "e2e-invalid", 100))
}

// TestDeleteCollectsEverything: deleting a profile garbage-collects every object it owned.
func TestDeleteCollectsEverything(t *testing.T) {
	ctx := context.Background()
	p := applyProfile(t, `{metadata: {name: e2e-delete}, spec: {scheduler: {replicas: 2}}}`)
	p = waitCondition(t, p.Name, schedulingv1alpha1.ConditionConfigValid, metav1.ConditionTrue, "", 30*time.Second)
	selector := client.MatchingLabels{"scheduling.schedops.io/profile": p.Name}
	lists := map[string]client.ObjectList{
		"Deployments": &appsv1.DeploymentList{}, "ConfigMaps": &corev1.ConfigMapList{}, "ServiceAccounts": &corev1.ServiceAccountList{},
		"Services": &corev1.ServiceList{},
	}
	count := func() map[string]int {
		out := map[string]int{}
		for kind, l := range lists {
			if err := k8s.List(ctx, l, client.InNamespace(operatorNamespace), selector); err != nil {
				t.Fatal(err)
			}
			out[kind] = metaLen(l)
		}
		for _, ns := range []string{operatorNamespace, "kube-system"} {
			rbs := &rbacv1.RoleBindingList{}
			if err := k8s.List(ctx, rbs, client.InNamespace(ns), selector); err != nil {
				t.Fatal(err)
			}
			out["RoleBindings in "+ns] = len(rbs.Items)
		}
		crbs := &rbacv1.ClusterRoleBindingList{}
		if err := k8s.List(ctx, crbs, selector); err != nil {
			t.Fatal(err)
		}
		out["ClusterRoleBindings"] = len(crbs.Items)
		return out
	}
	testutil.Eventually(t, 30*time.Second, "every owned object to exist", func(context.Context) error {
		c := count()
		for kind, n := range c {
			if n == 0 {
				return fmt.Errorf("no %s yet: %v", kind, c)
			}
		}
		return nil
	})
	if err := k8s.Delete(ctx, p); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 90*time.Second, "the garbage collector to remove every owned object", func(context.Context) error {
		c := count()
		for kind, n := range c {
			if n != 0 {
				return fmt.Errorf("%d %s left: %v", n, kind, c)
			}
		}
		return nil
	})
}
