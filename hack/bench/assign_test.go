package main

import (
	"strings"
	"testing"
	"time"
)

// TestAssignRowsGoals: the webhook's goal is judged on the median over rounds of each round's
// p99, and the rate goal on the median of the ratios of the labelled namespace's rate to the
// unlabelled one's, taken round by round.
func TestAssignRowsGoals(t *testing.T) {
	// round has 100 reviews, 98 of 1 ms and 2 of slow, so that its p99 is slow; the blocks of
	// 500 pods take 1 s in the unlabelled namespace, 2 s with the floor webhook and labelled
	// ones in the labelled namespace.
	round := func(slow, labelled time.Duration) assignResult {
		reviews := make([]time.Duration, 100)
		for i := range reviews {
			reviews[i] = time.Millisecond
		}
		reviews[98], reviews[99] = slow, slow
		blocks := func(d time.Duration) []time.Duration { return []time.Duration{d, d} }
		cpu := func(ms time.Duration) blockCPU {
			return blockCPU{ControlPlane: 1000 * ms * time.Millisecond}
		}
		return assignResult{Rate: 200, Pods: 100, Paced: 199, Reviews: reviews, FloorReviews: reviews, Creates: reviews, Clients: 16, Batch: 500,
			Blocks: map[string][]time.Duration{assignLabelled: blocks(labelled), assignFloor: blocks(2 * time.Second), assignUnlabelled: blocks(time.Second)},
			CPU:    map[string]blockCPU{assignLabelled: cpu(3), assignFloor: cpu(2), assignUnlabelled: cpu(1)}}
	}
	cases := []struct {
		name            string
		results         []assignResult
		wantP99         float64
		wantP99Goal     string
		wantRatio       float64
		wantRatioGoal   string
		wantLabelledCPU float64
	}{
		{
			name:    "both met",
			results: []assignResult{round(4*time.Millisecond, time.Second), round(5*time.Millisecond, 1040*time.Millisecond), round(30*time.Millisecond, 1000*time.Millisecond)},
			wantP99: 5, wantP99Goal: "goal ≤ 5 ms: met",
			wantRatio: 1, wantRatioGoal: "goal ≥ 0.95: met",
			wantLabelledCPU: 3,
		},
		{
			name:    "neither met: the median round misses both",
			results: []assignResult{round(4*time.Millisecond, time.Second), round(6*time.Millisecond, 1250*time.Millisecond), round(30*time.Millisecond, 2*time.Second)},
			wantP99: 6, wantP99Goal: "goal ≤ 5 ms: NOT met",
			wantRatio: 0.8, wantRatioGoal: "goal ≥ 0.95: NOT met",
			wantLabelledCPU: 3,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rows := assignRows(tc.results)
			if p99 := row(t, rows, "  webhook review p99"); p99.Value.Median != tc.wantP99 || !strings.HasPrefix(p99.Note, tc.wantP99Goal+";") {
				t.Errorf("p99 row %v ms, note %q; want %v ms and %q", p99.Value.Median, p99.Note, tc.wantP99, tc.wantP99Goal)
			}
			if ratio := row(t, rows, "  labelled / unlabelled"); ratio.Value.Median != tc.wantRatio || !strings.HasPrefix(ratio.Note, tc.wantRatioGoal+";") {
				t.Errorf("ratio row %v, note %q; want %v and %q", ratio.Value.Median, ratio.Note, tc.wantRatio, tc.wantRatioGoal)
			}
			if floor := row(t, rows, "  floor webhook / unlabelled"); floor.Value.Median != 0.5 || strings.Contains(floor.Note, "goal") {
				t.Errorf("floor webhook / unlabelled %v, note %q; want 0.5 (2 s against 1 s a block) and no goal", floor.Value.Median, floor.Note)
			}
			if cpu := row(t, rows, "  labelled / floor webhook (CPU)"); cpu.Value.Median != 1.5 {
				t.Errorf("labelled / floor webhook CPU %v, want 1.5 (3 ms against 2 ms a pod)", cpu.Value.Median)
			}
			if cpu := row(t, rows, "CPU per pod, labelled namespace"); cpu.Value.Median != tc.wantLabelledCPU {
				t.Errorf("labelled CPU per pod %v ms, want %v", cpu.Value.Median, tc.wantLabelledCPU)
			}
			if p50 := row(t, rows, "webhook review p50"); p50.Value.Median != 1 || !strings.Contains(p50.Measure, "100 pods created at 200/s") {
				t.Errorf("p50 row %q %v ms, want 1 ms of 100 pods at 200/s", p50.Measure, p50.Value.Median)
			}
		})
	}
}
