package core

import (
	"testing"

	promtestutil "github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/schedops/scheduler-profile-operator/controllers/metrics"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
	"github.com/schedops/scheduler-profile-operator/scheduler/profile"
)

func TestRecordMetrics(t *testing.T) {
	m := metrics.New()
	p := testutil.MakeProfile("metrics").Obj()
	invalid := &observation{schedulerName: "metrics", invalid: "bad"}
	before := p.DeepCopy()
	setStatus(p, invalid)
	recordMetrics(m, before, p, invalid)
	recordMetrics(m, p.DeepCopy(), p, invalid)
	if got := promtestutil.ToFloat64(m.ConfigValidationsFailed.WithLabelValues("metrics")); got != 2 {
		t.Errorf("validations failed = %v, want 2", got)
	}
	if got := promtestutil.ToFloat64(m.ProfileConditions.WithLabelValues("metrics", "ConfigValid", "False")); got != 1 {
		t.Errorf("ConfigValid=False gauge = %v, want 1", got)
	}

	valid := &observation{schedulerName: "metrics", process: dedicated(p), config: &profile.Config{Hash: "h"}, applied: true}
	before = p.DeepCopy()
	setStatus(p, valid)
	recordMetrics(m, before, p, valid)
	// A later pass with the same configuration starts no rollout.
	recordMetrics(m, p.DeepCopy(), p, valid)
	if got := promtestutil.ToFloat64(m.RolloutsStarted.WithLabelValues("metrics")); got != 1 {
		t.Errorf("rollouts started = %v, want 1", got)
	}
	if got := promtestutil.ToFloat64(m.ProfileConditions.WithLabelValues("metrics", "ConfigValid", "False")); got != 0 {
		t.Errorf("ConfigValid=False gauge = %v after the fix, want 0", got)
	}
	if got := promtestutil.ToFloat64(m.ProfileConditions.WithLabelValues("metrics", "ConfigValid", "True")); got != 1 {
		t.Errorf("ConfigValid=True gauge = %v, want 1", got)
	}

	m.Forget("metrics")
	if n := promtestutil.CollectAndCount(m.ProfileConditions, "schedops_schedulerprofile_condition"); n != 0 {
		t.Errorf("%d condition series left after the profile was deleted", n)
	}
}
