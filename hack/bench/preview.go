package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/controllers"
	"github.com/schedops/scheduler-profile-operator/hack/bench/internal/cluster"
	"github.com/schedops/scheduler-profile-operator/hack/bench/internal/stats"
	"github.com/schedops/scheduler-profile-operator/internal/localcluster"
)

// Goals of the preview benchmark, set for the preview of a profile's 2000 pods on 1000 nodes.
const (
	// goalPreviewSeconds is the most a change may take until status.preview shows its preview.
	goalPreviewSeconds = 5
	// goalPreviewBytes is the most the operator's resident memory may grow over its idle
	// resident memory while it previews a change.
	goalPreviewBytes = 300e6
)

// previewProfileName is the profile whose changes the preview benchmark previews.
const previewProfileName = "bench-preview"

// previewWeights are the weights of NodeLabelPreference that the preview benchmark's changes
// go back and forth between: another configuration for the same work of the scheduler.
var previewWeights = [2]int32{3, 4}

// previewResult is what one change's preview measured.
type previewResult struct {
	// Wall is the time from the change until status.preview showed its preview, and Duration
	// the preview's own time (status.preview.durationMilliseconds).
	Wall, Duration time.Duration
	// CPU is the operator process's user+system CPU time in Wall.
	CPU time.Duration
	// Before is the operator's VmRSS before the change, and Peak its VmHWM from the change
	// until the preview showed (reset before the change).
	Before, Peak int64
	// WorkerPeak is the largest VmHWM of the operator's preview worker processes (its children)
	// read every workerPoll from the change until the preview showed.
	WorkerPeak int64
}

// workerPoll is how often the benchmark reads the memory of the operator's preview workers.
const workerPoll = 20 * time.Millisecond

// benchPreview measures the operator's preview of a dedicated profile's change
// (spec.rollout.preview in Report mode): the operator in a process of its own on an envtest
// apiserver with o.previewNodes nodes and o.previewPods pods of the profile's scheduler name,
// and o.rounds changes of the profile, back and forth between two configurations, one at a time:
// the time until status.preview shows each one's preview, and the growth of the operator's
// resident memory over its idle resident memory meanwhile.
func benchPreview(ctx context.Context, o options) ([]stats.Row, error) {
	if o.previewNodes < 1 || o.previewPods < 1 {
		return nil, fmt.Errorf("--preview-nodes and --preview-pods must be positive")
	}
	c, admin, operator, schedulerName, err := startPreviewBench(ctx, o, "preview", operatorProcess{CPUProfile: o.previewCPUProfile})
	if err != nil {
		return nil, err
	}
	defer c.Stop()
	defer operator.stop()
	if err := createPreviewCluster(ctx, c, o, schedulerName, nil); err != nil {
		return nil, err
	}
	if err := sleep(ctx, quiet); err != nil {
		return nil, err
	}
	idle, err := cluster.ReadMemory(strconv.Itoa(operator.pid()))
	if err != nil {
		return nil, err
	}
	var results []previewResult
	for round := range o.rounds {
		r, err := previewChange(ctx, admin, o, operator.pid(), previewWeights[(round+1)%2])
		if err != nil {
			return nil, fmt.Errorf("round %d: %w", round+1, err)
		}
		fmt.Printf("Round %d/%d  preview of %d pods on %d nodes shown in %.2f s (durationMilliseconds %d), operator CPU %.2f s, VmRSS before %.1f MiB, VmHWM %.1f MiB (%.1f MiB over idle), preview worker VmHWM %.1f MiB\n",
			round+1, o.rounds, o.previewPods, o.previewNodes, r.Wall.Seconds(), r.Duration.Milliseconds(), r.CPU.Seconds(), cluster.MiB(r.Before), cluster.MiB(r.Peak), cluster.MiB(r.Peak-idle.RSS), cluster.MiB(r.WorkerPeak))
		results = append(results, r)
	}
	return previewRows(o, idle.RSS, results), nil
}

// startPreviewBench starts an envtest cluster and the operator in a process of its own, and
// creates the preview benchmark's profile, Available, before any node or pod: its first preview
// (of no running configuration) has no pods, and the operator has previewed none when its idle
// memory is read. The caller stops the operator and then the cluster.
func startPreviewBench(ctx context.Context, o options, name string, p operatorProcess) (*cluster.Cluster, client.Client, *operatorProc, string, error) {
	c, admin, err := startClusterWithCRDs(o, name)
	if err != nil {
		return nil, nil, nil, "", err
	}
	operator, err := startOperatorProcess(ctx, c, admin, o, name, p)
	if err != nil {
		c.Stop()
		return nil, nil, nil, "", err
	}
	schedulerName, err := availableProfile(ctx, admin, previewProfile(previewWeights[0]))
	if err != nil {
		operator.stop()
		c.Stop()
		return nil, nil, nil, "", err
	}
	return c, admin, operator, schedulerName, nil
}

