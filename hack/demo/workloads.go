package main

import (
	"bufio"
	"context"
	"errors"
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
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
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
// tainted for the batch-pool scheduler's pods. A general node has room for everything the
// workloads put on the one binpack fills (see workloads), whichever of the four, which is a tie.
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
		node("general-a1", "a", "general", "on-demand", 10),
		node("general-a2", "a", "general", "on-demand", 10),
		node("general-b1", "b", "general", "on-demand", 10),
		node("general-c1", "c", "general", "on-demand", 10),
		node("batch-a-spot", "a", "batch", "spot", 4),
		node("batch-b-ondemand", "b", "batch", "on-demand", 8),
	}
}

// workload is what the demo runs with one sample profile: a Deployment whose pods set the
// profile's schedulerName.
type workload struct {
	// name is the sample profile's name.
	name     string
	replicas int32
	milliCPU int64
	// tolerations let the pods onto tainted nodes.
	tolerations []corev1.Toleration
	// profile is the applied sample.
	profile *schedulingv1alpha1.SchedulerProfile
}

// workloads are run, and reported, in this order: first the profiles that run schedulers of their
// own, then the members of the shared Scheduler. shared-binpack's pods are small enough (600m in
// all) to fit in what is left of the node that binpack fills, next to up to two spread pods and two
// scheduler pods, so that node, the fullest, takes them all. When that node is alone in its zone
// (general-b1 or general-c1), two spread and two shared-spread pods must go there too: 8.8 CPUs in
// all, which is why a general node has 10.
var workloads = []*workload{
	{name: "binpack", replicas: 6, milliCPU: 1000},
	{name: "spread", replicas: 6, milliCPU: 500},
	{name: "batch-pool", replicas: 6, milliCPU: 900, tolerations: []corev1.Toleration{{
		Key: batchTaint.Key, Operator: corev1.TolerationOpEqual, Value: batchTaint.Value, Effect: batchTaint.Effect,
	}}},
	{name: "shared-binpack", replicas: 6, milliCPU: 100},
	{name: "shared-spread", replicas: 6, milliCPU: 500},
}

// samples are the applied objects of config/samples.
type samples struct {
	schedulers []*schedulingv1alpha1.Scheduler
	// workloads has one entry per sample profile, in the order of workloads.
	workloads []*workload
}

// applySamples creates every object of the resources that config/samples/kustomization.yaml lists
// (it has no patches, so the files are what `kubectl apply -k config/samples` applies) and pairs
// each profile with its workload.
func applySamples(ctx context.Context, c client.Client, root string) (*samples, error) {
	dir := filepath.Join(root, "config", "samples")
	data, err := os.ReadFile(filepath.Join(dir, "kustomization.yaml"))
	if err != nil {
		return nil, err
	}
	var kustomization struct {
		Resources []string `json:"resources"`
	}
	if err := yaml.Unmarshal(data, &kustomization); err != nil {
		return nil, fmt.Errorf("parsing config/samples/kustomization.yaml: %w", err)
	}
	out := &samples{}
	profiles := map[string]*schedulingv1alpha1.SchedulerProfile{}
	for _, file := range kustomization.Resources {
		objs, err := readObjects(filepath.Join(dir, file))
		if err != nil {
			return nil, err
		}
		for _, obj := range objs {
			if err := c.Create(ctx, obj); err != nil {
				return nil, fmt.Errorf("creating %s %s: %w", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName(), err)
			}
			switch o := obj.(type) {
			case *schedulingv1alpha1.Scheduler:
				out.schedulers = append(out.schedulers, o)
			case *schedulingv1alpha1.SchedulerProfile:
				profiles[o.Name] = o
			}
		}
	}
	for _, w := range workloads {
		if w.profile = profiles[w.name]; w.profile == nil {
			return nil, fmt.Errorf("config/samples has no SchedulerProfile %s", w.name)
		}
		delete(profiles, w.name)
		out.workloads = append(out.workloads, w)
	}
	if len(profiles) > 0 {
		return nil, fmt.Errorf("the demo has no workload for the sample SchedulerProfiles %v", slices.Sorted(maps.Keys(profiles)))
	}
	return out, nil
}

