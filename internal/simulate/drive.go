package simulate

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
)

// The simulation drives the scheduler one cycle at a time, on its own goroutine: it calls
// ScheduleOne only when the scheduler is at rest and its queue has a pod to hand out, so that
// each cycle sees the same cluster, queue and nominations in every run, whatever the load of
// the machine. Waits end on what the scheduler records (a binding, a failure, an update its
// queue took), never on a timer.

// Reasons of the pods that the scheduler never decided, given once it had nothing left to do.
const (
	notTaken     = "the pod did not reach the scheduling queue (a PreEnqueue plugin holds it back, e.g. a gang with fewer pods than its minCount)"
	notRetried   = "the pod preempted pods on node %s, and the scheduling queue did not let it be tried again"
	permitReject = "the pod waited at Permit while the scheduler had no other pod to schedule"
)

// drain has the scheduler schedule until it has nothing left to do: no pod in its queue to
// hand out, no nominated pod to try again, no pod waiting at Permit.
func (s *simulation) drain(ctx context.Context) error {
	for {
		if err := s.settle(ctx); err != nil {
			return err
		}
		// Before each cycle: a limit spent since the last tick stops the simulation here.
		s.cpu.check()
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if s.retryNominated(ctx) || s.ready(ctx) {
			// Each cycle starts once the scheduler has handled every write (see settle).
			if s.writes.Load() != s.fenced {
				if err := s.fenceWrites(ctx); err != nil {
					return err
				}
				continue
			}
			s.sched.ScheduleOne(ctx)
			continue
		}
		if s.rejectWaiting() {
			continue
		}
		// No pod was waiting at Permit when rejectWaiting looked, but one that waited when the
		// scheduler was last at rest may have been allowed since, and be binding: the scheduler
		// has nothing left to do only if it is at rest again with nothing to hand out and no
		// pod waiting.
		if err := s.settle(ctx); err != nil {
			return err
		}
		if !s.retryNominated(ctx) && !s.ready(ctx) && !s.anyWaiting() {
			return nil
		}
	}
}

// anyWaiting tells whether a pod the scheduler took waits at Permit.
func (s *simulation) anyWaiting() bool {
	return slices.ContainsFunc(s.progress.inCycle(), func(key string) bool { return s.waitingPod(key) != nil })
}

// settle returns once the scheduler is at rest: every pod it took is bound, refused, waiting at
// Permit, or nominated with its nomination in the pod's status; and its pod event handler has
// handled every write into the cluster made until then, the evictions of a preemption included.
//
// Once every pod created is decided, and none waits for its retry, the handler need not have
// handled the last writes (a binding) yet: the scheduler's queue holds no pod of the workload
// then, only the gated fence, so that no write moves a pod into it and there is nothing left to
// do whatever the handler has handled. The fence before the next cycle, after the next pods are
// created, follows those writes too.
func (s *simulation) settle(ctx context.Context) error {
	if err := s.progress.until(ctx, s.atRest); err != nil {
		return err
	}
	if s.progress.settled() {
		return nil
	}
	return s.fenceWrites(ctx)
}

// atRest tells whether every pod the scheduler took is decided, waiting at Permit or nominated
// with status.nominatedNodeName written.
func (s *simulation) atRest() bool {
	for _, key := range s.progress.inCycle() {
		if s.waitingPod(key) == nil {
			return false
		}
	}
	pods := s.sched.Informers.Core().V1().Pods().Lister()
	for key, node := range s.progress.waiting() {
		created := s.created[key]
		pod, err := pods.Pods(created.Namespace).Get(created.Name)
		if err != nil || pod.Status.NominatedNodeName != node {
			return false
		}
	}
	return true
}

