package testutil

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// NodeWrapper builds a Node. Besides MakeNode's empty node, it can wrap one made elsewhere, such
// as a kwok node of the local cluster: &NodeWrapper{Node: *node}.
type NodeWrapper struct {
	corev1.Node
}

// MakeNode starts a Node named name, without labels, capacity or conditions.
func MakeNode(name string) *NodeWrapper {
	return &NodeWrapper{corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}}
}

// Label sets the label key to value.
func (w *NodeWrapper) Label(key, value string) *NodeWrapper {
	if w.Node.Labels == nil {
		w.Node.Labels = map[string]string{}
	}
	w.Node.Labels[key] = value
	return w
}

// Labels sets each of labels.
func (w *NodeWrapper) Labels(labels map[string]string) *NodeWrapper {
	for k, v := range labels {
		w.Label(k, v)
	}
	return w
}

// Capacity sets status.capacity and status.allocatable to the quantities of resources
// (for example {cpu: "4", memory: "4000Mi"}): no system reservation is subtracted.
func (w *NodeWrapper) Capacity(resources map[corev1.ResourceName]string) *NodeWrapper {
	list := corev1.ResourceList{}
	for name, quantity := range resources {
		list[name] = resource.MustParse(quantity)
	}
	w.Status.Capacity = list
	w.Status.Allocatable = list.DeepCopy()
	return w
}

// Taint appends a taint.
func (w *NodeWrapper) Taint(taint corev1.Taint) *NodeWrapper {
	w.Spec.Taints = append(w.Spec.Taints, taint)
	return w
}

// Ready sets the Ready condition a kubelet reports, with a heartbeat of now.
func (w *NodeWrapper) Ready() *NodeWrapper {
	now := metav1.Now()
	w.Status.Conditions = append(w.Status.Conditions, corev1.NodeCondition{
		Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
		Message: "set by the test", LastHeartbeatTime: now, LastTransitionTime: now,
	})
	return w
}

// Obj returns a copy of the node.
func (w *NodeWrapper) Obj() *corev1.Node {
	return w.DeepCopy()
}
