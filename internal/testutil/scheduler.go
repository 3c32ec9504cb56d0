package testutil

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
)

// SchedulerWrapper builds a Scheduler.
type SchedulerWrapper struct {
	schedulingv1alpha1.Scheduler
}

// MakeScheduler starts a Scheduler named name with an empty spec: every default applies.
func MakeScheduler(name string) *SchedulerWrapper {
	return &SchedulerWrapper{schedulingv1alpha1.Scheduler{ObjectMeta: metav1.ObjectMeta{Name: name}}}
}

// Replicas sets spec.replicas.
func (w *SchedulerWrapper) Replicas(n int32) *SchedulerWrapper {
	w.Spec.Replicas = ptr.To(n)
	return w
}

// Extender appends an HTTP extender to spec.extenders.
func (w *SchedulerWrapper) Extender(e schedulingv1alpha1.Extender) *SchedulerWrapper {
	w.Spec.Extenders = append(w.Spec.Extenders, e)
	return w
}

// Obj returns a copy of the Scheduler.
func (w *SchedulerWrapper) Obj() *schedulingv1alpha1.Scheduler {
	return w.DeepCopy()
}
