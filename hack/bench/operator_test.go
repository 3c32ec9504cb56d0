package main

import (
	"strings"
	"testing"
	"time"
)

// TestOperatorRowsSummarizeRounds: each figure is the median of the rounds, and the resync goal
// holds only if no round wrote.
func TestOperatorRowsSummarizeRounds(t *testing.T) {
	round := func(settle time.Duration, writes int, sample ...string) operatorResult {
		return operatorResult{Profiles: 500, Settle: settle, Reconciles: 500, PeakRSS: 100 << 20, ResyncWrites: writes, ResyncWriteSample: sample}
	}
	rows := operatorRows([]operatorResult{round(20*time.Second, 0), round(25*time.Second, 0), round(50*time.Second, 0)})
	if got := rows[0].Value; got.Median != 25 || got.Min != 20 || got.Max != 50 || got.N != 3 {
		t.Errorf("settle = %+v, want median 25 of 20–50 over 3 rounds", got)
	}
	if got := rows[1].Value.Median; got != 20 {
		t.Errorf("reconciles per second = %v, want 20 (500 in 25 s)", got)
	}
	if note := rows[3].Note; !strings.HasPrefix(note, "goal 0: met") {
		t.Errorf("resync note %q, want the goal met", note)
	}

	rows = operatorRows([]operatorResult{round(20*time.Second, 0), round(20*time.Second, 2, "PATCH deployments/x", "PATCH services/x")})
	if note := rows[3].Note; !strings.HasPrefix(note, "goal 0: NOT met; PATCH deployments/x, PATCH services/x") {
		t.Errorf("resync note %q, want the goal not met, naming the writes", note)
	}
}
