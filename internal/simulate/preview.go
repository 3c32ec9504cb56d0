package simulate

import (
	"cmp"
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
)

// PreviewInput is a change of one scheduler's configuration to preview.
type PreviewInput struct {
	// SchedulerName is the scheduler name whose pods make the workload.
	SchedulerName string
	// From is the configuration that runs; nil when none does (a new profile).
	From *Profile
	// To is the new configuration.
	To Profile
	// MaxPods caps the pods simulated: the first ones in queue order. 0 is no cap.
	MaxPods int
}

// PreviewResult compares what two configurations do with the pods of one scheduler name.
type PreviewResult struct {
	// Pods is how many pods were simulated, of Total that use the scheduler name.
	Pods, Total int
	// Moved is how many pods To placed otherwise than From: on another node, or bound where
	// the other did not bind it. Without From every pod To binds moved.
	Moved int
	// From is what the running configuration did; nil without one.
	From *Summary
	// To is what the new configuration did.
	To Summary
	// NewlyUnschedulable are the pods To left unschedulable and From bound (without From,
	// every pod To left unschedulable), in queue order, with the scheduler's reason.
	NewlyUnschedulable []PodResult
}

// AddedUnschedulable is how many more pods To leaves unschedulable than From; without From,
// how many To leaves unschedulable.
func (r *PreviewResult) AddedUnschedulable() int {
	if r.From == nil {
		return r.To.Unschedulable
	}
	return r.To.Unschedulable - r.From.Unschedulable
}

// ProfileWorkload splits a snapshot into the cluster without the pods of schedulerName and the
// workload of those pods: the pending ones and the bound ones, to be placed anew. The pods are
// in the order of the default queue sort (higher priority first, then older), and there are at
// most maxPods of them (0 is no cap); total is how many there are in all. Pods being deleted
// are left where they are.
func ProfileWorkload(c *Cluster, schedulerName string, maxPods int) (rest *Cluster, w *Workload, total int) {
	rest, w = &Cluster{}, &Workload{}
	for _, o := range c.Objects {
		p, ok := o.(*corev1.Pod)
		if !ok || p.Spec.SchedulerName != schedulerName || terminated(p) || p.DeletionTimestamp != nil {
			rest.Objects = append(rest.Objects, o)
			continue
		}
		w.Pods = append(w.Pods, p)
	}
	slices.SortStableFunc(w.Pods, queueLess)
	total = len(w.Pods)
	if maxPods > 0 && total > maxPods {
		w.Pods = w.Pods[:maxPods]
	}
	for i, p := range w.Pods {
		w.Pods[i] = p.DeepCopy()
	}
	return rest, w, total
}

// queueLess orders pods as the default queue sort (PrioritySort) would have found them:
// higher priority first, then by creation, then by name for pods created in the same second.
func queueLess(a, b *corev1.Pod) int {
	pa, pb := int32(0), int32(0)
	if a.Spec.Priority != nil {
		pa = *a.Spec.Priority
	}
	if b.Spec.Priority != nil {
		pb = *b.Spec.Priority
	}
	return cmp.Or(cmp.Compare(pb, pa), a.CreationTimestamp.Compare(b.CreationTimestamp.Time), cmp.Compare(podKey(a), podKey(b)))
}

// Preview simulates the pods of in.SchedulerName on a snapshot with the running configuration
// and the new one, through Simulate, and compares them.
func Preview(ctx context.Context, snapshot *Cluster, in PreviewInput) (*PreviewResult, error) {
	cluster, workload, total := ProfileWorkload(snapshot, in.SchedulerName, in.MaxPods)
	var inputs []Input
	if in.From != nil {
		inputs = append(inputs, Input{Profile: *in.From, Workload: workload})
	}
	inputs = append(inputs, Input{Profile: in.To, Workload: workload})
	report, err := Simulate(ctx, cluster, inputs, nil, "")
	if err != nil {
		return nil, err
	}
	r := CompareRuns(report, in.From != nil)
	r.Total = total
	return r, nil
}

// CompareRuns turns the report of a preview, the running configuration's run first when
// hasFrom, into a PreviewResult.
func CompareRuns(report *Report, hasFrom bool) *PreviewResult {
	to := report.Runs[len(report.Runs)-1]
	r := &PreviewResult{Pods: len(to.Pods), To: to.Summary}
	from := map[string]string{}
	if hasFrom {
		r.From = &report.Runs[0].Summary
		for _, p := range report.Runs[0].Pods {
			from[p.Pod] = p.Node
		}
	}
	for _, p := range to.Pods {
		before, ran := from[p.Pod]
		if p.Node != before {
			r.Moved++
		}
		if p.Node == "" && (!hasFrom || (ran && before != "")) {
			r.NewlyUnschedulable = append(r.NewlyUnschedulable, p.PodResult)
		}
	}
	return r
}

// LiveCluster reads what scheduling reads of the cluster of client into memory, page by page
// (Snapshot). `manager simulate --kubeconfig` and the operator's preview both call it.
func LiveCluster(ctx context.Context, client kubernetes.Interface) (*Cluster, error) {
	c := &Cluster{}
	if _, err := Snapshot(ctx, client, SnapshotOptions{}, func(obj runtime.Object) error {
		c.Objects = append(c.Objects, obj)
		return nil
	}); err != nil {
		return nil, err
	}
	return c, nil
}
