package main

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/schedops/scheduler-profile-operator/hack/bench/internal/cluster"
	"github.com/schedops/scheduler-profile-operator/hack/bench/internal/stats"
	"github.com/schedops/scheduler-profile-operator/internal/localcluster"
)

// probeApp is the app label of the probe pods, one per scheduler name and configuration.
const probeApp = "bench-probe"

// memoryGoal is the most that serving all profiles in one process may cost, as a multiple of
// serving one.
const memoryGoal = 1.2

// memorySample is the memory of one configuration in one round, summed over its processes.
type memorySample struct {
	cluster.Memory
	// ready is the time from the start of the processes until every probe pod was bound.
	ready time.Duration
}

// benchMemory measures what kube-scheduler costs in resident memory when it serves
// SchedulerProfiles in three ways, on one envtest cluster of fake Ready nodes and pods already
// bound to them:
//
//   - one process with 1 profile (a shared scheduler with one member),
//   - one process with all N profiles (a shared scheduler with N members),
//   - N processes with one profile each (dedicated schedulers).
//
// The configurations come from the operator's own renderer, and every profile proves it works by
// binding a pod before memory is read from /proc/<pid>/status (VmRSS now, VmHWM the peak).
func benchMemory(ctx context.Context, o options) ([]stats.Row, error) {
	if o.memoryProfiles < 2 {
		return nil, fmt.Errorf("need at least 2 profiles")
	}
	configs, err := configurations(o.memoryProfiles)
	if err != nil {
		return nil, err
	}
	dir := o.dir + "/memory"
	c, err := cluster.Start(o.assets, dir)
	if err != nil {
		return nil, err
	}
	defer c.Stop()
	setup := time.Now()
	if err := c.CreateNodes(ctx, o.nodes); err != nil {
		return nil, err
	}
	err = c.CreatePods(ctx, o.memoryPods, func(i int) *corev1.Pod {
		pod := cluster.Pod(fmt.Sprintf("pod-%05d", i), fmt.Sprintf("app-%d", i%100))
		pod.Spec.NodeName = cluster.NodeName(i % o.nodes)
		return pod
	})
	if err != nil {
		return nil, err
	}
	fmt.Printf("Created %d nodes and %d bound pods in %s\n", o.nodes, o.memoryPods, time.Since(setup).Round(time.Second))

	m := &memoryBench{opts: o, cluster: c, dir: dir}
	results := make([][]memorySample, len(configs))
	for round := range o.rounds {
		for _, i := range order(len(configs), round) {
			s, err := m.measure(ctx, configs[i])
			if err != nil {
				return nil, fmt.Errorf("round %d, %s: %w", round+1, configs[i].name, err)
			}
			results[i] = append(results[i], s)
			fmt.Printf("Round %d/%d  %-24s VmRSS %7.1f MiB  VmHWM %7.1f MiB  (ready in %s)\n",
				round+1, o.rounds, configs[i].name, cluster.MiB(s.RSS), cluster.MiB(s.HWM), s.ready.Round(100*time.Millisecond))
		}
	}
	return memoryRows(o, configs, results), nil
}

// memoryRows are the VmRSS of each configuration summed over its processes, and the ratios of
// each to the first (one process with one profile), round by round.
func memoryRows(o options, configs []configuration, results [][]memorySample) []stats.Row {
	const name = "memory"
	rss := make([][]float64, len(configs))
	for i := range configs {
		for _, s := range results[i] {
			rss[i] = append(rss[i], cluster.MiB(s.RSS))
		}
	}
	var rows []stats.Row
	for i, c := range configs {
		rows = append(rows, stats.Row{
			Benchmark: name, Measure: fmt.Sprintf("scheduler VmRSS, %s (%s)", c.name, processes(len(c.processes))),
			Value: stats.Summarize(rss[i]), Unit: "MiB", Decimals: 1,
		})
	}
	for i, c := range configs[1:] {
		ratios := stats.Ratios(rss[i+1], rss[0])
		row := stats.Row{
			Benchmark: name, Measure: fmt.Sprintf("  %s / %s", c.name, configs[0].name),
			Value: stats.Summarize(ratios), Decimals: 2, Note: "rounds: " + stats.Format(2, ratios),
		}
		if i == 0 {
			row.Note = fmt.Sprintf("goal ≤ %.1f: %s; %s", memoryGoal, stats.Verdict(row.Value.Median <= memoryGoal), row.Note)
		}
		rows = append(rows, row)
	}
	rows[0].Note = fmt.Sprintf("%d nodes, %d bound pods, read %s after the probe pods bound", o.nodes, o.memoryPods, o.settle)
	return rows
}

