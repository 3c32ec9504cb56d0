package main

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/schedops/scheduler-profile-operator/hack/bench/internal/stats"
)

// TestOperatorRowsSummarizeRounds: each figure is the median of the rounds, the settle goal is
// set for 1000 profiles, and the resync goal holds only if no round wrote.
func TestOperatorRowsSummarizeRounds(t *testing.T) {
	round := func(profiles int, settle time.Duration, writes int, sample ...string) operatorResult {
		return operatorResult{Profiles: profiles, Settle: settle, SettleCPU: settle / 2, Reconciles: float64(profiles), PeakRSS: 100 << 20,
			ResyncWrites: writes, ResyncWriteSample: sample, SettleWrites: 11 * profiles, ControlPlaneCPU: settle}
	}
	rows := operatorRows([]operatorResult{round(500, 20*time.Second, 0), round(500, 25*time.Second, 0), round(500, 50*time.Second, 0)})
	settle := row(t, rows, "500 profiles created at once")
	if got := settle.Value; got.Median != 25 || got.Min != 20 || got.Max != 50 || got.N != 3 {
		t.Errorf("settle = %+v, want median 25 of 20–50 over 3 rounds", got)
	}
	if strings.Contains(settle.Note, "goal") {
		t.Errorf("settle note %q of 500 profiles names a goal, which is set for 1000", settle.Note)
	}
	if got := row(t, rows, "  CPU of the operator").Value.Median; got != 12.5 {
		t.Errorf("CPU = %v s, want 12.5 (the median round's)", got)
	}
	if w := row(t, rows, "  write requests of the operator"); w.Value.Median != 5500 || !strings.HasSuffix(w.Note, "per second: 275 220 110") {
		t.Errorf("writes = %v, note %q; want 5500, at 275, 220 and 110 per second", w.Value.Median, w.Note)
	}
	// The apiserver and etcd took a core all along, and the operator's process half of one.
	if cp := row(t, rows, "  CPU of the apiserver and etcd"); cp.Value.Median != 25 || !strings.Contains(cp.Note, fmt.Sprintf(": %.2f %.2f %.2f;", 1.5/float64(runtime.NumCPU()), 1.5/float64(runtime.NumCPU()), 1.5/float64(runtime.NumCPU()))) {
		t.Errorf("apiserver and etcd CPU = %v s, note %q; want 25 s, and 1.5 cores of %d busy in each round", cp.Value.Median, cp.Note, runtime.NumCPU())
	}
	if got := row(t, rows, "  reconciles per second").Value.Median; got != 20 {
		t.Errorf("reconciles per second = %v, want 20 (500 in 25 s)", got)
	}
	if note := row(t, rows, "steady-state resync").Note; !strings.HasPrefix(note, "goal 0: met") {
		t.Errorf("resync note %q, want the goal met", note)
	}

	rows = operatorRows([]operatorResult{round(500, 20*time.Second, 0), round(500, 20*time.Second, 2, "PATCH deployments/x", "PATCH services/x")})
	if note := row(t, rows, "steady-state resync").Note; !strings.HasPrefix(note, "goal 0: NOT met; PATCH deployments/x, PATCH services/x") {
		t.Errorf("resync note %q, want the goal not met, naming the writes", note)
	}

	notMet := fmt.Sprintf("goal < 20 s: NOT met (the apiserver and etcd alone took 21.0 CPU-s for the operator's writes, %.1f s on all %d cores)", 21/float64(runtime.NumCPU()), runtime.NumCPU())
	for settle, want := range map[time.Duration]string{19 * time.Second: "goal < 20 s: met", 21 * time.Second: notMet} {
		rows = operatorRows([]operatorResult{round(1000, settle, 0)})
		if note := row(t, rows, "1000 profiles created at once").Note; !strings.HasPrefix(note, want) {
			t.Errorf("settle note of 1000 profiles in %s: %q, want %q", settle, note, want)
		}
	}
}

// row is the row of rows whose measure starts with prefix.
func row(t *testing.T, rows []stats.Row, prefix string) stats.Row {
	t.Helper()
	for _, r := range rows {
		if strings.HasPrefix(r.Measure, prefix) {
			return r
		}
	}
	t.Fatalf("no row %q in %+v", prefix, rows)
	return stats.Row{}
}
