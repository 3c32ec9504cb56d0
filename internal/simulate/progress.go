package simulate

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// podTimeout is how long a wait for pods may take: for a pod to be taken from the queue, or to
// be bound or refused. A pod that a PreEnqueue plugin holds back never reaches the queue, and is
// reported so after it.
const podTimeout = 10 * time.Second

// Reasons of the pods that a wait gave up on.
var (
	notTaken   = fmt.Sprintf("the pod did not reach the scheduling queue in %s (a PreEnqueue plugin holds it back, e.g. a gang with fewer pods than its minCount)", podTimeout)
	notDecided = fmt.Sprintf("the scheduler neither bound nor refused the pod in %s", podTimeout)
)

// progress is what the scheduler has done with the workload's pods so far: which pods it took
// from its queue, and which it bound or refused. The scheduler's goroutines record into it, and
// the simulation waits on it.
type progress struct {
	mu       sync.Mutex
	expected map[string]bool
	taken    map[string]bool
	results  map[string]PodResult
	// nominations counts the preemptions of each pod, and nominated is the node of its last.
	nominations map[string]int
	nominated   map[string]string
	// evicted are the pods deleted from each node, not yet given to the pod nominated there.
	evicted map[string][]string
	// err is the first thing the scheduler did that the simulation did not expect.
	err error
	// changed holds a value once something was recorded since the last wait looked.
	changed chan struct{}
}

func newProgress() *progress {
	return &progress{
		expected:    map[string]bool{},
		taken:       map[string]bool{},
		results:     map[string]PodResult{},
		nominations: map[string]int{},
		nominated:   map[string]string{},
		evicted:     map[string][]string{},
		changed:     make(chan struct{}, 1),
	}
}

// expect records that a pod was created, so that the scheduler may take and decide it.
func (p *progress) expect(key string) {
	p.record(func() { p.expected[key] = true })
}

// take records that the scheduler took a pod from its queue.
func (p *progress) take(key string) {
	p.record(func() {
		if !p.expected[key] && p.err == nil {
			p.err = fmt.Errorf("the scheduler took %s from its queue while it was not expected", key)
		}
		p.taken[key] = true
	})
}

// decide records that the scheduler bound or refused a pod, with the pods its preemption
// evicted.
func (p *progress) decide(r PodResult) {
	p.record(func() {
		if _, ok := p.results[r.Pod]; (ok || !p.expected[r.Pod]) && p.err == nil {
			p.err = fmt.Errorf("the scheduler scheduled %s while it was not expected", r.Pod)
		}
		if node, ok := p.nominated[r.Pod]; ok {
			r.Preempted = p.evicted[node]
			delete(p.evicted, node)
			delete(p.nominated, r.Pod)
		}
		p.results[r.Pod] = r
	})
}

// nominate records that a pod's preemption evicts pods on node, and returns how many times the
// pod has preempted.
func (p *progress) nominate(key, node string) int {
	var n int
	p.record(func() {
		p.nominations[key]++
		n = p.nominations[key]
		p.nominated[key] = node
	})
	return n
}

// evict records that a pod on node was deleted: a victim of the pod nominated there.
func (p *progress) evict(key, node string) {
	p.record(func() { p.evicted[node] = append(p.evicted[node], key) })
}

// give records the result of a pod that the scheduler is not asked about.
func (p *progress) give(r PodResult) {
	p.record(func() { p.results[r.Pod] = r })
}

func (p *progress) record(f func()) {
	p.mu.Lock()
	f()
	p.mu.Unlock()
	select {
	case p.changed <- struct{}{}:
	default:
	}
}

// isDecided and isTaken tell, under p.mu, whether the scheduler has done that with a pod.
func (p *progress) isDecided(key string) bool {
	_, ok := p.results[key]
	return ok
}

func (p *progress) isTaken(key string) bool { return p.taken[key] || p.isDecided(key) }

// wait returns once done holds for each of keys. Those for which it does not hold within
// podTimeout get reason as their result.
func (p *progress) wait(ctx context.Context, keys []string, done func(key string) bool, reason string) error {
	timer := time.NewTimer(podTimeout)
	defer timer.Stop()
	for {
		p.mu.Lock()
		err := p.err
		pending := p.pending(keys, done)
		p.mu.Unlock()
		if err != nil || len(pending) == 0 {
			return err
		}
		select {
		case <-p.changed:
		case <-timer.C:
			for _, key := range pending {
				p.give(PodResult{Pod: key, Reason: reason})
			}
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

func (p *progress) pending(keys []string, done func(key string) bool) []string {
	var out []string
	for _, key := range keys {
		if !done(key) {
			out = append(out, key)
		}
	}
	return out
}

// result is what became of a pod of the workload.
func (p *progress) result(pod *corev1.Pod) PodResult {
	p.mu.Lock()
	defer p.mu.Unlock()
	r := p.results[podKey(pod)]
	r.SchedulerName = pod.Spec.SchedulerName
	return r
}
