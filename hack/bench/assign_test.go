package main

import (
	"math"
	"strings"
	"testing"
	"time"
)

// TestAssignRowsGoals: each phase's latency goal is judged on the median over rounds of each
// round's p99 of the labelled namespace less the unlabelled one's, and its rate goal on the median
// of the ratios of the labelled namespace's rate to the unlabelled one's, taken round by round.
func TestAssignRowsGoals(t *testing.T) {
	// creates are 100 creates, 98 of 1 ms and 2 of slow, so that their p99 is slow.
	creates := func(slow time.Duration) []time.Duration {
		d := make([]time.Duration, 100)
		for i := range d {
			d[i] = time.Millisecond
		}
		d[98], d[99] = slow, slow
		return d
	}
	// phase has the labelled namespace's p99 at labelledP99 and the unlabelled one's at 4 ms, its
	// pace held at 200/s less slower; its blocks of 500 pods take 1 s in the unlabelled namespace
	// and labelled in the labelled one.
	phase := func(labelledP99, labelled time.Duration, slower float64) assignPhase {
		blocks := func(d time.Duration) []time.Duration { return []time.Duration{d, d} }
		return assignPhase{Held: map[string]float64{assignLabelled: 200 - slower, assignUnlabelled: 200},
			Creates: map[string][]time.Duration{assignLabelled: creates(labelledP99), assignUnlabelled: creates(4 * time.Millisecond)},
			Blocks:  map[string][]time.Duration{assignLabelled: blocks(labelled), assignUnlabelled: blocks(time.Second), assignFloor: blocks(1250 * time.Millisecond)},
			CPU:     map[string]blockCPU{assignLabelled: {ControlPlane: 3 * time.Second}, assignUnlabelled: {ControlPlane: 2 * time.Second}, assignFloor: {ControlPlane: 2 * time.Second}}}
	}
	// round has its phase with the operator running as given and the other one within both goals.
	round := func(labelledP99, labelled time.Duration, slower float64) assignResult {
		return assignResult{Rate: 200, Pods: 100, Clients: 16, Batch: 500,
			Phases: []assignPhase{phase(labelledP99, labelled, slower), phase(5*time.Millisecond, time.Second, 0)}}
	}
	cases := []struct {
		name          string
		results       []assignResult
		wantAdded     float64
		wantAddedGoal string
		wantHeld      float64
		wantHeldGoal  string
		wantRatio     float64
		wantRatioGoal string
	}{
		{
			name:      "both met",
			results:   []assignResult{round(4*time.Millisecond, time.Second, 0), round(5*time.Millisecond, 1030*time.Millisecond, 2), round(30*time.Millisecond, 2*time.Second, 50)},
			wantAdded: 1, wantAddedGoal: "goal < 2 ms: met", wantHeld: 0.99, wantHeldGoal: "goal ≥ 0.97: met",
			wantRatio: 1000.0 / 1030, wantRatioGoal: "goal ≥ 0.97: met",
		},
		{
			name:      "neither met: the median round misses both",
			results:   []assignResult{round(4*time.Millisecond, time.Second, 0), round(6*time.Millisecond, 1250*time.Millisecond, 10), round(30*time.Millisecond, 2*time.Second, 50)},
			wantAdded: 2, wantAddedGoal: "goal < 2 ms: NOT met", wantHeld: 0.95, wantHeldGoal: "goal ≥ 0.97: NOT met",
			wantRatio: 0.8, wantRatioGoal: "goal ≥ 0.97: NOT met",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rows := assignRows(tc.results)
			running, stopped := assignPhaseRows(tc.results, 0), assignPhaseRows(tc.results, 1)
			if len(rows) != len(running)+len(stopped) {
				t.Fatalf("%d rows, want those of both phases, %d", len(rows), len(running)+len(stopped))
			}
			if added := row(t, running, "  create p99, labelled − unlabelled"); added.Value.Median != tc.wantAdded || !strings.HasPrefix(added.Note, tc.wantAddedGoal+";") {
				t.Errorf("added p99 %v ms, note %q; want %v ms and %q", added.Value.Median, added.Note, tc.wantAdded, tc.wantAddedGoal)
			}
			if held := row(t, running, "  pods created/s, creates at 200/s, labelled / unlabelled"); math.Abs(held.Value.Median-tc.wantHeld) > 1e-9 || !strings.HasPrefix(held.Note, tc.wantHeldGoal+";") {
				t.Errorf("held pace ratio %v, note %q; want %v and %q", held.Value.Median, held.Note, tc.wantHeld, tc.wantHeldGoal)
			}
			if ratio := row(t, running, "  labelled / unlabelled"); math.Abs(ratio.Value.Median-tc.wantRatio) > 1e-9 || !strings.Contains(ratio.Note, tc.wantRatioGoal+";") {
				t.Errorf("ratio %v, note %q; want %v and %q", ratio.Value.Median, ratio.Note, tc.wantRatio, tc.wantRatioGoal)
			}
			if added := row(t, stopped, "  create p99, labelled − unlabelled"); added.Value.Median != 1 || !strings.HasPrefix(added.Note, "goal < 2 ms: met;") {
				t.Errorf("operator stopped: added p99 %v ms, note %q; want 1 ms, met", added.Value.Median, added.Note)
			}
			if first := row(t, stopped, "operator stopped: create p50, labelled namespace"); first.Value.Median != 1 || !strings.Contains(first.Measure, "100 pods, creates at 200/s") {
				t.Errorf("operator stopped: p50 row %q %v ms, want 1 ms of 100 pods at 200/s", first.Measure, first.Value.Median)
			}
			if floor := row(t, running, "  floor policy / unlabelled"); floor.Value.Median != 0.8 {
				t.Errorf("floor policy / unlabelled %v, want 0.8 (blocks of 1.25 s against 1 s)", floor.Value.Median)
			}
			if cpu := row(t, running, "  CPU per pod, labelled / unlabelled"); cpu.Value.Median != 1.5 {
				t.Errorf("CPU per pod, labelled / unlabelled %v, want 1.5 (3 ms against 2 ms a pod)", cpu.Value.Median)
			}
		})
	}
}
