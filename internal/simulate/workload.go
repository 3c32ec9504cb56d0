package simulate

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// Workload is what a simulation schedules: pods in the order they were given, and the
// controllers and PodGroups they belong to, which the simulated cluster holds too (the default
// topology spreading finds a pod's ReplicaSet or StatefulSet by its labels).
type Workload struct {
	Pods        []*corev1.Pod
	Controllers []runtime.Object
}

// ExpandWorkload turns a workload file's objects into pods: a Pod as it is, a PodGroup into the
// cluster, a Deployment or
// ReplicaSet into spec.replicas pods (and a ReplicaSet), a StatefulSet into spec.replicas pods
// named <name>-<ordinal>, a Job into spec.parallelism pods (at most spec.completions).
func ExpandWorkload(objs []runtime.Object) (*Workload, error) {
	w := &Workload{}
	for _, obj := range objs {
		switch o := obj.(type) {
		case *corev1.Pod:
			w.Pods = append(w.Pods, o.DeepCopy())
		case *schedulingv1beta1.PodGroup:
			pg := o.DeepCopy()
			if pg.Namespace == "" {
				pg.Namespace = metav1.NamespaceDefault
			}
			w.Controllers = append(w.Controllers, pg)
		case *appsv1.Deployment:
			rs := &appsv1.ReplicaSet{
				TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "ReplicaSet"},
				ObjectMeta: metav1.ObjectMeta{Namespace: o.Namespace, Name: o.Name, Labels: o.Spec.Template.Labels},
				Spec:       appsv1.ReplicaSetSpec{Replicas: o.Spec.Replicas, Selector: o.Spec.Selector, Template: o.Spec.Template},
			}
			w.addReplicaSet(rs)
		case *appsv1.ReplicaSet:
			w.addReplicaSet(o.DeepCopy())
		case *appsv1.StatefulSet:
			ss := o.DeepCopy()
			w.Controllers = append(w.Controllers, ss)
			w.addPods(ss, "StatefulSet", ss.Spec.Template, replicas(ss.Spec.Replicas))
		case *batchv1.Job:
			n := replicas(o.Spec.Parallelism)
			if o.Spec.Completions != nil && int(*o.Spec.Completions) < n {
				n = int(*o.Spec.Completions)
			}
			w.addPods(o, "Job", o.Spec.Template, n)
		default:
			return nil, fmt.Errorf("%s is not one of the workload kinds (%s)", describe(obj), workloadKinds)
		}
	}
	return w, nil
}

func (w *Workload) addReplicaSet(rs *appsv1.ReplicaSet) {
	w.Controllers = append(w.Controllers, rs)
	w.addPods(rs, "ReplicaSet", rs.Spec.Template, replicas(rs.Spec.Replicas))
}

// addPods adds n pods of a controller's template, named <name>-<i>, controlled by it.
func (w *Workload) addPods(owner metav1.Object, kind string, tmpl corev1.PodTemplateSpec, n int) {
	for i := range n {
		pod := &corev1.Pod{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
			ObjectMeta: *tmpl.ObjectMeta.DeepCopy(),
			Spec:       *tmpl.Spec.DeepCopy(),
		}
		pod.Namespace = owner.GetNamespace()
		pod.Name = fmt.Sprintf("%s-%d", owner.GetName(), i)
		pod.OwnerReferences = []metav1.OwnerReference{{
			APIVersion: ownerAPIVersion(kind), Kind: kind, Name: owner.GetName(),
			UID: types.UID(kind + "/" + owner.GetNamespace() + "/" + owner.GetName()), Controller: ptr.To(true),
		}}
		w.Pods = append(w.Pods, pod)
	}
}

func ownerAPIVersion(kind string) string {
	if kind == "Job" {
		return "batch/v1"
	}
	return "apps/v1"
}

// replicas is a controller's replica count: 1 when unset, as the API defaults it.
func replicas(n *int32) int {
	if n == nil {
		return 1
	}
	return int(*n)
}

// describe names an object by kind and name in messages.
func describe(obj runtime.Object) string {
	kind := obj.GetObjectKind().GroupVersionKind().Kind
	if m, ok := obj.(metav1.Object); ok {
		return fmt.Sprintf("%s %s", kind, m.GetName())
	}
	return fmt.Sprintf("%T", obj)
}
