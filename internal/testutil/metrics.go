package testutil

import (
	"testing"

	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// CounterSum sums the counter metric of controller-runtime's registry (where every manager of
// the process counts) over the series whose label has the value, such as
// controller_runtime_reconcile_total of one controller.
func CounterSum(metric, label, value string) (float64, error) {
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		return 0, err
	}
	var total float64
	for _, f := range families {
		if f.GetName() != metric {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == label && l.GetValue() == value {
					total += m.GetCounter().GetValue() + m.GetGauge().GetValue()
				}
			}
		}
	}
	return total, nil
}

// SchedulerBuilds is the operator's schedops_scheduler_builds_total of a kind of configuration
// ("member", "combined"), counted in this process.
func SchedulerBuilds(t testing.TB, config string) float64 {
	t.Helper()
	n, err := CounterSum("schedops_scheduler_builds_total", "config", config)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
