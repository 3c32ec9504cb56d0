package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/internal/localcluster"
	"github.com/schedops/scheduler-profile-operator/scheduler/profile"
)

const (
	zoneKey      = "topology.kubernetes.io/zone"
	poolKey      = "pool"
	lifecycleKey = "node.kubernetes.io/lifecycle"
	partOf       = "schedops-demo"
)

// batchTaint keeps the pods of other schedulers off the batch pool.
var batchTaint = corev1.Taint{Key: poolKey, Value: "batch", Effect: corev1.TaintEffectNoSchedule}

// demoNodes are two node pools over three zones, with spot and on-demand nodes; the batch pool is
// tainted for the batch-pool scheduler's pods.
func demoNodes() []*corev1.Node {
	node := func(name, zone, pool, lifecycle string, cpus int64) *corev1.Node {
		n := localcluster.FakeNode(name, map[string]string{zoneKey: zone, poolKey: pool, lifecycleKey: lifecycle}, corev1.ResourceList{
			corev1.ResourceCPU:    *resource.NewQuantity(cpus, resource.DecimalSI),
			corev1.ResourceMemory: resource.MustParse("32Gi"),
			corev1.ResourcePods:   resource.MustParse("110"),
		})
		if pool == "batch" {
			n.Spec.Taints = []corev1.Taint{batchTaint}
		}
		return n
	}
	return []*corev1.Node{
		node("general-a1", "a", "general", "on-demand", 8),
		node("general-a2", "a", "general", "on-demand", 8),
		node("general-b1", "b", "general", "on-demand", 8),
		node("general-c1", "c", "general", "on-demand", 8),
		node("batch-a-spot", "a", "batch", "spot", 4),
		node("batch-b-ondemand", "b", "batch", "on-demand", 8),
	}
}

// workload is what the demo runs with one sample profile.
type workload struct {
	sample   string
	replicas int32
	milliCPU int64
	// tolerations let the pods onto tainted nodes.
	tolerations []corev1.Toleration
	// profile is the applied sample.
	profile *schedulingv1alpha1.SchedulerProfile
}

var workloads = []*workload{
	{sample: "scheduling_v1alpha1_schedulerprofile_binpack.yaml", replicas: 6, milliCPU: 1000},
	{sample: "scheduling_v1alpha1_schedulerprofile_spread.yaml", replicas: 6, milliCPU: 500},
	{sample: "scheduling_v1alpha1_schedulerprofile_nodepool.yaml", replicas: 6, milliCPU: 900, tolerations: []corev1.Toleration{{
		Key: batchTaint.Key, Operator: corev1.TolerationOpEqual, Value: batchTaint.Value, Effect: batchTaint.Effect,
	}}},
}

func applySamples(ctx context.Context, c client.Client, root string) ([]*workload, error) {
	for _, w := range workloads {
		data, err := os.ReadFile(filepath.Join(root, "config", "samples", w.sample))
		if err != nil {
			return nil, err
		}
		p := &schedulingv1alpha1.SchedulerProfile{}
		if err := yaml.UnmarshalStrict(data, p); err != nil {
			return nil, fmt.Errorf("parsing %s: %w", w.sample, err)
		}
		if err := c.Create(ctx, p); err != nil {
			return nil, fmt.Errorf("creating SchedulerProfile %s: %w", p.Name, err)
		}
		w.profile = p
	}
	return workloads, nil
}

func waitAvailable(ctx context.Context, c client.Client, ws []*workload) error {
	for _, w := range ws {
		name := w.profile.Name
		err := poll(ctx, 2*time.Minute, func() (bool, error) {
			if err := c.Get(ctx, client.ObjectKey{Name: name}, w.profile); err != nil {
				return false, err
			}
			return meta.IsStatusConditionTrue(w.profile.Status.Conditions, schedulingv1alpha1.ConditionAvailable), nil
		})
		if err != nil {
			return fmt.Errorf("SchedulerProfile %s did not become Available: %w", name, err)
		}
	}
	return nil
}

