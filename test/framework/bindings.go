package framework

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/schedops/scheduler-profile-operator/internal/testutil"
)

// CreatePods creates the pod newPod(i) for i = 0, 1, ... every interval until the returned function
// is called; that returns the names of the pods created.
func CreatePods(t testing.TB, c client.Client, interval time.Duration, newPod func(i int) *corev1.Pod) func() []string {
	ctx, cancel := context.WithCancel(t.Context())
	var names []string
	var err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		ticker := time.NewTicker(interval)
		defer ticker.Stop()
		for i := 0; ; i++ {
			pod := newPod(i)
			if err = c.Create(ctx, pod); err != nil {
				return
			}
			names = append(names, pod.Name)
			select {
			case <-ctx.Done():
				return
			case <-ticker.C:
			}
		}
	}()
	return func() []string {
		cancel()
		<-done
		if err != nil && ctx.Err() == nil {
			t.Fatalf("creating pods: %v", err)
		}
		return names
	}
}

// Bindings records when the test watches each pod become bound.
type Bindings struct {
	mu sync.Mutex
	at map[string]time.Time
}

// WatchBindings watches the pods in namespace with the labels and records when each one is first
// seen bound. The apiserver is local, so the time a watch event arrives is the time of the binding
// within milliseconds (the PodScheduled condition has only a one-second resolution).
func WatchBindings(t testing.TB, cfg *rest.Config, c client.Client, namespace string, labels map[string]string) *Bindings {
	t.Helper()
	watcher, err := client.NewWithWatch(cfg, client.Options{Scheme: c.Scheme()})
	if err != nil {
		t.Fatal(err)
	}
	w, err := watcher.Watch(t.Context(), &corev1.PodList{}, client.InNamespace(namespace), client.MatchingLabels(labels))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(w.Stop)
	b := &Bindings{at: map[string]time.Time{}}
	go func() {
		for ev := range w.ResultChan() {
			pod, ok := ev.Object.(*corev1.Pod)
			if !ok || pod.Spec.NodeName == "" {
				continue
			}
			b.mu.Lock()
			if _, seen := b.at[pod.Name]; !seen {
				b.at[pod.Name] = time.Now()
			}
			b.mu.Unlock()
		}
	}()
	return b
}

// Wait waits until every pod was seen bound and returns the binding times, in order.
func (b *Bindings) Wait(t testing.TB, pods []string, timeout time.Duration) []time.Time {
	t.Helper()
	var times []time.Time
	testutil.Eventually(t, timeout, fmt.Sprintf("%d pods to be bound", len(pods)), func(context.Context) error {
		b.mu.Lock()
		defer b.mu.Unlock()
		times = times[:0]
		for _, name := range pods {
			at, ok := b.at[name]
			if !ok {
				return fmt.Errorf("pod %s is not bound (%d of %d are)", name, len(b.at), len(pods))
			}
			times = append(times, at)
		}
		return nil
	})
	slices.SortFunc(times, func(a, b time.Time) int { return a.Compare(b) })
	return times
}

// LongestGap returns the longest time between two consecutive bindings and when it ended.
func LongestGap(times []time.Time) (time.Duration, time.Time) {
	var gap time.Duration
	var end time.Time
	for i := 1; i < len(times); i++ {
		if d := times[i].Sub(times[i-1]); d > gap {
			gap, end = d, times[i]
		}
	}
	return gap, end
}
