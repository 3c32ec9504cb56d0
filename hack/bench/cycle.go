package main

import (
	"context"
	"fmt"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	schedulerconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	schedcache "k8s.io/kubernetes/pkg/scheduler/backend/cache"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/hack/bench/internal/cluster"
	"github.com/schedops/scheduler-profile-operator/hack/bench/internal/noop"
	"github.com/schedops/scheduler-profile-operator/hack/bench/internal/stats"
	"github.com/schedops/scheduler-profile-operator/internal/localcluster"
	"github.com/schedops/scheduler-profile-operator/scheduler/profile"
)

// The frameworks of the cycle benchmark, in the order cycleFrameworks returns them.
const (
	cycleDefault = iota
	cyclePlugins
	cycleNoop
)

// cycleWarmup is how long each framework runs cycles before the first timed one: long enough for
// the plugins' node caches to publish what their informer handlers computed (they publish at
// most once a second).
const cycleWarmup = 2 * time.Second

// cycleFramework is a scheduling framework built from one profile.
type cycleFramework struct {
	name string
	fw   framework.Framework
}

// benchCycle measures, in this process and without an apiserver, the CPU time of the plugins'
// part of a scheduling cycle (PreFilter, Filter on every node, PreScore, Score and its
// normalization) with three profiles, each built by the real framework on the same o.nodes
// nodes as throughput: the default profile; the default profile with NodePool and
// NodeLabelPreference, as throughput runs them; and the default profile with two plugins that
// do nothing at the same extension points. The last is what the framework itself charges for
// calling two more plugins on every node, which no plugin's code can save; ours minus it is what
// our plugins' code costs.
//
// Unlike throughput, this leaves out what a cycle spends outside the plugins (the queue, the
// snapshot, the binding), so its ratios are larger: it shows where the cost of our plugins is,
// not how it weighs on the whole scheduler.
func benchCycle(ctx context.Context, o options) ([]stats.Row, error) {
	// Stops the scheduler's informers and goroutines before the next benchmark.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	fws, err := cycleFrameworks(ctx, o.nodes)
	if err != nil {
		return nil, err
	}
	pods := make([]*corev1.Pod, o.cyclePods)
	for i := range pods {
		pods[i] = cluster.Pod(fmt.Sprintf("cycle-%d", i), fmt.Sprintf("app-%d", i%100))
	}
	for _, f := range fws {
		for start := time.Now(); time.Since(start) < cycleWarmup; {
			if err := runCycles(ctx, f.fw, pods[:1]); err != nil {
				return nil, fmt.Errorf("%s: %w", f.name, err)
			}
		}
	}
	perPod := make([][]float64, len(fws))
	for round := range o.rounds {
		for _, i := range order(len(fws), round) {
			before, err := localcluster.CPUTime(os.Getpid())
			if err != nil {
				return nil, err
			}
			if err := runCycles(ctx, fws[i].fw, pods); err != nil {
				return nil, fmt.Errorf("%s: %w", fws[i].name, err)
			}
			after, err := localcluster.CPUTime(os.Getpid())
			if err != nil {
				return nil, err
			}
			us := float64((after - before).Nanoseconds()) / 1000 / float64(len(pods))
			perPod[i] = append(perPod[i], us)
			fmt.Printf("Round %d/%d  %-48s %7.1f µs CPU per pod\n", round+1, o.rounds, fws[i].name, us)
		}
	}
	return cycleRows(o, fws, perPod), nil
}

// cycleRows are the CPU per pod of each framework, what the plugins add to the default profile
// round by round, and ours as a ratio to the no-op plugins.
func cycleRows(o options, fws []cycleFramework, perPod [][]float64) []stats.Row {
	const name = "cycle"
	var rows []stats.Row
	for i, f := range fws {
		rows = append(rows, stats.Row{Benchmark: name, Measure: "CPU per pod, " + f.name, Value: stats.Summarize(perPod[i]), Unit: "µs", Decimals: 1})
	}
	rows[0].Note = fmt.Sprintf("plugins of one cycle on %d nodes, %d pods per round, in process", o.nodes, o.cyclePods)
	added := func(i int) []float64 {
		d := make([]float64, len(perPod[i]))
		for r := range d {
			d[r] = perPod[i][r] - perPod[cycleDefault][r]
		}
		return d
	}
	ours, noops := added(cyclePlugins), added(cycleNoop)
	r := stats.Ratios(perPod[cyclePlugins], perPod[cycleNoop])
	return append(rows,
		stats.Row{Benchmark: name, Measure: "  added by our plugins", Value: stats.Summarize(ours), Unit: "µs", Decimals: 1, Note: "rounds: " + stats.Format(1, ours)},
		stats.Row{Benchmark: name, Measure: "  added by two no-op plugins", Value: stats.Summarize(noops), Unit: "µs", Decimals: 1, Note: "rounds: " + stats.Format(1, noops)},
		stats.Row{Benchmark: name, Measure: "  ours / no-op plugins", Value: stats.Summarize(r), Decimals: 2, Note: "rounds: " + stats.Format(2, r)},
	)
}

