package main

import (
	"context"
	"fmt"
	"time"

	"github.com/schedops/scheduler-profile-operator/hack/bench/internal/stats"
)

const (
	// assignProfile is the SchedulerProfile whose scheduler name the labelled namespace asks for.
	assignProfile = "assign"
	// assignLabelled and assignUnlabelled are the namespaces the assign benchmark creates pods
	// in: labelled with the profile's scheduler name, and not labelled.
	assignLabelled   = "assign-labelled"
	assignUnlabelled = "assign-unlabelled"
	// assignFloor is a namespace whose pods a MutatingAdmissionPolicy of the benchmark's own
	// annotates with a constant, and nothing else: what any mutating policy costs a pod.
	assignFloor = "assign-floor"
)

// Goals of issue #45 for a labelled namespace's pod creates against an unlabelled one's.
const (
	// goalAssignRatio is the least rate of creates of the labelled namespace over the unlabelled one's.
	goalAssignRatio = 0.97
	// goalAssignAddedP99 is the most, in ms, that the labelled namespace's p99 create may exceed
	// the unlabelled one's.
	goalAssignAddedP99 = 2.0
)

// assignNamespaces are the namespaces whose blocks of creates the assign benchmark compares, in
// the order of its blocks' Latin square; its paced creates are of the first two.
var assignNamespaces = []string{assignLabelled, assignUnlabelled, assignFloor}

// assignPhases name the phases of a round, in order: the policy is measured with the operator's
// process running, then again once it has stopped, since the apiserver applies it alone.
var assignPhases = []string{"operator running", "operator stopped"}

// assignResult is what one child of the assign benchmark measured.
type assignResult struct {
	// Load is the machine's load average over the minute before the round.
	Load float64
	// Rate is the pace of the creates of Pods pods in each namespace and phase, in all: every other
	// create is in the labelled namespace.
	Rate float64
	Pods int
	// Clients created Batch pods at once, per block, in each namespace in turn.
	Clients, Batch int
	// Phases are the figures of each of assignPhases.
	Phases []assignPhase
}

// assignPhase is what one phase of a round measured.
type assignPhase struct {
	// Creates are the durations of each namespace's paced creates, as their client waited for
	// them; Held is the pace each namespace held, its pods over the time from its first create to
	// its last one's answer.
	Creates map[string][]time.Duration
	Held    map[string]float64
	// Blocks are the durations of each namespace's blocks of creates, and CPU the CPU time spent
	// in them.
	Blocks map[string][]time.Duration
	CPU    map[string]blockCPU
}

// blockCPU is the user+system CPU time of the processes of a round in some of its blocks.
type blockCPU struct {
	// ControlPlane is the apiserver's and etcd's; Operator the operator's process's (none once it
	// stopped); Clients the benchmark's process's (the clients).
	ControlPlane, Operator, Clients time.Duration
}

// add adds the CPU of b.
func (c *blockCPU) add(b blockCPU) {
	c.ControlPlane += b.ControlPlane
	c.Operator += b.Operator
	c.Clients += b.Clients
}

// rate is the pods created per second in ns over all the blocks of phase.
func (r assignResult) rate(phase int, ns string) float64 {
	var total time.Duration
	for _, d := range r.Phases[phase].Blocks[ns] {
		total += d
	}
	return float64(r.Batch*len(r.Phases[phase].Blocks[ns])) / total.Seconds()
}

// cpuPerPod is the CPU per pod created in the blocks of ns in phase, in ms: of all the round's
// processes, and of the operator's alone.
func (r assignResult) cpuPerPod(phase int, ns string) (all, operator float64) {
	n := float64(r.Batch * len(r.Phases[phase].Blocks[ns]))
	c := r.Phases[phase].CPU[ns]
	return ms(c.ControlPlane+c.Operator+c.Clients) / n, ms(c.Operator) / n
}

