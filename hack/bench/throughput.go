package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	"github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/hack/bench/internal/cluster"
	"github.com/schedops/scheduler-profile-operator/hack/bench/internal/noop"
	"github.com/schedops/scheduler-profile-operator/hack/bench/internal/stats"
	"github.com/schedops/scheduler-profile-operator/internal/localcluster"
	"github.com/schedops/scheduler-profile-operator/scheduler/profile"
)

// Goals of the issue that asked for this benchmark: our scheduler's throughput as a share of
// upstream's, without and with our plugins.
const (
	goalDefault = 0.99
	goalPlugins = 0.97
)

// The contenders in the order contenders returns them, for the ratios of throughputRows.
const (
	ceiling = iota
	upstream
	oursDefault
	oursPlugins
	upstreamAffinity
	oursNoop
)

// throughputApp labels the pods of the throughput benchmark.
const throughputApp = "bench-throughput"

// contender is one way of binding the pods: a scheduler, or (scheduler nil) the client that only
// posts Bindings.
type contender struct {
	name          string
	schedulerName string
	scheduler     *cluster.Scheduler
}

// contenders are the apiserver ceiling, upstream kube-scheduler, bin/kube-scheduler with the
// default profile and with our plugins, upstream doing our plugins' work with NodeAffinity, and
// bin/kube-scheduler-noop with two plugins that do nothing at the extension points of ours.
// Upstream and ours with the default profile run the same configuration, rendered by the operator
// from an empty spec, so that only the binary differs.
func contenders(o options) ([]contender, error) {
	for _, bin := range []struct{ path, make string }{
		{o.upstream, "make bin/kube-scheduler-upstream"}, {o.scheduler, "make build"}, {o.noopScheduler, "make bin/kube-scheduler-noop"},
	} {
		if _, err := os.Stat(bin.path); err != nil {
			return nil, fmt.Errorf("%w (build it with `%s`)", err, bin.make)
		}
	}
	plugins := pluginsProfile()
	// The same pool and preference, done by upstream's own NodeAffinity plugin: its addedAffinity
	// applies to every pod, as NodePool and NodeLabelPreference do. This is what the work of our
	// two plugins costs an in-tree plugin, run by the framework the same way.
	affinity := &v1alpha1.SchedulerProfile{ObjectMeta: metav1.ObjectMeta{Name: "bench-affinity"}}
	affinity.Spec.PluginConfig = []v1alpha1.PluginConfig{args("NodeAffinity", `{"addedAffinity":{`+
		`"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":%q,"operator":"In","values":[%q]}]}]},`+
		`"preferredDuringSchedulingIgnoredDuringExecution":[{"weight":10,"preference":{"matchExpressions":[{"key":%q,"operator":"In","values":[%q]}]}}]}}`,
		cluster.PoolLabel, cluster.Pool, cluster.LifecycleLabel, cluster.Spot)}
	// In the order of the constants upstream to oursNoop, after the ceiling.
	list := []struct {
		name, binary string
		profile      *v1alpha1.SchedulerProfile
	}{
		{"upstream kube-scheduler", o.upstream, &v1alpha1.SchedulerProfile{ObjectMeta: metav1.ObjectMeta{Name: "bench-upstream"}}},
		{"ours, default profile", o.scheduler, &v1alpha1.SchedulerProfile{ObjectMeta: metav1.ObjectMeta{Name: "bench-default"}}},
		{"ours, NodePool + NodeLabelPreference", o.scheduler, plugins},
		{"upstream, NodeAffinity with the same pool and preference", o.upstream, affinity},
		{"ours, two no-op plugins", o.noopScheduler, noopProfile()},
	}
	cs := []contender{{name: fmt.Sprintf("apiserver ceiling (Bindings only, %d in flight)", o.ceilingWorkers), schedulerName: "bench-none"}}
	for _, c := range list {
		cfg, err := profile.Render(c.profile, profile.Settings{Namespace: leaseNamespace})
		if err != nil {
			return nil, err
		}
		// The no-op plugins are not in our registry: the no-op scheduler checks its
		// configuration when it starts.
		if c.binary != o.noopScheduler {
			if errs := profile.Validate(cfg.YAML); len(errs) > 0 {
				return nil, fmt.Errorf("profile %s: %w", c.profile.Name, errs.ToAggregate())
			}
		}
		cs = append(cs, contender{name: c.name, schedulerName: c.profile.Name,
			scheduler: &cluster.Scheduler{Name: c.profile.Name, Binary: c.binary, Config: cfg.YAML, QPS: o.schedulerQPS, Args: strings.Fields(o.schedulerArgs)}})
	}
	return cs, nil
}

