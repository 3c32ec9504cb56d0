package simulate

import (
	"context"
	"fmt"
	"io"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/pager"
	"sigs.k8s.io/yaml"
)

// pageSize is how many objects one List request of a snapshot asks for.
const pageSize = 500

// SnapshotOptions choose what a snapshot keeps.
type SnapshotOptions struct {
	// StripPods leaves out the fields of pod specs that scheduling does not read (environment,
	// commands, probes, ...) and pods' annotations, so that a snapshot can be shared.
	StripPods bool
	// StripAnnotations leaves out the annotations of every kind whose annotations no plugin
	// reads: all but PersistentVolumeClaims, PersistentVolumes, StorageClasses and CSINodes,
	// which volume binding reads, and PodGroups. With StripPods it also strips the pod templates
	// of ReplicaSets and StatefulSets as it strips pods: scheduling reads their selectors only.
	StripAnnotations bool
}

// listFunc lists one page of one kind.
type listFunc func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error)

// snapshotKind is a kind of object a snapshot holds and how to list it.
type snapshotKind struct {
	kind string
	list func(c kubernetes.Interface) listFunc
	// optional kinds are skipped when the cluster does not serve them.
	optional bool
}

// snapshotKinds are what scheduling reads: the nodes and the pods on them or waiting, the
// objects of the in-tree plugins (volumes, namespaces' labels, disruption budgets, priorities),
// the selectors the default topology spreading finds a pod's siblings by, and PodGroups.
var snapshotKinds = []snapshotKind{
	{kind: "Namespace", list: func(c kubernetes.Interface) listFunc { return wrap(c.CoreV1().Namespaces().List) }},
	{kind: "Node", list: func(c kubernetes.Interface) listFunc { return wrap(c.CoreV1().Nodes().List) }},
	{kind: "Pod", list: func(c kubernetes.Interface) listFunc {
		list := c.CoreV1().Pods("").List
		return func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			// Terminated pods hold no resources: the scheduler does not see them either.
			opts.FieldSelector = "status.phase!=Succeeded,status.phase!=Failed"
			return list(ctx, opts)
		}
	}},
	{kind: "PriorityClass", list: func(c kubernetes.Interface) listFunc { return wrap(c.SchedulingV1().PriorityClasses().List) }},
	{kind: "PersistentVolume", list: func(c kubernetes.Interface) listFunc { return wrap(c.CoreV1().PersistentVolumes().List) }},
	{kind: "PersistentVolumeClaim", list: func(c kubernetes.Interface) listFunc { return wrap(c.CoreV1().PersistentVolumeClaims("").List) }},
	{kind: "StorageClass", list: func(c kubernetes.Interface) listFunc { return wrap(c.StorageV1().StorageClasses().List) }},
	{kind: "CSINode", list: func(c kubernetes.Interface) listFunc { return wrap(c.StorageV1().CSINodes().List) }},
	{kind: "PodDisruptionBudget", list: func(c kubernetes.Interface) listFunc { return wrap(c.PolicyV1().PodDisruptionBudgets("").List) }},
	{kind: "Service", list: func(c kubernetes.Interface) listFunc { return wrap(c.CoreV1().Services("").List) }},
	{kind: "ReplicaSet", list: func(c kubernetes.Interface) listFunc { return wrap(c.AppsV1().ReplicaSets("").List) }},
	{kind: "StatefulSet", list: func(c kubernetes.Interface) listFunc { return wrap(c.AppsV1().StatefulSets("").List) }},
	{kind: "PodGroup", optional: true, list: func(c kubernetes.Interface) listFunc { return wrap(c.SchedulingV1beta1().PodGroups("").List) }},
}

// wrap turns a typed List into a listFunc.
func wrap[T runtime.Object](list func(context.Context, metav1.ListOptions) (T, error)) listFunc {
	return func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		return list(ctx, opts)
	}
}

// SnapshotStats counts the objects of a snapshot by kind.
type SnapshotStats map[string]int

// String is "3 Nodes, 20 Pods, ..." in the order of the snapshot.
func (s SnapshotStats) String() string {
	var parts []string
	for _, k := range snapshotKinds {
		if n := s[k.kind]; n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, k.kind))
		}
	}
	return strings.Join(parts, ", ")
}