func processes(n int) string {
	if n == 1 {
		return "1 process"
	}
	return fmt.Sprintf("%d processes", n)
}

// memoryBench measures configurations on one cluster.
type memoryBench struct {
	opts    options
	cluster *cluster.Cluster
	dir     string
}

// measure starts the processes of c, waits until each of its profiles has bound a probe pod,
// lets the processes settle, reads their memory and stops them. The probe pods are deleted
// afterwards, so that every configuration starts on the same cluster.
func (m *memoryBench) measure(ctx context.Context, c configuration) (memorySample, error) {
	var s memorySample
	begin := time.Now()
	defer m.deleteProbes(ctx)
	var schedulers []cluster.Scheduler
	for _, p := range c.processes {
		schedulers = append(schedulers, cluster.Scheduler{Name: p.name, Binary: m.opts.scheduler, Config: p.config})
	}
	procs, err := m.cluster.StartSchedulers(m.dir, schedulers...)
	defer cluster.StopAll(procs)
	if err != nil {
		return s, err
	}
	if err := m.probe(ctx, c, procs); err != nil {
		return s, err
	}
	s.ready = time.Since(begin)
	select {
	case <-ctx.Done():
		return s, ctx.Err()
	case <-time.After(m.opts.settle):
	}
	for _, p := range procs {
		mem, err := cluster.ReadMemory(strconv.Itoa(p.PID))
		if err != nil {
			return s, fmt.Errorf("%s: %w; see %s", p.Name, err, p.Log)
		}
		s.RSS += mem.RSS
		s.HWM += mem.HWM
	}
	return s, nil
}

// probe creates one pending pod for each scheduler name of c and waits until all are bound. A
// scheduler binds only once its informers have synced, so this proves both that every profile
// schedules and that every cache holds the cluster.
func (m *memoryBench) probe(ctx context.Context, c configuration, procs []*localcluster.Process) error {
	pods := m.cluster.Client.CoreV1().Pods(cluster.Namespace)
	var names []string
	for _, p := range c.processes {
		names = append(names, p.schedulerNames...)
	}
	for _, name := range names {
		pod := cluster.Pod("probe-"+name, probeApp)
		pod.Spec.SchedulerName = name
		if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating the probe pod of %s: %w", name, err)
		}
	}
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, m.opts.bindTimeout, true, func(ctx context.Context) (bool, error) {
		for _, p := range procs {
			if !p.Alive() {
				return false, fmt.Errorf("%s exited; see %s", p.Name, p.Log)
			}
		}
		list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: "app=" + probeApp})
		if err != nil {
			return false, err
		}
		bound := 0
		for _, pod := range list.Items {
			if pod.Spec.NodeName != "" {
				bound++
			}
		}
		return bound == len(names), nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %d probe pods to be bound (scheduler logs in %s): %w", len(names), m.dir, err)
	}
	return nil
}

// deleteProbes deletes the probe pods at once: no kubelet runs to confirm a graceful deletion.
func (m *memoryBench) deleteProbes(ctx context.Context) {
	err := m.cluster.Client.CoreV1().Pods(cluster.Namespace).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)},
		metav1.ListOptions{LabelSelector: "app=" + probeApp})
	if err != nil && ctx.Err() == nil {
		fmt.Fprintln(os.Stderr, "bench: deleting the probe pods:", err)
	}
}
