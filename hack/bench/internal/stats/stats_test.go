package stats

import (
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSummarize(t *testing.T) {
	tests := []struct {
		name    string
		samples []float64
		want    Summary
	}{
		{"one sample", []float64{7}, Summary{Median: 7, Min: 7, Max: 7, N: 1}},
		{"odd count, unsorted", []float64{250, 238, 270}, Summary{Median: 250, Min: 238, Max: 270, N: 3}},
		{"even count: mean of the middle two", []float64{4, 1, 3, 2}, Summary{Median: 2.5, Min: 1, Max: 4, N: 4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := append([]float64(nil), tt.samples...)
			if diff := cmp.Diff(tt.want, Summarize(tt.samples)); diff != "" {
				t.Errorf("Summarize(%v) (-want +got):\n%s", tt.samples, diff)
			}
			if diff := cmp.Diff(in, tt.samples); diff != "" {
				t.Errorf("Summarize reordered its input (-before +after):\n%s", diff)
			}
		})
	}
	if s := Summarize(nil); !math.IsNaN(s.Median) || s.N != 0 {
		t.Errorf("Summarize(nil) = %+v, want NaN with N 0", s)
	}
}

func TestRatiosAreRoundByRound(t *testing.T) {
	ours := []float64{200, 240, 300}
	upstream := []float64{250, 240, 200}
	got := Ratios(ours, upstream)
	want := []float64{0.8, 1, 1.5}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Ratios (-want +got):\n%s", diff)
	}
	// The median ratio of rounds is not the ratio of the medians (240/240 = 1 here).
	if m := Summarize(got).Median; m != 1 {
		t.Errorf("median ratio %v, want 1", m)
	}
	if got := Ratios([]float64{1, 2, 3}, []float64{1, 2}); len(got) != 2 {
		t.Errorf("Ratios of 3 and 2 samples gave %d ratios, want 2", len(got))
	}
}

func TestPercentile(t *testing.T) {
	var samples []float64
	for i := 100; i >= 1; i-- {
		samples = append(samples, float64(i))
	}
	for _, tt := range []struct{ p, want float64 }{{50, 50}, {99, 99}, {100, 100}, {0.5, 1}} {
		if got := Percentile(samples, tt.p); got != tt.want {
			t.Errorf("Percentile(1..100, %v) = %v, want %v", tt.p, got, tt.want)
		}
	}
	if got := Percentile([]float64{3, 1, 2}, 50); got != 2 {
		t.Errorf("Percentile([3 1 2], 50) = %v, want 2", got)
	}
}

func TestGoal(t *testing.T) {
	if got := Goal(0.97, 0.97); got != "goal ≥ 0.97: met" {
		t.Errorf("Goal(0.97, 0.97) = %q", got)
	}
	if got := Goal(0.96, 0.97); !strings.HasSuffix(got, "NOT met") {
		t.Errorf("Goal(0.96, 0.97) = %q, want NOT met", got)
	}
	if got := Goal(math.NaN(), 0.97); !strings.HasSuffix(got, "NOT met") {
		t.Errorf("Goal(NaN, 0.97) = %q, want NOT met", got)
	}
}

func TestTable(t *testing.T) {
	var tab Table
	tab.Add(
		Row{Benchmark: "throughput", Measure: "upstream", Value: Summarize([]float64{250, 238, 270}), Unit: "pods/s"},
		Row{Benchmark: "throughput", Measure: "  ours / upstream", Value: Summarize([]float64{0.98, 1.01, 0.99}), Decimals: 2, Note: "goal ≥ 0.97: met"},
		Row{Benchmark: "operator", Measure: "settle", Value: Summarize([]float64{12.34}), Unit: "s", Decimals: 1},
	)
	want := strings.Join([]string{
		"benchmark   measure            median      min–max (n)    note",
		"throughput  upstream           250 pods/s  238–270 (3)",
		"              ours / upstream  0.99        0.98–1.01 (3)  goal ≥ 0.97: met",
		"",
		"operator    settle             12.3 s      (1)",
		"",
	}, "\n")
	if diff := cmp.Diff(want, tab.String()); diff != "" {
		t.Errorf("Table (-want +got):\n%s", diff)
	}
}
