package testutil

import (
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
					total += m.GetCounter().GetValue()
				}
			}
		}
	}
	return total, nil
}
