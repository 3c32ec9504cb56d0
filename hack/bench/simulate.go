package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime"

	"github.com/schedops/scheduler-profile-operator/hack/bench/internal/cluster"
	"github.com/schedops/scheduler-profile-operator/hack/bench/internal/stats"
	"github.com/schedops/scheduler-profile-operator/internal/localcluster"
	"github.com/schedops/scheduler-profile-operator/internal/simulate"
	"github.com/schedops/scheduler-profile-operator/scheduler/profile"
)

// Goals of the simulate benchmark.
const (
	// goalSimulateCPU is the most CPU per pod a simulation may take, as a ratio to what the
	// scheduler itself takes per pod in throughput.
	goalSimulateCPU = 1.5
	// goalSimulateSeconds is the most a simulation of o.pods pods on o.nodes nodes may take.
	goalSimulateSeconds = 15
)

// throughputCPU is the CPU per pod of "ours, NodePool + NodeLabelPreference" in each round of
// throughput, when it ran before simulate in the same run.
var throughputCPU []float64

// benchSimulate measures `manager simulate`'s engine: o.pods pods of throughput's kind scheduled
// in this process on o.nodes nodes with throughput's plugins profile, one at a time; seconds per
// run, and CPU per pod of this whole process (building the scheduler, its informers, the
// scheduling and the fake clientset), as a ratio to the scheduler's CPU per pod in throughput.
func benchSimulate(ctx context.Context, o options) ([]stats.Row, error) {
	cfg, err := profile.Render(pluginsProfile(), profile.Settings{Namespace: leaseNamespace})
	if err != nil {
		return nil, err
	}
	p := simulate.Profile{Name: "bench-plugins", Config: cfg.YAML}
	c := &simulate.Cluster{}
	for i := range o.nodes {
		c.Objects = append(c.Objects, runtime.Object(cluster.Node(i)))
	}
	w := &simulate.Workload{}
	for i := range o.pods {
		w.Pods = append(w.Pods, cluster.Pod(fmt.Sprintf("sim-%d", i), fmt.Sprintf("app-%d", i%100)))
	}
	var seconds, cpu, load []float64
	for round := range o.rounds {
		l, err := loadAverage()
		if err != nil {
			return nil, err
		}
		load = append(load, l)
		before, err := localcluster.CPUTime(os.Getpid())
		if err != nil {
			return nil, err
		}
		start := time.Now()
		results, err := simulate.Run(ctx, p, c, w, simulate.Options{})
		if err != nil {
			return nil, err
		}
		took := time.Since(start)
		after, err := localcluster.CPUTime(os.Getpid())
		if err != nil {
			return nil, err
		}
		if bound := boundCount(results); bound != len(w.Pods) {
			return nil, fmt.Errorf("%d of %d pods bound", bound, len(w.Pods))
		}
		seconds = append(seconds, took.Seconds())
		cpu = append(cpu, float64((after-before).Microseconds())/1000/float64(o.pods))
		fmt.Printf("Round %d/%d  simulate %d pods on %d nodes  %6.1f s  %5.2f ms CPU per pod  (load average %.1f)\n", round+1, o.rounds, o.pods, o.nodes, took.Seconds(), cpu[round], l)
	}
	return simulateRows(o, seconds, cpu, load, throughputCPU), nil
}

// simulateRows are the seconds and CPU per pod of the simulations, and the CPU as a ratio to
// the scheduler's in throughput, round by round, when throughput ran as many rounds. The
// seconds come with the machine's load average at the start of each round: the simulation
// schedules on one core, so its time is its share of that core.
func simulateRows(o options, seconds, cpu, load, schedulerCPU []float64) []stats.Row {
	const name = "simulate"
	secs := stats.Row{Benchmark: name, Measure: "seconds per run", Value: stats.Summarize(seconds), Unit: "s", Decimals: 1}
	secs.Note = atMost(secs.Value.Median, goalSimulateSeconds) + "; rounds: " + stats.Format(1, seconds) +
		"; load average (1 min) at their start: " + stats.Format(1, load) + fmt.Sprintf("; %d pods on %d nodes, one at a time, in process", o.pods, o.nodes)
	rows := []stats.Row{
		secs,
		{Benchmark: name, Measure: "CPU per pod", Value: stats.Summarize(cpu), Unit: "ms", Decimals: 2, Note: "user+system CPU of this process over the run / pods"},
	}
	if len(schedulerCPU) != len(cpu) {
		return append(rows, stats.Row{Benchmark: name, Measure: "  / scheduler's CPU per pod", Value: stats.Summarize(nil), Note: "run throughput before simulate, with as many rounds"})
	}
	r := stats.Ratios(cpu, schedulerCPU)
	row := stats.Row{Benchmark: name, Measure: "  / scheduler's CPU per pod", Value: stats.Summarize(r), Decimals: 2}
	row.Note = atMost(row.Value.Median, goalSimulateCPU) + "; ratio to throughput's ours plugins; rounds: " + stats.Format(2, r)
	return append(rows, row)
}

// loadAverage is the machine's load average over the last minute.
func loadAverage() (float64, error) {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0, err
	}
	fields := strings.Fields(string(data))
	if len(fields) == 0 {
		return 0, fmt.Errorf("/proc/loadavg is empty")
	}
	return strconv.ParseFloat(fields[0], 64)
}

func boundCount(results []simulate.PodResult) int {
	n := 0
	for _, r := range results {
		if r.Node != "" {
			n++
		}
	}
	return n
}

// atMost is the note of a goal that a median must not exceed.
func atMost(median, goal float64) string {
	return fmt.Sprintf("goal ≤ %.2f: %s", goal, stats.Verdict(median <= goal))
}
