package simulate

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
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

// EmptyProfilePreview is PreviewProfile's result when schedulerNames have no pods
// (HasProfilePods): no pod to simulate, so none moved and none unschedulable in either revision.
func EmptyProfilePreview(running *Profile, next Profile) *ProfilePreview {
	return &ProfilePreview{Preview: comparePreview(running, nil, next, nil)}
}

// HasProfilePods tells whether the cluster of client has a pod that ProfileWorkload would take
// into the workload of schedulerNames (inWorkload). It asks the apiserver for those pods only (a
// field selector on spec.schedulerName), a page at a time, and stops at the first one.
func HasProfilePods(ctx context.Context, client kubernetes.Interface, schedulerNames []string) (bool, error) {
	for _, name := range schedulerNames {
		opts := metav1.ListOptions{Limit: 100, FieldSelector: fields.AndSelectors(
			fields.OneTermEqualSelector("spec.schedulerName", name),
			fields.OneTermNotEqualSelector("status.phase", string(corev1.PodSucceeded)),
			fields.OneTermNotEqualSelector("status.phase", string(corev1.PodFailed)),
		).String()}
		for {
			pods, err := client.CoreV1().Pods(metav1.NamespaceAll).List(ctx, opts)
			if err != nil {
				return false, fmt.Errorf("listing the pods of scheduler name %q: %w", name, err)
			}
			for i := range pods.Items {
				if inWorkload(&pods.Items[i], schedulerNames) {
					return true, nil
				}
			}
			if opts.Continue = pods.Continue; opts.Continue == "" {
				break
			}
		}
	}
	return false, nil
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
		if !ok || !inWorkload(p, schedulerNames) {
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

// inWorkload tells whether pod p is of the workload of schedulerNames: one of its pods, neither
// terminated nor being deleted.
func inWorkload(p *corev1.Pod, schedulerNames []string) bool {
	return slices.Contains(schedulerNames, p.Spec.SchedulerName) && !terminated(p) && p.DeletionTimestamp == nil
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