// benchAssign runs the assign benchmark: per round, one child process with an apiserver and an
// operator of its own.
func benchAssign(ctx context.Context, o options) ([]stats.Row, error) {
	if o.assignPods < 2 || o.assignRate <= 0 || o.assignClients < 1 || o.assignBatch < 1 || o.assignBlocks < 1 {
		return nil, fmt.Errorf("--assign-rate, --assign-clients, --assign-batch and --assign-blocks must be positive, --assign-pods at least 2")
	}
	var results []assignResult
	for round := range o.rounds {
		load, err := loadAverage()
		if err != nil {
			return nil, err
		}
		var r assignResult
		flags := func(out string) []string { return []string{"--assign-child", "--child-out=" + out} }
		if err := runChild(ctx, o, "assign.json", flags, &r); err != nil {
			return nil, fmt.Errorf("round %d: %w", round+1, err)
		}
		if len(r.Phases) != len(assignPhases) {
			return nil, fmt.Errorf("round %d: the child measured %d phases, want %d", round+1, len(r.Phases), len(assignPhases))
		}
		r.Load = load
		for i, phase := range assignPhases {
			p := r.Phases[i]
			fmt.Printf("Round %d/%d, %s: create p50 %.2f/%.2f ms, p99 %.2f/%.2f ms, held %.1f/%.1f creates/s (labelled/unlabelled); created/s labelled %.0f, unlabelled %.0f; load %.1f\n",
				round+1, o.rounds, phase, ms(percentileOf(p.Creates[assignLabelled], 50)), ms(percentileOf(p.Creates[assignUnlabelled], 50)),
				ms(percentileOf(p.Creates[assignLabelled], 99)), ms(percentileOf(p.Creates[assignUnlabelled], 99)), p.Held[assignLabelled], p.Held[assignUnlabelled],
				r.rate(i, assignLabelled), r.rate(i, assignUnlabelled), load)
		}
		results = append(results, r)
	}
	return assignRows(results), nil
}

// assignRows summarizes the rounds, phase by phase.
func assignRows(results []assignResult) []stats.Row {
	var rows []stats.Row
	for phase := range assignPhases {
		rows = append(rows, assignPhaseRows(results, phase)...)
	}
	return rows
}

