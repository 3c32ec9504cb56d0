package main

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/hack/bench/internal/cluster"
	"github.com/schedops/scheduler-profile-operator/hack/bench/internal/stats"
	"github.com/schedops/scheduler-profile-operator/internal/simulate"
	"github.com/schedops/scheduler-profile-operator/scheduler/profile"
)

// goalSimulateCLISeconds is the most `manager simulate` may take for 50,000 pods on 5,000 nodes.
const goalSimulateCLISeconds = 60

// simulateCLIResult is one run of `manager simulate`.
type simulateCLIResult struct {
	// Wall is the run's time from start to exit, CPU its user+system CPU time and MaxRSS its
	// peak resident memory in bytes, from its rusage.
	Wall, CPU time.Duration
	MaxRSS    int64
	// Load is the machine's load average over the minute before the run.
	Load float64
}

// simulateCLIInput are the files `manager simulate` reads: the profile and the snapshot.
type simulateCLIInput struct {
	profile, snapshot string
	// snapshotBytes is the snapshot's size.
	snapshotBytes int
}

// benchSimulateCLI measures `manager simulate` as a user runs it: the binary o.manager, in a
// process of its own, on a snapshot of o.simulateCLINodes nodes and o.simulateCLIPods pending
// pods, written as `manager snapshot` writes one, with throughput's NodePool +
// NodeLabelPreference profile; seconds from start to exit, CPU and peak resident memory per run.
func benchSimulateCLI(ctx context.Context, o options) ([]stats.Row, error) {
	rounds := o.simulateCLIRounds
	if rounds == 0 {
		rounds = o.rounds
	}
	if rounds < 1 || o.simulateCLINodes < 1 || o.simulateCLIPods < 1 {
		return nil, fmt.Errorf("--simulate-cli-rounds must not be negative, --simulate-cli-nodes and --simulate-cli-pods must be positive")
	}
	dir := filepath.Join(o.dir, "simulate-cli")
	setup := time.Now()
	in, err := writeSimulateCLIInput(dir, o.simulateCLINodes, o.simulateCLIPods)
	if err != nil {
		return nil, err
	}
	fmt.Printf("Wrote a snapshot of %d nodes and %d pods (%.0f MB) in %s\n", o.simulateCLINodes, o.simulateCLIPods, float64(in.snapshotBytes)/1e6, time.Since(setup).Round(time.Second))
	var results []simulateCLIResult
	for round := range rounds {
		r, err := runManagerSimulate(ctx, o.manager, in, filepath.Join(dir, "report.txt"), o.simulateCLIPods)
		if err != nil {
			return nil, fmt.Errorf("round %d: %w", round+1, err)
		}
		fmt.Printf("Round %d/%d  manager simulate %d pods on %d nodes  %6.1f s  CPU %6.1f s  peak %7.1f MiB  (load average %.1f)\n",
			round+1, rounds, o.simulateCLIPods, o.simulateCLINodes, r.Wall.Seconds(), r.CPU.Seconds(), cluster.MiB(r.MaxRSS), r.Load)
		results = append(results, r)
	}
	return simulateCLIRows(o, in, results), nil
}

// writeSimulateCLIInput writes into dir the profile, as a SchedulerProfile, and a snapshot of
// nodes Ready nodes and pods pending pods of the profile's scheduler name, as one v1 List in
// YAML (what `manager snapshot` writes).
func writeSimulateCLIInput(dir string, nodes, pods int) (simulateCLIInput, error) {
	in := simulateCLIInput{profile: filepath.Join(dir, "profile.yaml"), snapshot: filepath.Join(dir, "snapshot.yaml")}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return in, err
	}
	p := pluginsProfile()
	p.TypeMeta = metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "SchedulerProfile"}
	data, err := yaml.Marshal(p)
	if err != nil {
		return in, err
	}
	if err := os.WriteFile(in.profile, data, 0o644); err != nil {
		return in, err
	}
	f, err := os.Create(in.snapshot)
	if err != nil {
		return in, err
	}
	defer func() { _ = f.Close() }()
	buf := bufio.NewWriter(f)
	list := simulate.NewListWriter(buf)
	for i := range nodes {
		node := cluster.Node(i)
		node.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Node"}
		if err := list.Write(node); err != nil {
			return in, err
		}
	}
	for i := range pods {
		pod := cluster.Pod(fmt.Sprintf("sim-%05d", i), fmt.Sprintf("app-%d", i%100))
		pod.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
		pod.Spec.SchedulerName = profile.SchedulerName(p)
		if err := list.Write(pod); err != nil {
			return in, err
		}
	}
	if err := list.Close(); err != nil {
		return in, err
	}
	in.snapshotBytes = list.Bytes
	if err := buf.Flush(); err != nil {
		return in, err
	}
	return in, f.Close()
}

