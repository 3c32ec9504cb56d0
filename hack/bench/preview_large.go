package main

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/controllers"
	"github.com/schedops/scheduler-profile-operator/hack/bench/internal/cluster"
	"github.com/schedops/scheduler-profile-operator/hack/bench/internal/stats"
)

// goalLargePreviewBytes is the most the operator's peak resident memory may be while it previews
// a change on the large cluster, with the default budgets: below the limit it is deployed with.
const goalLargePreviewBytes = 400 << 20

// Sizes of the large preview's cluster: each pod carries largePodAnnotationBytes of annotations
// and a container with largePodEnv environment variables, which scheduling does not read.
const (
	largePreviewNodes       = 5000
	largePreviewPods        = 50000
	largePodAnnotationBytes = 1024
	largePodEnv             = 10
)

// benchPreviewLarge measures the operator's preview of a change on a cluster of 5,000 nodes and
// 50,000 pods of the profile, each with 1 KiB of annotations and 10 environment variables: the
// operator's peak resident memory, the peak of its preview's child processes, whether the preview
// completed or ended incomplete (either is correct), and that the operator was not restarted or
// killed. Once with the default budgets, and once more, by another operator on the same cluster,
// with --preview-max-objects out of the way, so that the memory budget is what bounds the
// preview. One round each: the cluster takes minutes to create.
func benchPreviewLarge(ctx context.Context, o options) ([]stats.Row, error) {
	c, admin, operator, schedulerName, err := startPreviewBench(ctx, o, "preview-large", operatorProcess{})
	if err != nil {
		return nil, err
	}
	defer c.Stop()
	large := o
	large.previewNodes, large.previewPods = largePreviewNodes, largePreviewPods
	if err := createPreviewCluster(ctx, c, large, schedulerName, heavyPod); err != nil {
		operator.stop()
		return nil, err
	}
	byDefault, err := largePreviewChange(ctx, admin, o, operator, previewWeights[1])
	operator.stop()
	if err != nil {
		return nil, err
	}
	raised := operatorProcess{Preview: controllers.PreviewOptions{MaxObjects: 1 << 20}}
	if operator, err = startOperatorProcess(ctx, c, admin, o, "preview-large-raised", raised); err != nil {
		return nil, err
	}
	defer operator.stop()
	byMemory, err := largePreviewChange(ctx, admin, o, operator, previewWeights[0])
	if err != nil {
		return nil, err
	}
	return append(byDefault.rows("default budgets"), byMemory.rows("--preview-max-objects raised out of the way")...), nil
}

// largePreview is what one change's preview on the large cluster measured.
type largePreview struct {
	wall                  time.Duration
	idle, peak, childPeak int64
	outcome               string
	failed                bool
}

// largePreviewChange waits until the operator is quiet, changes the profile to
// NodeLabelPreference's weight w and waits until status.preview shows the change's preview, with
// the operator's peak resident memory reset before the change and its children's read meanwhile.
func largePreviewChange(ctx context.Context, admin client.Client, o options, operator *operatorProc, w int32) (largePreview, error) {
	var r largePreview
	if err := sleep(ctx, quiet); err != nil {
		return r, err
	}
	pid := operator.pid()
	idle, err := cluster.ReadMemory(strconv.Itoa(pid))
	if err != nil {
		return r, err
	}
	if err := resetPeakMemory(pid); err != nil {
		return r, err
	}
	before := &v1alpha1.SchedulerProfile{}
	if err := admin.Get(ctx, client.ObjectKey{Name: previewProfileName}, before); err != nil {
		return r, err
	}
	workers := watchWorkers(ctx, pid)
	start := time.Now()
	changed := before.DeepCopy()
	changed.Spec = previewProfile(w).Spec
	if err := admin.Patch(ctx, changed, client.MergeFrom(before)); err != nil {
		workers()
		return r, err
	}
	p := &v1alpha1.SchedulerProfile{}
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, o.deadline+10*time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := admin.Get(ctx, client.ObjectKey{Name: previewProfileName}, p); err != nil {
			return false, err
		}
		return !p.Status.Preview.StartTime.Before(&metav1.Time{Time: start.Truncate(time.Second)}) && p.Status.Preview.To.ConfigHash != before.Status.ConfigHash, nil
	})
	r.childPeak = workers()
	if err != nil {
		return r, fmt.Errorf("waiting for the preview of the change in status.preview: %w", err)
	}
	r.wall = time.Since(start)
	mem, err := cluster.ReadMemory(strconv.Itoa(pid))
	if err != nil {
		return r, fmt.Errorf("the operator's process is gone (killed?): %w", err)
	}
	r.idle, r.peak = idle.RSS, mem.HWM
	pv := p.Status.Preview
	r.outcome = "completed"
	switch {
	case pv.Failure != "":
		r.outcome, r.failed = "failed: "+pv.Failure, true
	case pv.Incomplete != "":
		r.outcome = "incomplete: " + pv.Incomplete
	}
	fmt.Printf("Preview of a change on %d nodes and %d pods shown in %.1f s: operator VmRSS idle %.1f MiB, VmHWM %.1f MiB; peak of its preview processes %.1f MiB; %s\n",
		largePreviewNodes, largePreviewPods, r.wall.Seconds(), cluster.MiB(r.idle), cluster.MiB(r.peak), cluster.MiB(r.childPeak), r.outcome)
	return r, nil
}

// rows are the figures of one large preview, with the budgets it ran with.
func (r largePreview) rows(budgets string) []stats.Row {
	const name = "preview-large"
	verdict := "not met"
	if r.peak < goalLargePreviewBytes && !r.failed {
		verdict = "met"
	}
	return []stats.Row{
		{Benchmark: name, Measure: fmt.Sprintf("a change on %d nodes and %d pods (1 KiB annotations, %d env each), %s: operator's peak resident memory", largePreviewNodes, largePreviewPods, largePodEnv, budgets),
			Value: stats.Summarize([]float64{cluster.MiB(r.peak)}), Unit: "MiB", Decimals: 1,
			Note: fmt.Sprintf("goal < %.0f MiB, an OOM kill or restart is not correct: %s; VmHWM from the change until status.preview showed it (%.1f s), idle %.1f MiB; the preview %s", cluster.MiB(int64(goalLargePreviewBytes)), verdict, r.wall.Seconds(), cluster.MiB(r.idle), r.outcome)},
		{Benchmark: name, Measure: "  peak resident memory of the preview's child processes", Value: stats.Summarize([]float64{cluster.MiB(r.childPeak)}), Unit: "MiB", Decimals: 1,
			Note: fmt.Sprintf("the largest VmHWM seen of the operator's child processes, read every %s", workerPoll)},
	}
}

// heavyPod gives a pod what scheduling does not read: 1 KiB of annotations and 10 environment
// variables.
func heavyPod(pod *corev1.Pod) {
	pod.Annotations = map[string]string{"example.com/notes": strings.Repeat("x", largePodAnnotationBytes)}
	for e := range largePodEnv {
		pod.Spec.Containers[0].Env = append(pod.Spec.Containers[0].Env, corev1.EnvVar{Name: fmt.Sprintf("VAR_%d", e), Value: fmt.Sprintf("value-of-variable-%d", e)})
	}
}
