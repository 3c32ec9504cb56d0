package webhook

import (
	"path/filepath"
	"slices"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
)

// TestDryRunLatency measures what a user waits for at `kubectl apply --dry-run=server` of a
// profile on a real apiserver: the request, the CRD's validation, and the webhook's review (its
// list of the stored profiles' metadata from the apiserver, its reads of the cache, rendering,
// validation). It logs the 50th and
// 99th percentiles of 200 dry-run creates of the node-pool sample.
func TestDryRunLatency(t *testing.T) {
	const rounds = 200
	objs := readObjects(t, filepath.Join("..", "..", "..", "config", "samples", "scheduling_v1alpha1_schedulerprofile_nodepool.yaml"))
	p := objs[0].(*schedulingv1alpha1.SchedulerProfile)
	durations := make([]time.Duration, 0, rounds)
	for range rounds {
		start := time.Now()
		if err := k8sClient.Create(t.Context(), p.DeepCopy(), client.DryRunAll); err != nil {
			t.Fatal(err)
		}
		durations = append(durations, time.Since(start))
	}
	slices.Sort(durations)
	p50, p99 := durations[rounds/2-1], durations[rounds*99/100-1]
	t.Logf("Dry-run create of a profile through the webhook, %d rounds: p50 %s, p99 %s", rounds, p50.Round(10*time.Microsecond), p99.Round(10*time.Microsecond))
	// The webhook's timeout is 5s; a review that takes a large part of it is a regression.
	if p99 > time.Second {
		t.Errorf("p99 %s, want under 1s", p99)
	}
}
