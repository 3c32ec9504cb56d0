package webhook

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
)

// TestReviewsDoNotWaitForAPreview: while the operator previews a change of a profile with
// feature gates, 2,000 pods on 1,000 nodes, 20 dry-run reviews of another profile without gates,
// each of a configuration not validated before, take under 1 s at the 99th percentile. On main
// before previews ran in a process of their own, a simulation held the process-wide lock of the
// feature gates (for writing, with gates) for its whole run, and every validation waited for it:
// the reviews took seconds and were refused at the webhook's 5 s timeout.
func TestReviewsDoNotWaitForAPreview(t *testing.T) {
	const nodes, pods, reviews = 1000, 2000, 20
	ctx := t.Context()
	name := "gated-preview"
	label := map[string]string{"test": name}
	workqueue.ParallelizeUntil(ctx, 8, nodes, func(i int) {
		n := testutil.MakeNode(fmt.Sprintf("%s-n%04d", name, i)).Labels(label).
			Capacity(map[corev1.ResourceName]string{corev1.ResourceCPU: "8", corev1.ResourceMemory: "32Gi", corev1.ResourcePods: "110"}).Ready().Obj()
		status := n.Status
		if err := k8sClient.Create(ctx, n); err != nil {
			t.Errorf("Creating node %s: %v", n.Name, err)
			return
		}
		// Ready, and without the not-ready taint that admission gives a new node.
		n.Status = status
		if err := k8sClient.Status().Update(ctx, n); err != nil {
			t.Errorf("Setting the status of node %s: %v", n.Name, err)
			return
		}
		patch := client.MergeFrom(n.DeepCopy())
		n.Spec.Taints = nil
		if err := k8sClient.Patch(ctx, n, patch); err != nil {
			t.Errorf("Removing the taints of node %s: %v", n.Name, err)
		}
	})
	t.Cleanup(func() { _ = k8sClient.DeleteAllOf(context.Background(), &corev1.Node{}, client.MatchingLabels(label)) })
	workqueue.ParallelizeUntil(ctx, 8, pods, func(i int) {
		p := testutil.MakePod(fmt.Sprintf("%s-%04d", name, i), "default").SchedulerName(name).Request(corev1.ResourceCPU, "100m").Obj()
		p.Labels = label
		p.Spec.Containers[0].Resources.Requests[corev1.ResourceMemory] = resource.MustParse("256Mi")
		if i%4 != 3 {
			p.Spec.NodeName = fmt.Sprintf("%s-n%04d", name, i%nodes)
		}
		if err := k8sClient.Create(ctx, p); err != nil {
			t.Errorf("Creating pod %s: %v", p.Name, err)
		}
	})
	t.Cleanup(func() {
		_ = k8sClient.DeleteAllOf(context.Background(), &corev1.Pod{}, client.InNamespace("default"), client.MatchingLabels(label), client.GracePeriodSeconds(0))
	})
	if t.Failed() {
		t.FailNow()
	}
	gated := testutil.MakeProfile(name).SchedulerSettings(schedulingv1alpha1.SchedulerSettings{FeatureGates: map[string]bool{"OpportunisticBatching": false}}).Obj()
	create(t, gated)
	first := waitForPreview(t, name, func(pv schedulingv1alpha1.PreviewStatus) bool { return pv.Pods == pods })

	// A change: the preview simulates the running configuration and the new one.
	changed := &schedulingv1alpha1.SchedulerProfile{}
	if err := k8sClient.Get(ctx, client.ObjectKey{Name: name}, changed); err != nil {
		t.Fatal(err)
	}
	changed.Spec.PercentageOfNodesToScore = ptr.To[int32](50)
	if err := k8sClient.Update(ctx, changed); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond) // the profile's pass asks for the preview
	durations := make([]time.Duration, 0, reviews)
	began := time.Now()
	for i := range reviews {
		p := testutil.MakeProfile(fmt.Sprintf("ungated-review-%d", i)).Obj()
		p.Spec.PercentageOfNodesToScore = ptr.To(int32(i + 1)) // a configuration not validated before
		start := time.Now()
		err := k8sClient.Create(ctx, p, client.DryRunAll)
		took := time.Since(start)
		if err != nil {
			t.Errorf("Review %d refused after %s: %v", i, took.Round(time.Millisecond), err)
		}
		durations = append(durations, took)
	}
	ended := time.Now()
	pv := waitForPreview(t, name, func(pv schedulingv1alpha1.PreviewStatus) bool { return pv.To.ConfigHash != first.To.ConfigHash })
	previewEnd := pv.StartTime.Add(time.Duration(pv.DurationMilliseconds)*time.Millisecond + time.Second) // startTime is in seconds
	if !previewEnd.After(began) || pv.StartTime.After(ended) {
		t.Fatalf("The preview (from %s, %d ms) did not run while the reviews did (%s to %s): nothing was measured", pv.StartTime, pv.DurationMilliseconds, began.Format(time.RFC3339Nano), ended.Format(time.RFC3339Nano))
	}
	slices.Sort(durations)
	p50, p99 := durations[reviews/2-1], durations[reviews*99/100-1]
	t.Logf("%d dry-run reviews during a gated preview of %d pods on %d nodes (%d ms): p50 %s, p99 %s", reviews, pv.Pods, nodes, pv.DurationMilliseconds, p50.Round(time.Millisecond), p99.Round(time.Millisecond))
	if p99 >= time.Second {
		t.Errorf("p99 %s, want under 1 s", p99)
	}
}

// waitForPreview waits until the profile's status.preview satisfies done, and returns it.
func waitForPreview(t *testing.T, name string, done func(schedulingv1alpha1.PreviewStatus) bool) schedulingv1alpha1.PreviewStatus {
	t.Helper()
	var pv schedulingv1alpha1.PreviewStatus
	err := testutil.Poll(t.Context(), 2*time.Minute, func(ctx context.Context) error {
		p := &schedulingv1alpha1.SchedulerProfile{}
		if err := k8sClient.Get(ctx, client.ObjectKey{Name: name}, p); err != nil {
			return err
		}
		if pv = p.Status.Preview; !done(pv) {
			return fmt.Errorf("status.preview = %+v", pv)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return pv
}