// assignPhaseRows summarizes one phase of the rounds: the creates' p50 and p99 in each namespace
// and the labelled one's added p99, round by round, against the goal of under 2 ms; the rate of
// creates in the labelled namespace over the unlabelled one's, round by round, against the goal
// of at least 0.97; the CPU per pod that explains the rates.
func assignPhaseRows(results []assignResult, phase int) []stats.Row {
	const name = "assign"
	each := func(f func(r assignResult, p assignPhase) float64) []float64 {
		return stats.Each(results, func(r assignResult) float64 { return f(r, r.Phases[phase]) })
	}
	creates := func(ns string, pct float64) []float64 {
		return each(func(_ assignResult, p assignPhase) float64 { return ms(percentileOf(p.Creates[ns], pct)) })
	}
	p99Labelled, p99Unlabelled := creates(assignLabelled, 99), creates(assignUnlabelled, 99)
	added := make([]float64, len(results))
	for i := range added {
		added[i] = p99Labelled[i] - p99Unlabelled[i]
	}
	rates := map[string][]float64{}
	cpu := map[string][]float64{}
	for _, ns := range assignNamespaces {
		rates[ns] = each(func(r assignResult, _ assignPhase) float64 { return r.rate(phase, ns) })
		cpu[ns] = each(func(r assignResult, _ assignPhase) float64 { all, _ := r.cpuPerPod(phase, ns); return all })
	}
	held := func(ns string) []float64 {
		return each(func(_ assignResult, p assignPhase) float64 { return p.Held[ns] })
	}
	heldRatio := stats.Ratios(held(assignLabelled), held(assignUnlabelled))
	ratio := stats.Ratios(rates[assignLabelled], rates[assignUnlabelled])
	floorRatio := stats.Ratios(rates[assignFloor], rates[assignUnlabelled])
	cpuRatio := stats.Ratios(cpu[assignLabelled], cpu[assignUnlabelled])
	first := results[0]
	latencyNote := "the operator's process stopped, the same creates"
	perPod := ", in ms: labelled " + stats.Format(2, cpu[assignLabelled]) + ", unlabelled " + stats.Format(2, cpu[assignUnlabelled])
	cpuNote := "user+system of the apiserver, etcd and the clients in the namespace's blocks / pods" + perPod
	if phase == 0 {
		latencyNote = "each create as its client waited for it (apiserver, etcd and, in the labelled namespace, the MutatingAdmissionPolicy), each when its time comes; " +
			"every other create in the labelled namespace, the other in the unlabelled one, so that both meet the same moments of the machine, after the blocks of the rate's rows; the operator in a process of its own, envtest; " +
			"load average (1 min) before: " + stats.Format(1, stats.Each(results, func(r assignResult) float64 { return r.Load }))
		cpuNote = "user+system of the apiserver, etcd, the operator's process and the clients in the namespace's blocks / pods" + perPod + "; the operator's process per labelled pod: " +
			stats.Format(3, each(func(r assignResult, _ assignPhase) float64 { _, op := r.cpuPerPod(phase, assignLabelled); return op }))
	}
	prefix := assignPhases[phase] + ": "
	return []stats.Row{
		{Benchmark: name, Measure: fmt.Sprintf("%screate p50, labelled namespace, %d pods, creates at %.0f/s", prefix, first.Pods, first.Rate),
			Value: stats.Summarize(creates(assignLabelled, 50)), Unit: "ms", Decimals: 2, Note: latencyNote},
		{Benchmark: name, Measure: "  create p50, unlabelled namespace", Value: stats.Summarize(creates(assignUnlabelled, 50)), Unit: "ms", Decimals: 2},
		{Benchmark: name, Measure: "  create p99, labelled namespace", Value: stats.Summarize(p99Labelled), Unit: "ms", Decimals: 2, Note: "rounds: " + stats.Format(2, p99Labelled)},
		{Benchmark: name, Measure: "  create p99, unlabelled namespace", Value: stats.Summarize(p99Unlabelled), Unit: "ms", Decimals: 2, Note: "rounds: " + stats.Format(2, p99Unlabelled)},
		{Benchmark: name, Measure: "  create p99, labelled − unlabelled", Value: stats.Summarize(added), Unit: "ms", Decimals: 2,
			Note: fmt.Sprintf("goal < %.0f ms: %s; rounds: %s", goalAssignAddedP99, stats.Verdict(stats.Summarize(added).Median < goalAssignAddedP99), stats.Format(2, added))},
		{Benchmark: name, Measure: fmt.Sprintf("  pods created/s, creates at %.0f/s, labelled / unlabelled", first.Rate), Value: stats.Summarize(heldRatio), Decimals: 2,
			Note: stats.Goal(stats.Summarize(heldRatio).Median, goalAssignRatio) + "; the pace each namespace held, its pods over the time from its first create to its last answer; " +
				"labelled " + stats.Format(1, held(assignLabelled)) + ", unlabelled " + stats.Format(1, held(assignUnlabelled))},
		{Benchmark: name, Measure: fmt.Sprintf("%spods created/s, labelled namespace, %d clients", prefix, first.Clients), Value: stats.Summarize(rates[assignLabelled]), Unit: "pods/s", Decimals: 0,
			Note: fmt.Sprintf("%d blocks of %d pods per namespace, the namespaces in turn; every pod checked for its scheduler name and annotation", len(first.Phases[phase].Blocks[assignLabelled]), first.Batch)},
		{Benchmark: name, Measure: fmt.Sprintf("  pods created/s, unlabelled namespace, %d clients", first.Clients), Value: stats.Summarize(rates[assignUnlabelled]), Unit: "pods/s", Decimals: 0},
		{Benchmark: name, Measure: "  labelled / unlabelled", Value: stats.Summarize(ratio), Decimals: 2,
			Note: "as many creates as the clients can (the apiserver's capacity): " + stats.Goal(stats.Summarize(ratio).Median, goalAssignRatio) + "; the floor row is what any mutating policy costs; rounds: " + stats.Format(2, ratio)},
		{Benchmark: name, Measure: "  CPU per pod, labelled / unlabelled", Value: stats.Summarize(cpuRatio), Decimals: 2,
			Note: cpuNote},
		{Benchmark: name, Measure: "  floor policy / unlabelled", Value: stats.Summarize(floorRatio), Decimals: 2,
			Note: "pods created/s in a namespace whose pods a MutatingAdmissionPolicy only annotates with a constant (no params, variables or match conditions), in the same turns: what any mutating policy costs; rounds: " + stats.Format(2, floorRatio)},
	}
}
