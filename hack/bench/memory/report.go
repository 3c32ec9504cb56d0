package main

import (
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"
)

// goalRatio is the most that serving all profiles in one process may cost, as a multiple of
// serving one.
const goalRatio = 1.2

// stats are the median, minimum and maximum of a figure over the rounds.
type stats struct{ median, min, max float64 }

// statsOf computes the stats of one figure of the samples.
func statsOf(samples []sample, figure func(sample) int64) stats {
	v := make([]float64, 0, len(samples))
	for _, s := range samples {
		v = append(v, float64(figure(s)))
	}
	slices.Sort(v)
	n := len(v)
	median := v[n/2]
	if n%2 == 0 {
		median = (v[n/2-1] + v[n/2]) / 2
	}
	return stats{median: median, min: v[0], max: v[n-1]}
}

// String shows the stats in MiB.
func (s stats) String() string {
	return fmt.Sprintf("%.1f (%.1f–%.1f)", mib(s.median), mib(s.min), mib(s.max))
}

func rss(s sample) int64 { return s.rss }
func hwm(s sample) int64 { return s.hwm }

// mib converts bytes to MiB.
func mib[T int64 | float64](bytes T) float64 { return float64(bytes) / (1 << 20) }

// report formats the results: for each configuration the median and range over the rounds of
// its memory summed over its processes, then the ratios of the medians to the first
// configuration (one process with one profile) and whether the shared scheduler meets the goal.
func report(o options, configs []configuration, results map[string][]sample) string {
	var buf strings.Builder
	fmt.Fprintf(&buf, "kube-scheduler memory: %d nodes, %d bound pods, %d rounds, %s settle after the probe pods were bound\n",
		o.nodes, o.pods, o.rounds, o.settle)
	fmt.Fprintf(&buf, "MiB, summed over the processes of a configuration: median (min–max) over the rounds\n\n")
	tw := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "configuration\tprocesses\tVmRSS\tVmRSS per process\tVmHWM")
	for _, c := range configs {
		r, h := statsOf(results[c.name], rss), statsOf(results[c.name], hwm)
		fmt.Fprintf(tw, "%s\t%d\t%s\t%.1f\t%s\n", c.name, len(c.processes), r, mib(r.median)/float64(len(c.processes)), h)
	}
	_ = tw.Flush()

	base := results[configs[0].name]
	ratio := func(c configuration, figure func(sample) int64) float64 {
		return statsOf(results[c.name], figure).median / statsOf(base, figure).median
	}
	fmt.Fprintln(&buf)
	for _, c := range configs[1:] {
		fmt.Fprintf(&buf, "%s / %s: VmRSS %.2f, VmHWM %.2f\n", c.name, configs[0].name, ratio(c, rss), ratio(c, hwm))
	}
	verdict := "met"
	if r := ratio(configs[1], rss); r > goalRatio {
		verdict = "NOT met"
	}
	fmt.Fprintf(&buf, "Goal: %s cost at most %.1f times %s (VmRSS medians): %s\n", configs[1].name, goalRatio, configs[0].name, verdict)
	return buf.String()
}
