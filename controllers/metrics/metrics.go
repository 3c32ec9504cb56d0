// Package metrics holds the operator's own Prometheus metrics (docs/reference/metrics.md): an
// object built once by the composition root, registered explicitly (Register) and handed to the
// reconcilers that record into it. Nothing is registered on import.
package metrics

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
)

// Values of the config label of schedops_scheduler_builds_total.
const (
	BuildDedicated = "dedicated"
	BuildMember    = "member"
	BuildCombined  = "combined"
)

// Metrics are the operator's collectors. A nil *Metrics records nothing, for the tests of parts
// that do not look at metrics.
type Metrics struct {
	ProfileConditions       *prometheus.GaugeVec
	ConfigValidationsFailed *prometheus.CounterVec
	Rollbacks               *prometheus.CounterVec
	RolloutsStarted         *prometheus.CounterVec
	SchedulerBuilds         *prometheus.CounterVec
	ProfileAdvice           *prometheus.GaugeVec
	StrandedPods            *prometheus.GaugeVec
	UpgradeStops            *prometheus.CounterVec
}

// New returns the collectors, registered nowhere.
func New() *Metrics {
	return &Metrics{
		ProfileConditions: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "schedops_schedulerprofile_condition",
			Help: "Whether a SchedulerProfile has a condition with a status (1) or not (0).",
		}, []string{"profile", "condition", "status"}),
		ConfigValidationsFailed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "schedops_config_validations_failed_total",
			Help: "Reconciles that found a SchedulerProfile's configuration invalid, so nothing was rolled out.",
		}, []string{"profile"}),
		Rollbacks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "schedops_rollbacks_total",
			Help: "Rollouts of a scheduler that failed and were returned to the last revision that ran available.",
		}, []string{"kind", "name"}),
		RolloutsStarted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "schedops_rollouts_started_total",
			Help: "Rollouts of a new scheduler configuration.",
		}, []string{"profile"}),
		SchedulerBuilds: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "schedops_scheduler_builds_total",
			Help: "Schedulers the operator built (scheduler.New on a fake clientset) to validate a configuration: of a dedicated profile, of a Scheduler's member alone, or of a Scheduler's combined configuration. A result the operator remembers from an earlier pass is not built again, and not counted.",
		}, []string{"config"}),
		ProfileAdvice: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "schedops_schedulerprofile_advice",
			Help: "Findings of the profile doctor in a SchedulerProfile's status.advice, by code (docs/reference/advice.md).",
		}, []string{"profile", "code"}),
		StrandedPods: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "schedops_stranded_pods",
			Help: "Pending pods that namespace assignment sent to a scheduler name no running scheduler serves any more, by scheduler name.",
		}, []string{"scheduler_name"}),
		UpgradeStops: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "schedops_upgrade_stops_total",
			Help: "Times a scheduler was held on its image because the operator's new scheduler image was rolled back on another scheduler, which stopped the upgrade.",
		}, []string{"kind", "name"}),
	}
}

// Register registers every collector with r. Where r already holds a collector of the same
// metric (a second manager in one process: the tests start several), m records into that one
// from then on, so that both managers' series are exported.
func (m *Metrics) Register(r prometheus.Registerer) error {
	for _, c := range []any{&m.ProfileConditions, &m.ConfigValidationsFailed, &m.Rollbacks, &m.RolloutsStarted,
		&m.SchedulerBuilds, &m.ProfileAdvice, &m.StrandedPods, &m.UpgradeStops} {
		if err := register(r, c); err != nil {
			return err
		}
	}
	return nil
}

func register(r prometheus.Registerer, field any) error {
	switch f := field.(type) {
	case **prometheus.GaugeVec:
		return adopt(r.Register(*f), f)
	case **prometheus.CounterVec:
		return adopt(r.Register(*f), f)
	}
	panic("metrics: a collector of an unknown type")
}

// adopt makes *f the collector already registered when err says there is one.
func adopt[C prometheus.Collector](err error, f *C) error {
	var already prometheus.AlreadyRegisteredError
	if errors.As(err, &already) {
		existing, ok := already.ExistingCollector.(C)
		if !ok {
			return err
		}
		*f = existing
		return nil
	}
	return err
}

// SchedulerBuilt counts a scheduler built to validate a configuration of the kind config
// (BuildDedicated, BuildMember, BuildCombined).
func (m *Metrics) SchedulerBuilt(config string) {
	if m != nil {
		m.SchedulerBuilds.WithLabelValues(config).Inc()
	}
}

// UpgradeStopped counts an upgrade wave stopped at the object of kind and name.
func (m *Metrics) UpgradeStopped(kind, name string) {
	if m != nil {
		m.UpgradeStops.WithLabelValues(kind, name).Inc()
	}
}

// RolledBack counts a rollback of the scheduler of the object of kind and name.
func (m *Metrics) RolledBack(kind, name string) {
	if m != nil {
		m.Rollbacks.WithLabelValues(kind, name).Inc()
	}
}

// Stranded sets the stranded pods per scheduler name, dropping the names not in counts.
func (m *Metrics) Stranded(counts map[string]int32) {
	if m == nil {
		return
	}
	m.StrandedPods.Reset()
	for name, n := range counts {
		m.StrandedPods.WithLabelValues(name).Set(float64(n))
	}
}

// Advice sets a profile's findings per advice code, dropping the codes not in counts.
func (m *Metrics) Advice(profile string, counts map[string]int) {
	if m == nil {
		return
	}
	m.ProfileAdvice.DeletePartialMatch(prometheus.Labels{"profile": profile})
	for code, n := range counts {
		m.ProfileAdvice.WithLabelValues(profile, code).Set(float64(n))
	}
}

// Forget removes the series of a deleted profile.
func (m *Metrics) Forget(profile string) {
	if m == nil {
		return
	}
	m.ProfileConditions.DeletePartialMatch(prometheus.Labels{"profile": profile})
	m.ConfigValidationsFailed.DeletePartialMatch(prometheus.Labels{"profile": profile})
	m.Rollbacks.DeletePartialMatch(prometheus.Labels{"kind": "SchedulerProfile", "name": profile})
	m.RolloutsStarted.DeletePartialMatch(prometheus.Labels{"profile": profile})
	m.ProfileAdvice.DeletePartialMatch(prometheus.Labels{"profile": profile})
}