// summaryLine is the line of `manager simulate`'s text report that counts a profile's pods.
var summaryLine = regexp.MustCompile(`(?m)^Profile \S+: (\d+) bound, (\d+) unschedulable`)

// runManagerSimulate runs `manager simulate` on in, its report written to report, and checks
// that it bound all pods.
func runManagerSimulate(ctx context.Context, manager string, in simulateCLIInput, report string, pods int) (simulateCLIResult, error) {
	var r simulateCLIResult
	load, err := loadAverage()
	if err != nil {
		return r, err
	}
	out, err := os.Create(report)
	if err != nil {
		return r, err
	}
	defer func() { _ = out.Close() }()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, manager, "simulate", "-f", in.profile, "--cluster", in.snapshot, "--fail-on-unschedulable")
	cmd.Stdout, cmd.Stderr = out, &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return r, fmt.Errorf("%s simulate: %w: %s", manager, err, stderr.String())
	}
	r.Wall, r.Load = time.Since(start), load
	r.CPU = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.MaxRSS = ru.Maxrss << 10 // kB on Linux
	}
	data, err := os.ReadFile(report)
	if err != nil {
		return r, err
	}
	m := summaryLine.FindSubmatch(data)
	if m == nil {
		return r, fmt.Errorf("no summary in the report %s", report)
	}
	if bound, _ := strconv.Atoi(string(m[1])); bound != pods {
		return r, fmt.Errorf("%s bound %s of %d pods, %s unschedulable (report %s)", manager, m[1], pods, m[2], report)
	}
	return r, nil
}

// simulateCLIRows are the seconds, CPU and peak memory of the runs of `manager simulate`.
func simulateCLIRows(o options, in simulateCLIInput, results []simulateCLIResult) []stats.Row {
	wall := stats.Each(results, func(r simulateCLIResult) float64 { return r.Wall.Seconds() })
	cpu := stats.Each(results, func(r simulateCLIResult) float64 { return r.CPU.Seconds() })
	peak := stats.Each(results, func(r simulateCLIResult) float64 { return cluster.MiB(r.MaxRSS) })
	load := stats.Each(results, func(r simulateCLIResult) float64 { return r.Load })
	const name = "simulate-cli"
	secs := stats.Row{Benchmark: name, Measure: fmt.Sprintf("manager simulate, %d pods on %d nodes: seconds", o.simulateCLIPods, o.simulateCLINodes),
		Value: stats.Summarize(wall), Unit: "s", Decimals: 1}
	secs.Note = atMost(secs.Value.Median, goalSimulateCLISeconds) + "; from start to exit, a process of its own reading a snapshot of " +
		fmt.Sprintf("%.0f MB; rounds: %s; load average (1 min) at their start: %s", float64(in.snapshotBytes)/1e6, stats.Format(1, wall), stats.Format(1, load))
	return []stats.Row{
		secs,
		{Benchmark: name, Measure: "  CPU", Value: stats.Summarize(cpu), Unit: "s", Decimals: 1, Note: "user+system of the process; rounds: " + stats.Format(1, cpu)},
		{Benchmark: name, Measure: "  peak resident memory", Value: stats.Summarize(peak), Unit: "MiB", Decimals: 0, Note: "the process's maxrss (rusage); rounds: " + stats.Format(0, peak)},
	}
}