// pluginsProfile is the profile of "ours, NodePool + NodeLabelPreference".
func pluginsProfile() *v1alpha1.SchedulerProfile {
	p := &v1alpha1.SchedulerProfile{ObjectMeta: metav1.ObjectMeta{Name: "bench-plugins"}}
	// The args of the node-pool sample, on labels every node has: the benchmark measures what the
	// plugins cost, so NodePool passes every node and leaves the same choice as the default.
	p.Spec.Plugins = &v1alpha1.Plugins{MultiPoint: v1alpha1.PluginSet{Enabled: []v1alpha1.Plugin{
		{Name: "NodePool"}, {Name: "NodeLabelPreference", Weight: ptr.To[int32](3)}}}}
	p.Spec.PluginConfig = []v1alpha1.PluginConfig{
		args("NodePool", `{"nodeSelector":{"matchLabels":{%q:%q}}}`, cluster.PoolLabel, cluster.Pool),
		args("NodeLabelPreference", `{"preferences":[{"key":%q,"values":[%q],"weight":10}]}`, cluster.LifecycleLabel, cluster.Spot),
	}
	return p
}

// noopProfile enables the two plugins of package noop, at the extension points and with the
// weight of NodePool and NodeLabelPreference in pluginsProfile: the framework's own cost of two
// such plugins, the floor under what ours can cost.
func noopProfile() *v1alpha1.SchedulerProfile {
	p := &v1alpha1.SchedulerProfile{ObjectMeta: metav1.ObjectMeta{Name: "bench-noop"}}
	p.Spec.Plugins = &v1alpha1.Plugins{MultiPoint: v1alpha1.PluginSet{Enabled: []v1alpha1.Plugin{
		{Name: noop.FilterName}, {Name: noop.ScoreName, Weight: ptr.To[int32](3)}}}}
	return p
}

// benchThroughput measures, in alternating rounds on one envtest cluster of fake nodes, how
// fast each contender binds o.pods pending pods: pods per second from the first binding to the
// last, as a watch sees them. The schedulers start after the pods exist, so their start-up is
// not timed. Every round deletes the pods afterwards, so that each contender starts on the same
// empty cluster.
func benchThroughput(ctx context.Context, o options) ([]stats.Row, error) {
	cs, err := contenders(o)
	if err != nil {
		return nil, err
	}
	dir := o.dir + "/throughput"
	c, err := cluster.Start(o.assets, dir)
	if err != nil {
		return nil, err
	}
	defer c.Stop()
	if err := c.CreateNodes(ctx, o.nodes); err != nil {
		return nil, err
	}
	t := &throughputBench{opts: o, cluster: c, dir: dir}
	rates, cpu := make([][]float64, len(cs)), make([][]float64, len(cs))
	for round := range o.rounds {
		for _, i := range order(len(cs), round) {
			s, err := t.measure(ctx, cs[i], round)
			if err != nil {
				return nil, fmt.Errorf("round %d, %s: %w", round+1, cs[i].name, err)
			}
			rates[i] = append(rates[i], s.rate)
			cpu[i] = append(cpu[i], s.cpuPerPod)
			fmt.Printf("Round %d/%d  %-48s %7.1f pods/s  %5.2f ms CPU per pod\n", round+1, o.rounds, cs[i].name, s.rate, s.cpuPerPod)
		}
	}
	throughputCPU = cpu[oursPlugins]
	return throughputRows(o, cs, rates, cpu), nil
}

// throughputSample is what one run of a contender measured.
type throughputSample struct {
	// rate is pods per second from the first binding to the last.
	rate float64
	// cpuPerPod is the scheduler's CPU time (user and system, its whole life: start-up, the
	// informers' lists and the scheduling) in ms per pod; 0 for the ceiling. Unlike the rate it
	// hardly depends on what else the machine runs.
	cpuPerPod float64
}