// runWorkloads creates one Deployment per profile, one after the other, and waits until all its
// pods are bound.
func runWorkloads(ctx context.Context, c client.Client, ws []*workload) error {
	for _, w := range ws {
		scheduler := profile.SchedulerName(w.profile)
		labels := map[string]string{"app": w.profile.Name + "-app", "app.kubernetes.io/part-of": partOf}
		d := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Name: w.profile.Name + "-app", Namespace: "default", Labels: labels},
			Spec: appsv1.DeploymentSpec{
				Replicas: ptr.To(w.replicas),
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec: corev1.PodSpec{
						SchedulerName: scheduler,
						Tolerations:   w.tolerations,
						Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1", Resources: corev1.ResourceRequirements{
							Requests: corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(w.milliCPU, resource.DecimalSI), corev1.ResourceMemory: resource.MustParse("256Mi")},
						}}},
					},
				},
			},
		}
		if err := c.Create(ctx, d); err != nil {
			return fmt.Errorf("creating Deployment %s: %w", d.Name, err)
		}
		err := poll(ctx, 2*time.Minute, func() (bool, error) {
			pods, err := podsOf(ctx, c, d.Name)
			if err != nil {
				return false, err
			}
			bound := 0
			for _, p := range pods {
				if p.Spec.NodeName != "" {
					bound++
				}
			}
			return bound == int(w.replicas), nil
		})
		if err != nil {
			return fmt.Errorf("the pods of %s (schedulerName %s) were not all bound: %w", d.Name, scheduler, err)
		}
	}
	return nil
}

func podsOf(ctx context.Context, c client.Client, app string) ([]corev1.Pod, error) {
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace("default"), client.MatchingLabels{"app": app}); err != nil {
		return nil, err
	}
	return pods.Items, nil
}

// report prints, per profile, its conditions and where its pods landed.
func report(ctx context.Context, c client.Client, ws []*workload, out io.Writer) error {
	for _, w := range ws {
		p := w.profile
		if err := c.Get(ctx, client.ObjectKey{Name: p.Name}, p); err != nil {
			return err
		}
		fmt.Fprintf(out, "\nSchedulerProfile %s (schedulerName %s, config %s)\n", p.Name, p.Status.SchedulerName, p.Status.ConfigMapName)
		var conds []string
		for _, cond := range p.Status.Conditions {
			conds = append(conds, cond.Type+"="+string(cond.Status))
		}
		fmt.Fprintf(out, "  %s\n", strings.Join(conds, "  "))
		pods, err := podsOf(ctx, c, p.Name+"-app")
		if err != nil {
			return err
		}
		slices.SortFunc(pods, func(a, b corev1.Pod) int { return strings.Compare(a.Spec.NodeName+a.Name, b.Spec.NodeName+b.Name) })
		tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "  POD\tNODE\tZONE\tPOOL\tLIFECYCLE")
		perNode := map[string]int{}
		for _, pod := range pods {
			n := &corev1.Node{}
			if err := c.Get(ctx, client.ObjectKey{Name: pod.Spec.NodeName}, n); err != nil {
				return err
			}
			perNode[n.Name]++
			fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\t%s\n", pod.Name, n.Name, n.Labels[zoneKey], n.Labels[poolKey], n.Labels[lifecycleKey])
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		var summary []string
		for _, name := range slices.Sorted(maps.Keys(perNode)) {
			summary = append(summary, fmt.Sprintf("%s=%d", name, perNode[name]))
		}
		fmt.Fprintf(out, "  pods per node: %s\n", strings.Join(summary, " "))
	}
	return nil
}

// poll calls check until it returns true, an error, or timeout passes.
func poll(ctx context.Context, timeout time.Duration, check func() (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		ok, err := check()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not within %s", timeout)
		case <-time.After(250 * time.Millisecond):
		}
	}
}
