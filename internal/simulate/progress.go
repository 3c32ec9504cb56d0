package simulate

import (
	"context"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
)

// progress is what the scheduler has done with the workload's pods so far: which pods are in a
// scheduling or binding cycle, and which it bound, refused or nominated. The scheduler's
// goroutines record into it, and the simulation waits on it: every wait ends on something the
// scheduler did, never on a timer.
type progress struct {
	mu       sync.Mutex
	expected map[string]bool
	// undecided are the pods created that have no result yet.
	undecided map[string]bool
	// cycle are the pods the scheduler took from its queue and has not yet bound, refused or
	// nominated: their scheduling or binding cycle runs.
	cycle   map[string]bool
	results map[string]PodResult
	// nominations counts the preemptions of each pod, and nominated is the node of a pod that
	// waits for its retry there.
	nominations map[string]int
	nominated   map[string]string
	// order numbers the nominations, so that the first is retried first.
	order   map[string]int
	ordered int
	// evicted are the pods deleted from each node, not yet given to the pod nominated there.
	evicted map[string][]string
	// fence is the last version of the fence pod that the scheduler's pod handler has seen.
	fence int
	// err is the first thing the scheduler did that the simulation did not expect.
	err error
	// changed holds a value once something was recorded since the last wait looked.
	changed chan struct{}
}

func newProgress() *progress {
	return &progress{
		expected:    map[string]bool{},
		undecided:   map[string]bool{},
		cycle:       map[string]bool{},
		results:     map[string]PodResult{},
		nominations: map[string]int{},
		nominated:   map[string]string{},
		order:       map[string]int{},
		evicted:     map[string][]string{},
		changed:     make(chan struct{}, 1),
	}
}

// expect records that a pod was created, so that the scheduler may take and decide it.
func (p *progress) expect(key string) {
	p.record(func() { p.expected[key], p.undecided[key] = true, true })
}

// take records that the scheduler took a pod from its queue.
func (p *progress) take(key string) {
	p.record(func() {
		_, decided := p.results[key]
		if (!p.expected[key] || decided) && p.err == nil {
			p.err = fmt.Errorf("the scheduler took %s from its queue while it was not expected", key)
		}
		p.cycle[key] = true
		delete(p.nominated, key)
	})
}

// decide records that the scheduler bound or refused a pod, with the pods its preemption
// evicted.
func (p *progress) decide(r PodResult) {
	p.record(func() {
		if _, ok := p.results[r.Pod]; (ok || !p.expected[r.Pod]) && p.err == nil {
			p.err = fmt.Errorf("the scheduler scheduled %s while it was not expected", r.Pod)
		}
		if p.nominations[r.Pod] > 0 && r.Node != "" {
			r.Preempted = p.evicted[r.Node]
			delete(p.evicted, r.Node)
		}
		delete(p.cycle, r.Pod)
		delete(p.nominated, r.Pod)
		delete(p.undecided, r.Pod)
		p.results[r.Pod] = r
	})
}

// nominate records that a pod's preemption evicted pods on node, where it waits for its retry,
// and returns how many times the pod has preempted.
func (p *progress) nominate(key, node string) int {
	var n int
	p.record(func() {
		p.nominations[key]++
		n = p.nominations[key]
		p.nominated[key] = node
		p.ordered++
		p.order[key] = p.ordered
		delete(p.cycle, key)
	})
	return n
}

// evict records that a pod on node was deleted: a victim of the pod nominated there.
func (p *progress) evict(key, node string) {
	p.record(func() { p.evicted[node] = append(p.evicted[node], key) })
}

// give records the result of a pod that the scheduler is not asked about.
func (p *progress) give(r PodResult) {
	p.record(func() {
		delete(p.undecided, r.Pod)
		p.results[r.Pod] = r
	})
}

// sawFence records that the scheduler's pod handler saw version n of the fence pod.
func (p *progress) sawFence(n int) {
	p.record(func() { p.fence = max(p.fence, n) })
}

// notify wakes a wait to look again: the scheduler changed something that a condition reads.
func (p *progress) notify() { p.record(func() {}) }

func (p *progress) record(f func()) {
	p.mu.Lock()
	f()
	p.mu.Unlock()
	select {
	case p.changed <- struct{}{}:
	default:
	}
}

// until returns once done holds, or with the first unexpected thing the scheduler did, or
// with ctx's error. It looks again only when the scheduler has recorded something.
func (p *progress) until(ctx context.Context, done func() bool) error {
	for {
		p.mu.Lock()
		err := p.err
		p.mu.Unlock()
		if err != nil {
			return err
		}
		if done() {
			return nil
		}
		select {
		case <-p.changed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// sawFenceAt tells whether the scheduler's pod handler saw version n of the fence pod.
func (p *progress) sawFenceAt(n int) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.fence >= n
}

// settled tells whether every pod created is decided: none is undecided, in a scheduling or
// binding cycle, or waiting for its retry.
func (p *progress) settled() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.undecided) == 0 && len(p.cycle) == 0 && len(p.nominated) == 0
}

// inCycle are the pods whose scheduling or binding cycle runs.
func (p *progress) inCycle() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]string, 0, len(p.cycle))
	for key := range p.cycle {
		out = append(out, key)
	}
	return out
}

// waiting are the nominated pods that wait for their retry, and their nodes.
func (p *progress) waiting() map[string]string {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]string, len(p.nominated))
	for key, node := range p.nominated {
		out[key] = node
	}
	return out
}

// firstNominated is the pod nominated first of those that wait for their retry.
func (p *progress) firstNominated() (string, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	first, found := "", false
	for key := range p.nominated {
		if !found || p.order[key] < p.order[first] {
			first, found = key, true
		}
	}
	return first, found
}

// isDecided tells whether the scheduler bound or refused a pod, or the simulation gave its result.
func (p *progress) isDecided(key string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	_, ok := p.results[key]
	return ok
}

// result is what became of a pod of the workload, and whether anything did.
func (p *progress) result(pod *corev1.Pod) (PodResult, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	r, ok := p.results[podKey(pod)]
	r.SchedulerName = pod.Spec.SchedulerName
	return r, ok
}
