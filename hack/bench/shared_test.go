package main

import (
	"strings"
	"testing"
	"time"
)

// TestSharedRowsGoals: the goals are judged on the largest size only, and the growth of a
// member's change from the smallest size to the largest is held against linear growth.
func TestSharedRowsGoals(t *testing.T) {
	round := func(n int, changeCPU time.Duration) sharedResult {
		return sharedResult{Members: n, Served: time.Second, CreateCPU: time.Second, Change: 500 * time.Millisecond, ChangeCPU: changeCPU,
			Reviews: []time.Duration{10 * time.Millisecond, 20 * time.Millisecond}}
	}
	rows := sharedRows([]int{50, 150}, map[int][]sharedResult{
		50:  {round(50, 100*time.Millisecond), round(50, 100*time.Millisecond)},
		150: {round(150, 400*time.Millisecond), round(150, 400*time.Millisecond)},
	})
	notes := map[string]string{}
	for _, r := range rows {
		notes[r.Measure] = notes[r.Measure] + "|" + r.Note
	}
	if got := notes["  one member's change: operator CPU"]; !strings.Contains(got, "|reconciles") || !strings.Contains(got, "goal < 0.5 s: met") {
		t.Errorf("CPU notes %q, want no goal at 50 and the goal met at 150", got)
	}
	last := rows[len(rows)-1]
	if last.Value.Median != 4 || !strings.HasPrefix(last.Note, "goal ≤ 3.0 (linear): NOT met") {
		t.Errorf("growth row %+v, want 4 (0.4 s / 0.1 s) and the linear goal not met", last)
	}
}