// fenceWrites updates the fence pod and waits until the scheduler's queue took the update. The
// scheduler's pod informer hands the events of every pod to one handler, in the order of the
// writes, so that by then it has handled every earlier write: its cache and queue hold them.
// The fence has a scheduling gate: its update moves no other pod. When nothing was written
// since the last fence, the handler has handled every write already, and there is no fence.
func (s *simulation) fenceWrites(ctx context.Context) error {
	writes := s.writes.Load()
	if writes == s.fenced {
		return nil
	}
	s.fenced = writes
	s.fenceAt++
	n := s.fenceAt
	pod := s.fence.DeepCopy()
	pod.Labels["version"] = strconv.Itoa(n)
	pod.ResourceVersion = "fence-" + strconv.Itoa(n)
	if err := s.client.Tracker().Update(corev1.SchemeGroupVersion.WithResource("pods"), pod, pod.Namespace); err != nil {
		return fmt.Errorf("updating the fence pod: %w", err)
	}
	return s.progress.until(ctx, func() bool { return s.progress.sawFenceAt(n) })
}

// retryNominated moves the pod that was nominated first, once its victims are gone (the fence
// saw to that), into the active queue, past its backoff: the simulation has no clock to wait
// on. It tells whether the queue then has a pod to hand out.
func (s *simulation) retryNominated(ctx context.Context) bool {
	key, ok := s.progress.firstNominated()
	if !ok {
		return false
	}
	s.queue.Activate(klog.FromContext(ctx), map[string]*corev1.Pod{key: s.created[key]})
	return len(s.queue.PodsInActiveQ()) > 0
}

// ready tells whether the queue has a pod to hand out. A pod that backs off is moved to the
// active queue first, as the queue's flush would once its backoff ends.
func (s *simulation) ready(ctx context.Context) bool {
	if len(s.queue.PodsInActiveQ()) > 0 {
		return true
	}
	backoff := s.queue.PodsInBackoffQ()
	if len(backoff) == 0 {
		return false
	}
	pods := make(map[string]*corev1.Pod, len(backoff))
	for _, p := range backoff {
		pods[podKey(p)] = p
	}
	s.queue.Activate(klog.FromContext(ctx), pods)
	return len(s.queue.PodsInActiveQ()) > 0
}

// rejectWaiting rejects the pods waiting at Permit, in the order of their names, when the
// scheduler has nothing else to do: no later cycle can allow them, and upstream would reject
// them when their wait times out. It tells whether there were any.
func (s *simulation) rejectWaiting() bool {
	keys := s.progress.inCycle()
	slices.Sort(keys)
	rejected := false
	for _, key := range keys {
		if wp := s.waitingPod(key); wp != nil {
			wp.Reject("Simulation", permitReject)
			rejected = true
		}
	}
	return rejected
}

// waitingPod is the pod of key waiting at Permit in any profile, or nil.
func (s *simulation) waitingPod(key string) fwk.WaitingPod {
	uid := simulatedUID(key)
	for _, f := range s.sched.Profiles {
		if wp := f.GetWaitingPod(uid); wp != nil {
			return wp
		}
	}
	return nil
}

// holdBack gives the pods of a batch that the scheduler left undecided, once it had nothing
// left to do, their reason, and deletes them from the cluster so that no later event brings
// them back.
func (s *simulation) holdBack(keys []string) error {
	waiting := s.progress.waiting()
	gvr := corev1.SchemeGroupVersion.WithResource("pods")
	for _, key := range keys {
		if s.progress.isDecided(key) {
			continue
		}
		pod := s.created[key]
		reason := notTaken
		if node, ok := waiting[key]; ok {
			reason = fmt.Sprintf(notRetried, node)
		}
		s.progress.give(PodResult{Pod: key, SchedulerName: pod.Spec.SchedulerName, Reason: reason})
		err := s.client.Tracker().Delete(gvr, pod.Namespace, pod.Name)
		s.writes.Add(1)
		if err != nil {
			return fmt.Errorf("deleting pod %s: %w", key, err)
		}
	}
	return nil
}

// simulatedUID is the UID of the workload's pod of key.
func simulatedUID(key string) types.UID { return types.UID("simulated/" + key) }