// throughputRows are the pods/s of each contender and the ratios, round by round, of ours to
// upstream and of upstream to the apiserver's ceiling; then the schedulers' CPU per pod and its
// ratios.
func throughputRows(o options, cs []contender, rates, cpu [][]float64) []stats.Row {
	const name = "throughput"
	var rows []stats.Row
	for i, c := range cs {
		rows = append(rows, stats.Row{Benchmark: name, Measure: c.name, Value: stats.Summarize(rates[i]), Unit: "pods/s", Decimals: 0})
	}
	rows[0].Note = fmt.Sprintf("%d nodes, %d pending pods per run, first to last binding", o.nodes, o.pods)
	ratio := func(measure string, results [][]float64, num, den int, goal float64) stats.Row {
		r := stats.Ratios(results[num], results[den])
		row := stats.Row{Benchmark: name, Measure: "  " + measure, Value: stats.Summarize(r), Decimals: 2, Note: "rounds: " + stats.Format(2, r)}
		if goal > 0 {
			row.Note = stats.Goal(row.Value.Median, goal) + "; " + row.Note
		}
		return row
	}
	rows = append(rows,
		ratio("ours default / upstream", rates, oursDefault, upstream, goalDefault),
		ratio("ours plugins / upstream", rates, oursPlugins, upstream, goalPlugins),
		ratio("ours plugins / upstream NodeAffinity", rates, oursPlugins, upstreamAffinity, 0),
		ratio("upstream NodeAffinity / upstream", rates, upstreamAffinity, upstream, 0),
		ratio("ours no-op plugins / upstream", rates, oursNoop, upstream, 0),
		ratio("ours plugins / ours no-op plugins", rates, oursPlugins, oursNoop, 0),
		ratio("upstream / apiserver ceiling", rates, upstream, ceiling, 0),
	)
	for i, c := range cs[1:] {
		row := stats.Row{Benchmark: name, Measure: "CPU per pod, " + c.name, Value: stats.Summarize(cpu[i+1]), Unit: "ms", Decimals: 2}
		if i == 0 {
			row.Note = "user+system CPU of the scheduler process over its life / pods"
		}
		rows = append(rows, row)
	}
	return append(rows,
		ratio("ours default / upstream (CPU)", cpu, oursDefault, upstream, 0),
		ratio("ours plugins / upstream (CPU)", cpu, oursPlugins, upstream, 0),
		ratio("ours plugins / upstream NodeAffinity (CPU)", cpu, oursPlugins, upstreamAffinity, 0),
		ratio("upstream NodeAffinity / upstream (CPU)", cpu, upstreamAffinity, upstream, 0),
		ratio("ours no-op plugins / upstream (CPU)", cpu, oursNoop, upstream, 0),
		ratio("ours plugins / ours no-op plugins (CPU)", cpu, oursPlugins, oursNoop, 0),
	)
}

// throughputBench measures contenders on one cluster.
type throughputBench struct {
	opts    options
	cluster *cluster.Cluster
	dir     string
}

// measure creates the pending pods of c and binds them with c.
func (t *throughputBench) measure(ctx context.Context, c contender, round int) (throughputSample, error) {
	var s throughputSample
	pods := t.cluster.Client.CoreV1().Pods(cluster.Namespace)
	defer t.deletePods(ctx)
	err := t.cluster.CreatePods(ctx, t.opts.pods, func(i int) *corev1.Pod {
		pod := cluster.Pod(podName(c, round, i), fmt.Sprintf("app-%d", i%100))
		pod.Labels["bench"] = throughputApp
		pod.Spec.SchedulerName = c.schedulerName
		return pod
	})
	if err != nil {
		return s, err
	}
	selector := metav1.ListOptions{LabelSelector: "bench=" + throughputApp}
	list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: selector.LabelSelector, Limit: 1})
	if err != nil {
		return s, err
	}
	ctx, cancel := context.WithTimeout(ctx, t.opts.bindTimeout)
	defer cancel()
	w, err := pods.Watch(ctx, metav1.ListOptions{LabelSelector: selector.LabelSelector, ResourceVersion: list.ResourceVersion})
	if err != nil {
		return s, err
	}
	defer w.Stop()

	var proc *localcluster.Process
	if c.scheduler == nil {
		go t.bindAll(ctx, c, round)
	} else {
		procs, err := t.cluster.StartSchedulers(t.dir, *c.scheduler)
		defer cluster.StopAll(procs)
		if err != nil {
			return s, err
		}
		proc = procs[0]
		go watchAlive(ctx, cancel, proc)
	}
	first, last, err := waitBound(ctx, w, t.opts.pods)
	if err != nil {
		return s, fmt.Errorf("%w (logs in %s)", err, t.dir)
	}
	if t.opts.pods < 2 || !last.After(first) {
		return s, fmt.Errorf("need at least 2 pods bound at different times to time them")
	}
	s.rate = float64(t.opts.pods-1) / last.Sub(first).Seconds()
	if proc != nil {
		cpu, err := localcluster.CPUTime(proc.PID)
		if err != nil {
			return s, err
		}
		s.cpuPerPod = float64(cpu.Microseconds()) / 1000 / float64(t.opts.pods)
	}
	return s, nil
}

