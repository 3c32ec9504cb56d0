package controllers

import (
	"testing"

	promtestutil "github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/schedops/scheduler-profile-operator/internal/testutil"
	"github.com/schedops/scheduler-profile-operator/scheduler/profile"
)

func TestRecordMetrics(t *testing.T) {
	p := testutil.MakeProfile("metrics").Obj()
	invalid := &observation{schedulerName: "metrics", invalid: "bad"}
	before := p.DeepCopy()
	setStatus(p, invalid)
	recordMetrics(before, p, invalid)
	recordMetrics(p.DeepCopy(), p, invalid)
	if got := promtestutil.ToFloat64(configValidationsFailed.WithLabelValues("metrics")); got != 2 {
		t.Errorf("validations failed = %v, want 2", got)
	}
	if got := promtestutil.ToFloat64(profileConditions.WithLabelValues("metrics", "ConfigValid", "False")); got != 1 {
		t.Errorf("ConfigValid=False gauge = %v, want 1", got)
	}

	valid := &observation{schedulerName: "metrics", process: dedicated(p), config: &profile.Config{Hash: "h"}, applied: true}
	before = p.DeepCopy()
	setStatus(p, valid)
	recordMetrics(before, p, valid)
	// A later pass with the same configuration starts no rollout.
	recordMetrics(p.DeepCopy(), p, valid)
	if got := promtestutil.ToFloat64(rolloutsStarted.WithLabelValues("metrics")); got != 1 {
		t.Errorf("rollouts started = %v, want 1", got)
	}
	if got := promtestutil.ToFloat64(profileConditions.WithLabelValues("metrics", "ConfigValid", "False")); got != 0 {
		t.Errorf("ConfigValid=False gauge = %v after the fix, want 0", got)
	}
	if got := promtestutil.ToFloat64(profileConditions.WithLabelValues("metrics", "ConfigValid", "True")); got != 1 {
		t.Errorf("ConfigValid=True gauge = %v, want 1", got)
	}

	forgetMetrics("metrics")
	if n := promtestutil.CollectAndCount(profileConditions, "schedops_schedulerprofile_condition"); n != 0 {
		t.Errorf("%d condition series left after the profile was deleted", n)
	}
}
