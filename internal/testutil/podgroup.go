package testutil

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
)

// PodGroupWrapper builds a PodGroup (scheduling.k8s.io/v1beta1), the group that gang scheduling
// places all together or not at all.
type PodGroupWrapper struct {
	schedulingv1beta1.PodGroup
}

// MakePodGroup starts a PodGroup in namespace.
func MakePodGroup(name, namespace string) *PodGroupWrapper {
	return &PodGroupWrapper{schedulingv1beta1.PodGroup{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}}
}

// Gang makes the group a gang of at least minCount pods: all of them are scheduled, or none.
func (w *PodGroupWrapper) Gang(minCount int32) *PodGroupWrapper {
	w.Spec.SchedulingPolicy = schedulingv1beta1.PodGroupSchedulingPolicy{Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: minCount}}
	return w
}

// Obj returns a copy of the PodGroup.
func (w *PodGroupWrapper) Obj() *schedulingv1beta1.PodGroup {
	return w.DeepCopy()
}