// waitBound counts the pods that the watch w sees bound, until n are, and returns when it saw
// the first and the last binding.
func waitBound(ctx context.Context, w watch.Interface, n int) (first, last time.Time, err error) {
	bound := make(map[string]bool, n)
	for len(bound) < n {
		select {
		case <-ctx.Done():
			return first, last, fmt.Errorf("%d of %d pods bound: %w", len(bound), n, context.Cause(ctx))
		case ev, ok := <-w.ResultChan():
			if !ok {
				return first, last, fmt.Errorf("the watch of the pods closed after %d of %d were bound", len(bound), n)
			}
			pod, isPod := ev.Object.(*corev1.Pod)
			if !isPod || ev.Type != watch.Modified || pod.Spec.NodeName == "" || bound[pod.Name] {
				continue
			}
			now := time.Now()
			if len(bound) == 0 {
				first = now
			}
			bound[pod.Name] = true
			last = now
		}
	}
	return first, last, nil
}

// watchAlive ends ctx, through cancel, once the scheduler has exited: waiting for its pods would
// then only run into the timeout.
func watchAlive(ctx context.Context, cancel context.CancelFunc, p *localcluster.Process) {
	_ = wait.PollUntilContextCancel(ctx, 500*time.Millisecond, false, func(context.Context) (bool, error) {
		return !p.Alive(), nil
	})
	if ctx.Err() == nil {
		fmt.Fprintf(os.Stderr, "bench: %s exited; see %s\n", p.Name, p.Log)
		cancel()
	}
}

// bindAll posts a Binding for each pod of c, round-robin over the nodes, with
// o.ceilingWorkers in flight: what a scheduler that decides instantly could do at best.
func (t *throughputBench) bindAll(ctx context.Context, c contender, round int) {
	pods := t.cluster.Client.CoreV1().Pods(cluster.Namespace)
	err := cluster.ParallelN(ctx, t.opts.ceilingWorkers, t.opts.pods, func(ctx context.Context, i int) error {
		name := podName(c, round, i)
		return pods.Bind(ctx, &corev1.Binding{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: cluster.Namespace},
			Target:     corev1.ObjectReference{Kind: "Node", Name: cluster.NodeName(i % t.opts.nodes)},
		}, metav1.CreateOptions{})
	})
	if err != nil && !errors.Is(err, context.Canceled) {
		fmt.Fprintln(os.Stderr, "bench: posting Bindings:", err)
	}
}

// deletePods deletes the benchmark's pods at once (no kubelet runs to confirm a graceful
// deletion) and waits until they are gone, so that the next contender's scheduler does not
// find them in its cache.
func (t *throughputBench) deletePods(ctx context.Context) {
	pods := t.cluster.Client.CoreV1().Pods(cluster.Namespace)
	selector := metav1.ListOptions{LabelSelector: "bench=" + throughputApp}
	err := pods.DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}, selector)
	if err == nil {
		err = wait.PollUntilContextTimeout(ctx, time.Second, 5*time.Minute, true, func(ctx context.Context) (bool, error) {
			list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: selector.LabelSelector, Limit: 1})
			return err == nil && len(list.Items) == 0, err
		})
	}
	if err != nil && ctx.Err() == nil {
		fmt.Fprintln(os.Stderr, "bench: deleting the pods:", err)
	}
}

// podName is the name of the i-th pod of contender c in a round: measure creates it, and bindAll
// binds it.
func podName(c contender, round, i int) string {
	return fmt.Sprintf("%s-%d-%05d", c.schedulerName, round, i)
}