// cycleFrameworks builds the frameworks of the cycle benchmark as kube-scheduler does: one
// scheduler with the three profiles, our registry and the no-op plugins (profile.NewFakeScheduler),
// on a fake clientset holding n nodes. The frameworks' snapshot is the scheduler's, taken once the scheduler's cache
// holds the nodes.
func cycleFrameworks(ctx context.Context, n int) ([]cycleFramework, error) {
	profiles := []struct {
		name    string
		profile *v1alpha1.SchedulerProfile
	}{
		{"default profile", &v1alpha1.SchedulerProfile{}},
		{"NodePool + NodeLabelPreference", pluginsProfile()},
		{"two no-op plugins", noopProfile()},
	}
	var cfg *schedulerconfig.KubeSchedulerConfiguration
	for i, p := range profiles {
		p.profile.Name = fmt.Sprintf("bench-cycle-%d", i)
		rendered, err := profile.Render(p.profile, profile.Settings{Namespace: leaseNamespace})
		if err != nil {
			return nil, err
		}
		c, err := profile.DecodeConfig(rendered.YAML)
		if err != nil {
			return nil, err
		}
		prof := c.Profiles[0]
		if cfg == nil {
			cfg = c
			cfg.Profiles = nil
		}
		cfg.Profiles = append(cfg.Profiles, prof)
	}
	var objs []runtime.Object
	for i := range n {
		objs = append(objs, cluster.Node(i))
	}
	sched, err := profile.NewFakeScheduler(ctx, cfg, noop.Registry(), objs...)
	if err != nil {
		return nil, err
	}
	if err := sched.StartInformers(ctx); err != nil {
		return nil, err
	}
	var fws []cycleFramework
	for i, p := range profiles {
		fw := sched.Profiles[cfg.Profiles[i].SchedulerName]
		snapshot, ok := fw.SnapshotSharedLister().(*schedcache.Snapshot)
		if !ok {
			return nil, fmt.Errorf("snapshot of the framework is a %T", fw.SnapshotSharedLister())
		}
		if err := sched.Cache.UpdateSnapshot(klog.FromContext(ctx), snapshot); err != nil {
			return nil, err
		}
		if nodes, err := snapshot.NodeInfos().List(); err != nil || len(nodes) != n {
			return nil, fmt.Errorf("the scheduler's snapshot has %d nodes, want %d (%v)", len(nodes), n, err)
		}
		fws = append(fws, cycleFramework{name: p.name, fw: fw})
	}
	return fws, nil
}

// runCycles runs the plugins of one scheduling cycle for each pod, on every node: the work of
// schedulePod, less the scheduler's own.
func runCycles(ctx context.Context, f framework.Framework, pods []*corev1.Pod) error {
	nodes, err := f.SnapshotSharedLister().NodeInfos().List()
	if err != nil {
		return err
	}
	feasible := make([]fwk.NodeInfo, 0, len(nodes))
	for _, pod := range pods {
		state := framework.NewCycleState()
		if _, s, _ := f.RunPreFilterPlugins(ctx, state, pod); !s.IsSuccess() {
			return s.AsError()
		}
		feasible = feasible[:0]
		for _, n := range nodes {
			if s := f.RunFilterPlugins(ctx, state, pod, n); s.IsSuccess() {
				feasible = append(feasible, n)
			}
		}
		if len(feasible) != len(nodes) {
			return fmt.Errorf("%d of %d nodes fit pod %s", len(feasible), len(nodes), pod.Name)
		}
		if s := f.RunPreScorePlugins(ctx, state, pod, feasible); !s.IsSuccess() {
			return s.AsError()
		}
		if _, s := f.RunScorePlugins(ctx, state, pod, feasible); !s.IsSuccess() {
			return s.AsError()
		}
	}
	return nil
}
