package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/schedops/scheduler-profile-operator/hack/bench/internal/stats"
	"github.com/schedops/scheduler-profile-operator/scheduler/profile"
)

// benchValidate times profile.Validate (decode, validation, plugin construction and
// scheduler.New), the cost the operator pays on every spec change, over the golden profiles:
// each round calls it o.validateCalls times per profile, the profiles taken in turn, and the
// rows are the p50 and p99 of one round's calls, summarized over the rounds.
func benchValidate(ctx context.Context, o options) ([]stats.Row, error) {
	paths, err := filepath.Glob(filepath.Join(o.golden, "*.golden"))
	if err != nil {
		return nil, err
	}
	if len(paths) == 0 {
		return nil, fmt.Errorf("no golden profiles (*.golden) in %s", o.golden)
	}
	var configs [][]byte
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		if errs := profile.Validate(data); len(errs) > 0 {
			return nil, fmt.Errorf("%s: %w", p, errs.ToAggregate())
		}
		configs = append(configs, data)
	}
	var p50, p99 []float64
	for round := range o.rounds {
		latencies := make([]float64, 0, o.validateCalls*len(configs))
		for range o.validateCalls {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			for _, data := range configs {
				start := time.Now()
				_ = profile.Validate(data)
				latencies = append(latencies, float64(time.Since(start).Microseconds())/1000)
			}
		}
		p50 = append(p50, stats.Percentile(latencies, 50))
		p99 = append(p99, stats.Percentile(latencies, 99))
		fmt.Printf("Round %d/%d  %d calls: p50 %.2f ms, p99 %.2f ms, max %.2f ms\n",
			round+1, o.rounds, len(latencies), p50[round], p99[round], slices.Max(latencies))
	}
	const name = "validate"
	note := fmt.Sprintf("%d golden profiles × %d calls per round", len(configs), o.validateCalls)
	return []stats.Row{
		{Benchmark: name, Measure: "Validate p50", Value: stats.Summarize(p50), Unit: "ms", Decimals: 2, Note: note},
		{Benchmark: name, Measure: "Validate p99", Value: stats.Summarize(p99), Unit: "ms", Decimals: 2},
	}, nil
}