// previewProfile is the preview benchmark's profile: throughput's NodePool +
// NodeLabelPreference, with NodeLabelPreference's weight w, previewed in Report mode.
func previewProfile(w int32) *v1alpha1.SchedulerProfile {
	p := pluginsProfile()
	p.Name = previewProfileName
	p.Spec.Plugins.MultiPoint.Enabled[1].Weight = ptr.To(w)
	p.Spec.Rollout.Preview.Mode = v1alpha1.PreviewReport
	return p
}

// createPreviewCluster creates o.previewNodes nodes and o.previewPods pods of schedulerName:
// three in four bound to the nodes, the others pending. A preview places both kinds anew. dress,
// when set, adds to each pod what scheduling does not read. The o.previewOtherPods pods of other
// schedulers, bound and dressed so (heavyPod), are the rest of the cluster.
func createPreviewCluster(ctx context.Context, c *cluster.Cluster, o options, schedulerName string, dress func(*corev1.Pod)) error {
	setup := time.Now()
	if err := c.CreateNodes(ctx, o.previewNodes); err != nil {
		return err
	}
	err := c.CreatePods(ctx, o.previewPods, func(i int) *corev1.Pod {
		pod := cluster.Pod(fmt.Sprintf("preview-%05d", i), fmt.Sprintf("app-%d", i%100))
		pod.Spec.SchedulerName = schedulerName
		if i%4 != 3 {
			pod.Spec.NodeName = cluster.NodeName(i % o.previewNodes)
		}
		if dress != nil {
			dress(pod)
		}
		return pod
	})
	if err != nil {
		return err
	}
	err = c.CreatePods(ctx, o.previewOtherPods, func(i int) *corev1.Pod {
		pod := cluster.Pod(fmt.Sprintf("other-%06d", i), fmt.Sprintf("other-%d", i%100))
		pod.Spec.NodeName = cluster.NodeName(i % o.previewNodes)
		heavyPod(pod)
		return pod
	})
	if err != nil {
		return err
	}
	fmt.Printf("Created %d nodes, %d pods of %s and %d of other schedulers in %s\n", o.previewNodes, o.previewPods, schedulerName, o.previewOtherPods, time.Since(setup).Round(time.Second))
	return nil
}

// previewChange changes the profile to NodeLabelPreference's weight w and waits until
// status.preview shows the preview of the change, with the operator's peak resident memory reset
// before the change; then it completes the rollout (waitAvailable) and waits until the operator
// is quiet.
func previewChange(ctx context.Context, admin client.Client, o options, pid int, w int32) (previewResult, error) {
	var r previewResult
	// The profile as it runs, its last preview shown.
	before := &v1alpha1.SchedulerProfile{}
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, o.deadline, true, func(ctx context.Context) (bool, error) {
		err := admin.Get(ctx, client.ObjectKey{Name: previewProfileName}, before)
		return err == nil && before.Status.Preview.To.ConfigHash == before.Status.ConfigHash, err
	})
	if err != nil {
		return r, fmt.Errorf("waiting for the preview of the running configuration in status.preview: %w", err)
	}
	mem, err := cluster.ReadMemory(strconv.Itoa(pid))
	if err != nil {
		return r, err
	}
	r.Before = mem.RSS
	if err := resetPeakMemory(pid); err != nil {
		return r, err
	}
	cpu0, err := localcluster.CPUTime(pid)
	if err != nil {
		return r, err
	}
	start := time.Now()
	workers := watchWorkers(ctx, pid)
	changed := before.DeepCopy()
	changed.Spec = previewProfile(w).Spec
	if err := admin.Patch(ctx, changed, client.MergeFrom(before)); err != nil {
		return r, err
	}
	p := &v1alpha1.SchedulerProfile{}
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, o.deadline, true, func(ctx context.Context) (bool, error) {
		if err := admin.Get(ctx, client.ObjectKey{Name: previewProfileName}, p); err != nil {
			return false, err
		}
		return p.Status.Preview.To.ConfigHash != before.Status.Preview.To.ConfigHash, nil
	})
	if err != nil {
		return r, fmt.Errorf("waiting for the preview of the change in status.preview: %w", err)
	}
	r.Wall = time.Since(start)
	r.WorkerPeak = workers()
	cpu, err := localcluster.CPUTime(pid)
	if err != nil {
		return r, err
	}
	if mem, err = cluster.ReadMemory(strconv.Itoa(pid)); err != nil {
		return r, err
	}
	r.CPU, r.Peak = cpu-cpu0, mem.HWM
	pv := p.Status.Preview
	r.Duration = time.Duration(pv.DurationMilliseconds) * time.Millisecond
	// More pods than --preview-max-pods make a preview of the first of them, which says so.
	wantPods := min(o.previewPods, controllers.DefaultPreviewMaxPods)
	capped := wantPods < o.previewPods && strings.Contains(pv.Incomplete, "--preview-max-pods")
	if pv.Failure != "" || (pv.Incomplete != "" && !capped) || int(pv.Pods) != wantPods || pv.From.ConfigHash != before.Status.ConfigHash {
		return r, fmt.Errorf("want a complete preview of %d pods from configuration %s, got %+v", wantPods, before.Status.ConfigHash, pv)
	}
	if _, err := waitAvailable(ctx, admin, previewProfileName); err != nil {
		return r, err
	}
	return r, sleep(ctx, quiet)
}

