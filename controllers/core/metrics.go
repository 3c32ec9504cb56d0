package core

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/controllers/metrics"
)

// recordMetrics exports the profile's conditions and counts what the pass did.
func recordMetrics(m *metrics.Metrics, before, p *schedulingv1alpha1.SchedulerProfile, obs *observation) {
	if m == nil {
		return
	}
	for _, typ := range []string{
		schedulingv1alpha1.ConditionConfigValid, schedulingv1alpha1.ConditionAvailable,
		schedulingv1alpha1.ConditionProgressing, schedulingv1alpha1.ConditionDegraded, schedulingv1alpha1.ConditionAdvisory,
	} {
		c := meta.FindStatusCondition(p.Status.Conditions, typ)
		for _, status := range []metav1.ConditionStatus{metav1.ConditionTrue, metav1.ConditionFalse, metav1.ConditionUnknown} {
			v := 0.0
			if c != nil && c.Status == status {
				v = 1
			}
			m.ProfileConditions.WithLabelValues(p.Name, typ, string(status)).Set(v)
		}
	}
	if obs.invalid != "" {
		m.ConfigValidationsFailed.WithLabelValues(p.Name).Inc()
	}
	if rolloutStarted(before, p) {
		m.RolloutsStarted.WithLabelValues(p.Name).Inc()
	}
	if rolledBack(before, p) && p.Spec.SchedulerRef.Name == "" {
		m.RolledBack("SchedulerProfile", p.Name)
	}
	recordAdviceMetrics(m, p)
}
