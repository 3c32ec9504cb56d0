package simulate

import (
	"cmp"
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
)

// ProfilePreview is the preview of a change of one scheduler's configuration with that
// scheduler's own pods.
type ProfilePreview struct {
	*Preview
	// Total counts the pods of the scheduler name, of which the first in queue order (at most
	// the cap) were simulated.
	Total int
}

// AddedUnschedulable is how many more pods the new revision leaves unschedulable than the
// running one; without a running revision, how many the new one leaves unschedulable.
func (p *ProfilePreview) AddedUnschedulable() int {
	if p.Running == nil {
		return p.New.Unschedulable
	}
	return p.New.Unschedulable - p.Running.Unschedulable
}

// PreviewProfile previews a change of a scheduler (PreviewChange) on a snapshot, with the pods
// of schedulerNames as the workload (ProfileWorkload) and at most maxPods of them (0 is no cap):
// the names the running revision serves and the names the new one serves, so that a rename
// counts the pods of the name it leaves. running is nil for a scheduler that runs no revision yet.
func PreviewProfile(ctx context.Context, snapshot *Cluster, schedulerNames []string, running *Profile, next Profile, maxPods int, opts Options) (*ProfilePreview, error) {
	cluster, workload, total := ProfileWorkload(snapshot, schedulerNames, maxPods)
	p, err := previewChange(ctx, running, next, cluster, workload, opts, true)
	if err != nil {
		return nil, err
	}
	return &ProfilePreview{Preview: p, Total: total}, nil
}

// ProfileWorkload splits a snapshot into the cluster without the pods of schedulerNames and the
// workload of those pods: the pending ones and the bound ones, to be placed anew. The pods are
// in the order of the default queue sort (higher priority first, then older), and there are at
// most maxPods of them (0 is no cap); total is how many there are in all. Pods being deleted
// are left where they are.
func ProfileWorkload(c *Cluster, schedulerNames []string, maxPods int) (rest *Cluster, w *Workload, total int) {
	rest, w = &Cluster{}, &Workload{}
	for _, o := range c.Objects {
		p, ok := o.(*corev1.Pod)
		if !ok || !slices.Contains(schedulerNames, p.Spec.SchedulerName) || terminated(p) || p.DeletionTimestamp != nil {
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
