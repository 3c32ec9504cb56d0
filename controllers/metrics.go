package controllers

import (
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
)

var (
	profileConditions = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "schedops_schedulerprofile_condition",
		Help: "Whether a SchedulerProfile has a condition with a status (1) or not (0).",
	}, []string{"profile", "condition", "status"})

	configValidationsFailed = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "schedops_config_validations_failed_total",
		Help: "Reconciles that found a SchedulerProfile's configuration invalid, so nothing was rolled out.",
	}, []string{"profile"})

	rollbacks = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "schedops_rollbacks_total",
		Help: "Rollouts of a scheduler that failed and were returned to the last revision that ran available.",
	}, []string{"kind", "name"})
	rolloutsStarted = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "schedops_rollouts_started_total",
		Help: "Rollouts of a new scheduler configuration.",
	}, []string{"profile"})
	schedulerBuilds = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "schedops_scheduler_builds_total",
		Help: "Schedulers the operator built (scheduler.New on a fake clientset) to validate a configuration: of a dedicated profile, of a Scheduler's member alone, or of a Scheduler's combined configuration. A result the operator remembers from an earlier pass is not built again, and not counted.",
	}, []string{"config"})
	profileAdviceCount = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "schedops_schedulerprofile_advice",
		Help: "Findings of the profile doctor in a SchedulerProfile's status.advice, by code (docs/reference/advice.md).",
	}, []string{"profile", "code"})
	strandedPodsGauge = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "schedops_stranded_pods",
		Help: "Pending pods that namespace assignment sent to a scheduler name no running scheduler serves any more, by scheduler name.",
	}, []string{"scheduler_name"})
	upgradeStops = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "schedops_upgrade_stops_total",
		Help: "Times a scheduler was held on its image because the operator's new scheduler image was rolled back on another scheduler, which stopped the upgrade.",
	}, []string{"kind", "name"})
)

func init() {
	metrics.Registry.MustRegister(profileConditions, configValidationsFailed, rolloutsStarted, rollbacks, upgradeStops, schedulerBuilds, profileAdviceCount, strandedPodsGauge)
}

// Values of the config label of schedops_scheduler_builds_total.
const (
	buildDedicated = "dedicated"
	buildMember    = "member"
	buildCombined  = "combined"
)

// recordMetrics exports the profile's conditions and counts what the pass did.
func recordMetrics(before, p *schedulingv1alpha1.SchedulerProfile, obs *observation) {
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
			profileConditions.WithLabelValues(p.Name, typ, string(status)).Set(v)
		}
	}
	if obs.invalid != "" {
		configValidationsFailed.WithLabelValues(p.Name).Inc()
	}
	if rolloutStarted(before, p) {
		rolloutsStarted.WithLabelValues(p.Name).Inc()
	}
	if rolledBack(before, p) && p.Spec.SchedulerRef.Name == "" {
		rollbacks.WithLabelValues("SchedulerProfile", p.Name).Inc()
	}
	recordAdviceMetrics(p)
}

// forgetMetrics removes the series of a deleted profile.
func forgetMetrics(name string) {
	profileConditions.DeletePartialMatch(prometheus.Labels{"profile": name})
	configValidationsFailed.DeletePartialMatch(prometheus.Labels{"profile": name})
	rollbacks.DeletePartialMatch(prometheus.Labels{"kind": "SchedulerProfile", "name": name})
	rolloutsStarted.DeletePartialMatch(prometheus.Labels{"profile": name})
	profileAdviceCount.DeletePartialMatch(prometheus.Labels{"profile": name})
}