// watchWorkers reads the VmHWM of the children of pid, the operator's preview workers, every
// workerPoll until the function it returns is called, which returns the largest.
func watchWorkers(ctx context.Context, pid int) func() int64 {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan int64)
	go func() {
		var peak int64
		ticker := time.NewTicker(workerPoll)
		defer ticker.Stop()
		for {
			for _, child := range children(pid) {
				if mem, err := cluster.ReadMemory(child); err == nil {
					peak = max(peak, mem.HWM)
				}
			}
			select {
			case <-ctx.Done():
				done <- peak
				return
			case <-ticker.C:
			}
		}
	}()
	return func() int64 {
		cancel()
		return <-done
	}
}

// children are the pids of the children of pid, from /proc/<pid>/task/*/children.
func children(pid int) []string {
	files, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	var out []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err == nil {
			out = append(out, strings.Fields(string(data))...)
		}
	}
	return out
}

// resetPeakMemory resets the VmHWM of pid to its VmRSS now.
func resetPeakMemory(pid int) error {
	return os.WriteFile(fmt.Sprintf("/proc/%d/clear_refs", pid), []byte("5"), 0)
}

// sleep waits for d, or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// previewRows are the time until status.preview showed each change's preview, the preview's own
// duration, the operator's CPU, and its peak resident memory over its idle resident memory, of
// the rounds.
func previewRows(o options, idle int64, results []previewResult) []stats.Row {
	wall := stats.Each(results, func(r previewResult) float64 { return r.Wall.Seconds() })
	duration := stats.Each(results, func(r previewResult) float64 { return r.Duration.Seconds() })
	cpu := stats.Each(results, func(r previewResult) float64 { return r.CPU.Seconds() })
	over := stats.Each(results, func(r previewResult) float64 { return cluster.MiB(r.Peak - idle) })
	before := stats.Each(results, func(r previewResult) float64 { return cluster.MiB(r.Before) })
	worker := stats.Each(results, func(r previewResult) float64 { return cluster.MiB(r.WorkerPeak) })
	const name = "preview"
	shown := stats.Row{Benchmark: name, Measure: fmt.Sprintf("a profile's change, %d pods on %d nodes: in status.preview", o.previewPods, o.previewNodes),
		Value: stats.Summarize(wall), Unit: "s", Decimals: 2}
	shown.Note = atMost(shown.Value.Median, goalPreviewSeconds) + "; from the change until status.preview showed its preview; the operator in a process of its own (controllers.SetupManager, default --preview-max-pods and --preview-timeout), envtest; rounds: " + stats.Format(2, wall)
	memory := stats.Row{Benchmark: name, Measure: "  operator's peak resident memory over idle", Value: stats.Summarize(over), Unit: "MiB", Decimals: 1}
	memory.Note = fmt.Sprintf("goal ≤ %.0f MB (%.1f MiB): %s; VmHWM, reset before the change, less VmRSS of the idle operator before the first change (%.1f MiB); VmRSS before each change: %s",
		goalPreviewBytes/1e6, cluster.MiB(goalPreviewBytes), stats.Verdict(memory.Value.Median <= cluster.MiB(goalPreviewBytes)), cluster.MiB(idle), stats.Format(1, before))
	return []stats.Row{
		shown,
		{Benchmark: name, Measure: "  the preview's own time (durationMilliseconds)", Value: stats.Summarize(duration), Unit: "s", Decimals: 2,
			Note: "reading the cluster page by page and both simulations; rounds: " + stats.Format(2, duration)},
		{Benchmark: name, Measure: "  operator CPU until then", Value: stats.Summarize(cpu), Unit: "s", Decimals: 2,
			Note: "user+system of the operator's process; rounds: " + stats.Format(2, cpu)},
		memory,
		{Benchmark: name, Measure: "  preview worker's peak resident memory", Value: stats.Summarize(worker), Unit: "MiB", Decimals: 1,
			Note: fmt.Sprintf("VmHWM of the operator's child process that runs the simulations, read every %s; budget %.0f MiB (--preview-memory-limit); rounds: %s", workerPoll, cluster.MiB(int64(controllers.DefaultPreviewMemoryLimit)), stats.Format(1, worker))},
	}
}
