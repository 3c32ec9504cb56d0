// Package stats summarizes the benchmarks' samples (median and spread over rounds, ratios to a
// reference measured in the same rounds, percentiles) and lays them out as the one table that
// `make bench` prints. Benchmark code, not part of the product.
package stats

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
)

// Summary is the median and the spread (minimum and maximum) of a figure over its samples.
type Summary struct {
	Median, Min, Max float64
	// N is the number of samples.
	N int
}

// Summarize computes the Summary of samples; the median of an even number of samples is the
// mean of the middle two. No samples give a Summary of NaNs.
func Summarize(samples []float64) Summary {
	if len(samples) == 0 {
		return Summary{Median: math.NaN(), Min: math.NaN(), Max: math.NaN()}
	}
	v := slices.Clone(samples)
	slices.Sort(v)
	n := len(v)
	median := v[n/2]
	if n%2 == 0 {
		median = (v[n/2-1] + v[n/2]) / 2
	}
	return Summary{Median: median, Min: v[0], Max: v[n-1], N: n}
}

// Each is f of each round's result, in the order of the rounds: the samples of one figure.
func Each[T any](results []T, f func(T) float64) []float64 {
	v := make([]float64, len(results))
	for i, r := range results {
		v[i] = f(r)
	}
	return v
}

// Ratios divides each sample of num by the sample of den of the same round: ratios taken round
// by round cancel a slow phase of the machine that hits both. The shorter length wins.
func Ratios(num, den []float64) []float64 {
	n := min(len(num), len(den))
	r := make([]float64, 0, n)
	for i := range n {
		r = append(r, num[i]/den[i])
	}
	return r
}

// Percentile is the nearest-rank p-th percentile (0 < p <= 100) of samples: the smallest sample
// that at least p percent of the samples do not exceed. No samples give NaN.
func Percentile(samples []float64, p float64) float64 {
	if len(samples) == 0 {
		return math.NaN()
	}
	v := slices.Clone(samples)
	slices.Sort(v)
	rank := int(math.Ceil(p / 100 * float64(len(v))))
	return v[min(max(rank, 1), len(v))-1]
}

// Row is one line of the table: a figure of a benchmark, summarized over rounds.
type Row struct {
	// Benchmark groups rows; it is printed on the first row of its group.
	Benchmark string
	// Measure says what the row measures.
	Measure string
	// Value is the figure over the rounds.
	Value Summary
	// Unit is printed after the median, for example "pods/s" or "MiB".
	Unit string
	// Decimals is the number of decimals of the figures.
	Decimals int
	// Note follows the figures: a goal and whether it is met, or the values of every round.
	Note string
}

// Table is the rows of every benchmark that ran, in order.
type Table struct {
	Rows []Row
}

// Add appends rows.
func (t *Table) Add(rows ...Row) { t.Rows = append(t.Rows, rows...) }

// String lays the table out in aligned columns: benchmark, measure, median with its unit, the
// min–max over the rounds with their number, and the note; a blank line separates benchmarks.
func (t *Table) String() string {
	var buf strings.Builder
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "benchmark\tmeasure\tmedian\tmin–max (n)\tnote")
	prev := ""
	for _, r := range t.Rows {
		group := ""
		if r.Benchmark != prev {
			if prev != "" {
				fmt.Fprintln(tw, "\t\t\t\t")
			}
			group, prev = r.Benchmark, r.Benchmark
		}
		median := r.format(r.Value.Median)
		if r.Unit != "" {
			median += " " + r.Unit
		}
		spread := ""
		if r.Value.N > 1 {
			spread = fmt.Sprintf("%s–%s (%d)", r.format(r.Value.Min), r.format(r.Value.Max), r.Value.N)
		} else if r.Value.N == 1 {
			spread = "(1)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", group, r.Measure, median, spread, r.Note)
	}
	_ = tw.Flush()
	// Empty trailing cells leave padding behind, which a README would keep.
	lines := strings.Split(buf.String(), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(lines, "\n")
}

func (r Row) format(v float64) string {
	return fmt.Sprintf("%.*f", r.Decimals, v)
}

// Format prints values with the same decimals, separated by spaces: the per-round figures of a
// note.
func Format(decimals int, values []float64) string {
	s := make([]string, len(values))
	for i, v := range values {
		s[i] = fmt.Sprintf("%.*f", decimals, v)
	}
	return strings.Join(s, " ")
}

// Goal says whether a median meets a lower bound: "goal ≥ 0.97: met".
func Goal(median, atLeast float64) string {
	return fmt.Sprintf("goal ≥ %.2f: %s", atLeast, Verdict(median >= atLeast))
}

// Verdict says whether a goal is met, as the table's notes say it.
func Verdict(met bool) string {
	if met {
		return "met"
	}
	return "NOT met"
}
