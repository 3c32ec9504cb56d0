package main

import (
	"strings"
	"testing"
)

// TestBenchSimulate runs the simulate benchmark small: every pod is bound, and the CPU ratio to
// the scheduler's is computed when throughput ran as many rounds, and its goal judged.
func TestBenchSimulate(t *testing.T) {
	o := options{nodes: 20, pods: 40, rounds: 1}
	rows, err := benchSimulate(t.Context(), o)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 3 || !strings.Contains(rows[2].Note, "run throughput before simulate") {
		t.Errorf("without throughput, want the ratio row to say so: %+v", rows)
	}
	rows = simulateRows(o, []float64{10}, []float64{3}, []float64{0.5}, []float64{2})
	if got := rows[2].Value.Median; got != 1.5 || !strings.Contains(rows[2].Note, "goal ≤ 1.50: met") {
		t.Errorf("ratio %v, note %q; want 1.5, met", got, rows[2].Note)
	}
	if !strings.Contains(rows[0].Note, "goal ≤ 15.00: met; rounds: 10.0; load average (1 min) at their start: 0.5") {
		t.Errorf("10 s: note %q, want the goal met, the round and its load average", rows[0].Note)
	}
	rows = simulateRows(o, []float64{20}, []float64{4}, []float64{9}, []float64{2})
	if !strings.Contains(rows[0].Note, "goal ≤ 15.00: NOT met") || !strings.Contains(rows[2].Note, "goal ≤ 1.50: NOT met") {
		t.Errorf("20 s and a ratio of 2: notes %q and %q, want both goals not met", rows[0].Note, rows[2].Note)
	}
}
