package testutil

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PodWrapper builds a Pod.
type PodWrapper struct {
	corev1.Pod
}

// MakePod starts a Pod in namespace with one container, pause, that requests nothing. No test
// cluster runs a kubelet that would pull its image.
func MakePod(name, namespace string) *PodWrapper {
	return &PodWrapper{corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "pause", Image: "registry.k8s.io/pause:3.10"}},
		},
	}}
}

// Label sets the label key to value.
func (w *PodWrapper) Label(key, value string) *PodWrapper {
	if w.Labels == nil {
		w.Labels = map[string]string{}
	}
	w.Labels[key] = value
	return w
}

// SchedulerName sets spec.schedulerName, the scheduler that must place the pod.
func (w *PodWrapper) SchedulerName(name string) *PodWrapper {
	w.Spec.SchedulerName = name
	return w
}

// NodeSelector sets each of selector in spec.nodeSelector.
func (w *PodWrapper) NodeSelector(selector map[string]string) *PodWrapper {
	for k, v := range selector {
		if w.Spec.NodeSelector == nil {
			w.Spec.NodeSelector = map[string]string{}
		}
		w.Spec.NodeSelector[k] = v
	}
	return w
}

// Toleration appends a toleration.
func (w *PodWrapper) Toleration(toleration corev1.Toleration) *PodWrapper {
	w.Spec.Tolerations = append(w.Spec.Tolerations, toleration)
	return w
}

// Request sets the container's request of a resource to quantity (for example "100m").
func (w *PodWrapper) Request(name corev1.ResourceName, quantity string) *PodWrapper {
	c := &w.Spec.Containers[0]
	if c.Resources.Requests == nil {
		c.Resources.Requests = corev1.ResourceList{}
	}
	c.Resources.Requests[name] = resource.MustParse(quantity)
	return w
}

// PodGroup makes the pod a member of the PodGroup name (spec.schedulingGroup).
func (w *PodWrapper) PodGroup(name string) *PodWrapper {
	w.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: &name}
	return w
}

// Obj returns a copy of the pod.
func (w *PodWrapper) Obj() *corev1.Pod {
	return w.DeepCopy()
}

// PodScheduled returns the pod's PodScheduled condition, nil until a scheduler has set it.
func PodScheduled(pod *corev1.Pod) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == corev1.PodScheduled {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}