// readObjects decodes the Schedulers and SchedulerProfiles of a YAML file with one or more
// documents, strictly, so that a misspelt field in a sample stops the demo.
func readObjects(path string) ([]client.Object, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	reader := utilyaml.NewYAMLReader(bufio.NewReader(f))
	var out []client.Object
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", path, err)
		}
		var typ metav1.TypeMeta
		if err := yaml.Unmarshal(doc, &typ); err != nil {
			return nil, fmt.Errorf("parsing %s: %w", path, err)
		}
		var obj client.Object
		switch typ.Kind {
		case "":
			continue // a document of comments only
		case "Scheduler":
			obj = &schedulingv1alpha1.Scheduler{}
		case "SchedulerProfile":
			obj = &schedulingv1alpha1.SchedulerProfile{}
		default:
			return nil, fmt.Errorf("%s: unexpected kind %s", path, typ.Kind)
		}
		if err := yaml.UnmarshalStrict(doc, obj); err != nil {
			return nil, fmt.Errorf("parsing %s %s: %w", path, typ.Kind, err)
		}
		out = append(out, obj)
	}
}

// waitAvailable waits until every Scheduler and profile of the samples is Available.
func waitAvailable(ctx context.Context, c client.Client, s *samples) error {
	for _, sch := range s.schedulers {
		if err := waitFor(ctx, c, "Scheduler", sch, func() []metav1.Condition { return sch.Status.Conditions }); err != nil {
			return err
		}
	}
	for _, w := range s.workloads {
		if err := waitFor(ctx, c, "SchedulerProfile", w.profile, func() []metav1.Condition { return w.profile.Status.Conditions }); err != nil {
			return err
		}
	}
	return nil
}

// waitFor reads obj until the conditions it holds have Available=True.
func waitFor(ctx context.Context, c client.Client, kind string, obj client.Object, conditions func() []metav1.Condition) error {
	err := poll(ctx, 2*time.Minute, func() (bool, error) {
		if err := c.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return false, err
		}
		return meta.IsStatusConditionTrue(conditions(), schedulingv1alpha1.ConditionAvailable), nil
	})
	if err != nil {
		return fmt.Errorf("%s %s did not become Available: %w", kind, obj.GetName(), err)
	}
	return nil
}

// runWorkloads creates one Deployment per profile, one after the other, and waits until all its
// pods are bound. With a real node the pods keep to the kwok nodes.
func runWorkloads(ctx context.Context, c client.Client, ws []*workload, rn *realNode) error {
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
		rn.onKwok(&d.Spec.Template.Spec)
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

// report prints the profiles that run schedulers of their own, then each Scheduler with the
// profiles it serves: conditions, and where each profile's pods landed.
func report(ctx context.Context, c client.Client, s *samples, out io.Writer) error {
	for _, w := range s.workloads {
		if w.profile.Spec.SchedulerRef.Name == "" {
			if err := reportProfile(ctx, c, w.profile, out); err != nil {
				return err
			}
		}
	}
	for _, sch := range s.schedulers {
		if err := reportScheduler(ctx, c, sch, out); err != nil {
			return err
		}
		for _, w := range s.workloads {
			if w.profile.Spec.SchedulerRef.Name == sch.Name {
				if err := reportProfile(ctx, c, w.profile, out); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// reportScheduler prints a Scheduler's conditions and the profiles its configuration serves.
func reportScheduler(ctx context.Context, c client.Client, s *schedulingv1alpha1.Scheduler, out io.Writer) error {
	if err := c.Get(ctx, client.ObjectKeyFromObject(s), s); err != nil {
		return err
	}
	fmt.Fprintf(out, "\nScheduler %s (one scheduler process: Deployment %s, config %s)\n", s.Name, s.Status.DeploymentName, s.Status.ConfigMapName)
	fmt.Fprintf(out, "  %s\n", conditionSummary(s.Status.Conditions))
	tw := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  PROFILE\tSCHEDULERNAME")
	for _, m := range s.Status.Profiles {
		fmt.Fprintf(tw, "  %s\t%s\n", m.Name, m.SchedulerName)
	}
	return tw.Flush()
}

// reportProfile prints a profile's conditions and where its workload's pods landed.
func reportProfile(ctx context.Context, c client.Client, p *schedulingv1alpha1.SchedulerProfile, out io.Writer) error {
	if err := c.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
		return err
	}
	servedBy := ""
	if p.Spec.SchedulerRef.Name != "" {
		servedBy = ", Scheduler " + p.Spec.SchedulerRef.Name
	}
	fmt.Fprintf(out, "\nSchedulerProfile %s (schedulerName %s%s, config %s)\n", p.Name, p.Status.SchedulerName, servedBy, p.Status.ConfigMapName)
	fmt.Fprintf(out, "  %s\n", conditionSummary(p.Status.Conditions))
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
	return nil
}

// conditionSummary is "Type=Status" for each condition, in the order of the status.
func conditionSummary(conditions []metav1.Condition) string {
	var out []string
	for _, c := range conditions {
		out = append(out, c.Type+"="+string(c.Status))
	}
	return strings.Join(out, "  ")
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
