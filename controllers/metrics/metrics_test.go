package metrics

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestRegisterTwice: a second Metrics registered with the same registry (a second manager in one
// process) records into the collectors of the first, which the registry exports.
func TestRegisterTwice(t *testing.T) {
	r := prometheus.NewRegistry()
	first, second := New(), New()
	if err := first.Register(r); err != nil {
		t.Fatal(err)
	}
	if err := second.Register(r); err != nil {
		t.Fatalf("registering a second Metrics: %v", err)
	}
	second.RolledBack("Scheduler", "batch")
	if got := testutil.ToFloat64(first.Rollbacks.WithLabelValues("Scheduler", "batch")); got != 1 {
		t.Errorf("rollbacks seen through the first Metrics: %v, want 1", got)
	}
	if n, err := testutil.GatherAndCount(r, "schedops_rollbacks_total"); err != nil || n != 1 {
		t.Errorf("gathered %d series of schedops_rollbacks_total (%v), want 1", n, err)
	}
}

// TestForget drops every series of a deleted profile, and only its own.
func TestForget(t *testing.T) {
	m := New()
	m.RolloutsStarted.WithLabelValues("gone").Inc()
	m.RolloutsStarted.WithLabelValues("kept").Inc()
	m.RolledBack("SchedulerProfile", "gone")
	m.RolledBack("Scheduler", "gone")
	m.Advice("gone", map[string]int{"SPA101": 2})
	m.Forget("gone")
	if n := testutil.CollectAndCount(m.RolloutsStarted); n != 1 {
		t.Errorf("%d rollouts-started series left, want the kept profile's", n)
	}
	if n := testutil.CollectAndCount(m.Rollbacks); n != 1 {
		t.Errorf("%d rollback series left, want the Scheduler's of the same name", n)
	}
	if n := testutil.CollectAndCount(m.ProfileAdvice); n != 0 {
		t.Errorf("%d advice series left, want none", n)
	}
}