// Snapshot lists what scheduling reads from the cluster of client, page by page, and hands each
// object, with its apiVersion and kind, to emit. It only reads.
func Snapshot(ctx context.Context, client kubernetes.Interface, opts SnapshotOptions, emit func(runtime.Object) error) (SnapshotStats, error) {
	stats := SnapshotStats{}
	for _, k := range snapshotKinds {
		p := pager.New(pager.ListPageFunc(k.list(client)))
		p.PageSize = pageSize
		err := p.EachListItem(ctx, metav1.ListOptions{}, func(obj runtime.Object) error {
			obj = obj.DeepCopyObject()
			if err := prepare(obj, opts); err != nil {
				return err
			}
			stats[k.kind]++
			return emit(obj)
		})
		if k.optional && (apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err)) {
			continue
		}
		if err != nil {
			return stats, fmt.Errorf("listing %ss: %w", k.kind, err)
		}
	}
	return stats, nil
}

// prepare sets an object's apiVersion and kind, which typed lists leave out, and drops what a
// snapshot does not need.
func prepare(obj runtime.Object, opts SnapshotOptions) error {
	gvks, _, err := scheme.Scheme.ObjectKinds(obj)
	if err != nil {
		return err
	}
	obj.GetObjectKind().SetGroupVersionKind(gvks[0])
	if m, ok := obj.(metav1.Object); ok {
		m.SetManagedFields(nil)
	}
	if pod, ok := obj.(*corev1.Pod); ok && opts.StripPods {
		stripPod(pod)
	}
	if opts.StripAnnotations {
		stripUnread(obj, opts.StripPods)
	}
	return nil
}

// stripUnread leaves out the annotations of obj unless a plugin reads them, and with templates
// the pod template of a ReplicaSet or StatefulSet but for what stripPod keeps of a pod.
func stripUnread(obj runtime.Object, templates bool) {
	switch o := obj.(type) {
	case *corev1.PersistentVolumeClaim, *corev1.PersistentVolume, *storagev1.StorageClass, *storagev1.CSINode, *schedulingv1beta1.PodGroup:
		return
	case *appsv1.ReplicaSet:
		if templates {
			stripTemplate(&o.Spec.Template)
		}
	case *appsv1.StatefulSet:
		if templates {
			stripTemplate(&o.Spec.Template)
		}
	}
	if m, ok := obj.(metav1.Object); ok {
		m.SetAnnotations(nil)
	}
}

// stripTemplate strips a pod template as stripPod strips a pod.
func stripTemplate(t *corev1.PodTemplateSpec) {
	pod := &corev1.Pod{ObjectMeta: t.ObjectMeta, Spec: t.Spec}
	stripPod(pod)
	t.ObjectMeta, t.Spec = pod.ObjectMeta, pod.Spec
}

// stripPod leaves out what scheduling does not read of a pod: its annotations, and of its
// containers the commands, environment, probes and lifecycle hooks. Images stay (ImageLocality
// scores by them), and so do requests, ports, volumes and everything the plugins match.
func stripPod(pod *corev1.Pod) {
	pod.Annotations = nil
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			c := &cs[i]
			c.Command, c.Args, c.Env, c.EnvFrom, c.WorkingDir = nil, nil, nil, nil, ""
			c.LivenessProbe, c.ReadinessProbe, c.StartupProbe, c.Lifecycle = nil, nil, nil, nil
		}
	}
	pod.Spec.EphemeralContainers = nil
	pod.Status = corev1.PodStatus{Phase: pod.Status.Phase, NominatedNodeName: pod.Status.NominatedNodeName}
}

// ListWriter writes objects as one v1 List in YAML, one item at a time, so that a snapshot of a
// large cluster is never held in memory whole.
type ListWriter struct {
	w       io.Writer
	started bool
	// Bytes counts what was written.
	Bytes int
}

// NewListWriter writes a List to w.
func NewListWriter(w io.Writer) *ListWriter { return &ListWriter{w: w} }

// Write adds one item.
func (l *ListWriter) Write(obj runtime.Object) error {
	if !l.started {
		if err := l.write("apiVersion: v1\nkind: List\nitems:\n"); err != nil {
			return err
		}
		l.started = true
	}
	data, err := yaml.Marshal(obj)
	if err != nil {
		return err
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	for i, line := range lines {
		prefix := "  "
		if i == 0 {
			prefix = "- "
		}
		lines[i] = prefix + line
	}
	return l.write(strings.Join(lines, "\n") + "\n")
}

// Close ends the List; an empty one gets its empty items.
func (l *ListWriter) Close() error {
	if !l.started {
		return l.write("apiVersion: v1\nkind: List\nitems: []\n")
	}
	return nil
}

func (l *ListWriter) write(s string) error {
	n, err := io.WriteString(l.w, s)
	l.Bytes += n
	return err
}
