package simulate

import "testing"

// TestOneFencePerPod: a pod that binds at once costs one fence, a round trip of an update
// through the scheduler's informer: the fence after its creation, which follows the binding of
// the pod before it too. Once every pod created is bound, the simulation has nothing left to do
// whatever the informer has handled, and waits for it no more.
func TestOneFencePerPod(t *testing.T) {
	c, w := tiesCase()
	s, bs := simulateDefault(t, c, w, false)
	for _, r := range s.results(bs) {
		if r.Node == "" {
			t.Fatalf("pod %s is unschedulable (%s): every pod of the case binds", r.Pod, r.Reason)
		}
	}
	if s.fenceAt != len(w.Pods) {
		t.Fatalf("%d fences for %d pods that bind at once, want one per pod", s.fenceAt, len(w.Pods))
	}
}
