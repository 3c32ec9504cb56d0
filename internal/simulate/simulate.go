// Package simulate schedules a workload on a snapshot of a cluster with the scheduler the
// operator would roll out for a profile, in this process, and reports where each pod lands.
//
// The scheduler is built by profile.NewSchedulerOn, the code that validation builds it with (our
// registry, the profile's args and feature gates), on a fake clientset that holds the snapshot.
// Pods are created in the order of the profile's queue sort, one at a time (the pods of a
// PodGroup together), and the simulation calls the scheduler's own ScheduleOne, on its own
// goroutine, until the scheduler has nothing left to do before it creates the next (drive.go).
// A binding is written into the fake clientset, so that the scheduler's informers and cache see
// it as they would a real one.
//
// Every run gives the same report, whatever the load of the machine:
//   - No outcome depends on time. A pod is reported when the scheduler has bound it, refused it,
//     or preempted for it and then bound or refused it; waits end on what the scheduler
//     records, never on a timer. A pod the scheduler leaves undecided once it has nothing left to
//     do (a PreEnqueue plugin holds it back, a pod waits at Permit for pods that never come) is
//     reported so at that point. The only bounds are the limits on the whole simulation,
//     Options.CPULimit (CPU time) and Options.Limit (wall-clock time, a safety bound), either of
//     which stops it with a LimitError rather than give a pod a result.
//   - Each cycle starts from the same state: the simulation waits until the scheduler's pod
//     handler has handled every write made until then (a fence pod), so that its cache and queue
//     hold the bindings and evictions before the next cycle.
//   - Ties are broken the same way. Upstream breaks ties between nodes of equal score by the
//     order in which Filter found them (a Randomizer is drawn only for extenders' scores), and
//     Filter runs on several goroutines, so that order changes from run to run. The simulation's
//     Filter step visits the nodes one at a time, in the scheduler's own order (by zone, then by
//     name), and takes each node's verdict from a block of the next nodes evaluated on every core
//     (filter.go); Score and the other parallel steps, whose results go to a slot per node and
//     so do not depend on the order, run on every core. Preemption is upstream's
//     DefaultPreemption with its three chances fixed (preemption.go).
//
// A CPU time limit is a budget, not a measure of the simulation: it counts the CPU time of the
// whole process while the simulation runs (getrusage). The operator runs its previews in a worker
// process of their own (controllers/preview/preview_worker.go), where that is the simulations' alone.
// Per-thread time would miss the work the scheduler does on its other goroutines. Unlike wall-clock time, it does not grow while
// the process waits for a core, so a busy machine does not make a simulation stop earlier.
//
// Extenders are not called: they are services of the cluster, and a simulation writes nothing
// and calls nothing.
package simulate

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler"
	schedulerconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	internalqueue "k8s.io/kubernetes/pkg/scheduler/backend/queue"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/utils/ptr"

	"github.com/schedops/scheduler-profile-operator/scheduler/profile"
)

// Profile is a scheduler configuration to simulate.
type Profile struct {
	// Name names the profile in reports: the SchedulerProfile or Scheduler it was rendered from.
	Name string
	// Config is the rendered KubeSchedulerConfiguration, as the operator rolls it out.
	Config []byte
	// FeatureGates are the scheduler's --feature-gates.
	FeatureGates map[string]bool
}

// PodResult is where one pod of the workload went.
type PodResult struct {
	// Pod is namespace/name.
	Pod string `json:"pod"`
	// SchedulerName is the profile of the process that scheduled the pod.
	SchedulerName string `json:"schedulerName"`
	// Node is the node the pod was bound to, empty when it was not.
	Node string `json:"node,omitempty"`
	// Reason is the scheduler's message for a pod it did not bind.
	Reason string `json:"reason,omitempty"`
	// Preempted are the cluster's running pods, namespace/name, that the scheduler evicted from
	// Node to make room for the pod.
	Preempted []string `json:"preempted,omitempty"`
}

// GCPercent is the garbage collector's target percentage that a process whose work is
// simulations sets for itself, unless GOGC is set: `manager simulate` and the operator's preview
// worker. A scheduling cycle allocates lists per node and plugin that are garbage when it ends,
// about 570 KB per pod on 1000 nodes, and collecting at the default 100 took a fifth of a
// simulation's CPU. With 400, 5000 pods on 1000 nodes took 1.4 instead of 1.8 ms CPU per pod and
// peaked at 470 instead of 230 MB (docs/tasks/simulate-a-change.md). Run does not set it: the
// garbage collector's setting is process-wide, and the operator's own process keeps the default.
const GCPercent = 400

// DefaultLimit is the wall-clock time a simulation may take when Options leave it unset.
const DefaultLimit = 10 * time.Minute

// Options bound a simulation. Nothing else in a simulation depends on time; a simulation that
// reaches a limit returns a *LimitError.
type Options struct {
	// Limit is the wall-clock time the simulation may take, DefaultLimit when zero.
	Limit time.Duration
	// CPULimit is the CPU time, user and system, that the process may use while the simulation
	// runs; zero is no limit. It is sampled before each scheduling cycle and every 50 ms (a
	// tenth of a smaller limit), so the process may use a little more before the simulation
	// stops.
	CPULimit time.Duration
	// BothAtOnce has PreviewChange and PreviewProfile simulate the running and the new revision
	// at the same time rather than one after the other: on two cores the preview takes about a
	// quarter less time, and holds both simulations in memory at once. CPULimit still bounds the
	// two together: each stops once the process has used it. Run ignores it.
	BothAtOnce bool
	// serialFilter evaluates each node when the Filter step visits it instead of ahead of it
	// (filter.go), for the tests that compare the two.
	serialFilter bool
}

// LimitError is the error of a simulation that reached a limit before the scheduler had decided
// every pod. Run returns it with the results of the pods decided until then.
type LimitError struct {
	// Limit is the limit reached: Options.CPULimit when CPU is set, otherwise the wall-clock
	// Options.Limit.
	Limit time.Duration
	CPU   bool
	// Decided and Pods count the pods with a result, and all the workload's pods.
	Decided, Pods int
}

func (e *LimitError) Error() string {
	which := "wall-clock time limit"
	if e.CPU {
		which = "CPU time limit"
	}
	return fmt.Sprintf("the simulation stopped at its %s of %s, with %d of %d pods decided: the other %d were not simulated", which, e.Limit, e.Decided, e.Pods, e.Pods-e.Decided)
}

// Run schedules workload on cluster with the scheduler of p, one pod at a time. It changes
// neither cluster nor workload.
func Run(ctx context.Context, p Profile, cluster *Cluster, workload *Workload, opts Options) ([]PodResult, error) {
	var results []PodResult
	var runErr error
	if err := profile.WithGates(p.FeatureGates, func() { results, runErr = run(ctx, p, cluster, workload, opts) }); err != nil {
		return nil, err
	}
	return results, runErr
}

func run(ctx context.Context, p Profile, cluster *Cluster, workload *Workload, opts Options) ([]PodResult, error) {
	limit := opts.Limit
	if limit <= 0 {
		limit = DefaultLimit
	}
	timed, cancel := context.WithTimeoutCause(ctx, limit, errLimit)
	defer cancel()
	work, cancelCPU := context.WithCancelCause(timed)
	defer cancelCPU(nil)
	var cpu *cpuWatch
	if opts.CPULimit > 0 {
		var err error
		if cpu, err = watchCPU(cancelCPU, opts.CPULimit); err != nil {
			return nil, err
		}
		defer cpu.stop()
	}
	// The scheduler's logs are not the simulation's output. A logger without a sink turns each
	// of the scheduler's log calls, several per node and pod, into a nil check, where klog's
	// would check its verbosity and name a logger per Filter call.
	work = klog.NewContext(work, logr.Discard())
	var s *simulation
	var bs []batch
	err := func() error {
		cfg, err := profile.DecodeConfig(p.Config)
		if err != nil {
			return err
		}
		controllers, err := admitControllers(workload.Controllers, priorityClasses(cluster))
		if err != nil {
			return err
		}
		if s, err = newSimulation(work, cfg, append(cluster.objectsExceptPending(), controllers...), opts.serialFilter); err != nil {
			return err
		}
		s.cpu = cpu
		pods, err := s.queueOrder(workload.Pods, cluster)
		if err != nil {
			return err
		}
		bs = batches(pods)
		return s.scheduleAll(work, bs)
	}()
	if stopped := limitOf(context.Cause(work), limit, opts.CPULimit); err != nil && stopped != nil && ctx.Err() == nil {
		var results []PodResult
		if s != nil {
			results = s.results(bs)
		}
		stopped.Decided, stopped.Pods = len(results), len(workload.Pods)
		return results, stopped
	}
	if err != nil {
		return nil, fmt.Errorf("profile %s: %w", p.Name, err)
	}
	return s.results(bs), nil
}

// errLimit is the cause of a simulation's end at its wall-clock limit.
var errLimit = errors.New("the simulation reached its wall-clock time limit")

// limitOf is the error of a simulation that cause ended at its wall-clock limit wall or its CPU
// time limit cpu, without its counts; nil for another cause.
func limitOf(cause error, wall, cpu time.Duration) *LimitError {
	switch {
	case errors.Is(cause, errLimit):
		return &LimitError{Limit: wall}
	case errors.Is(cause, errCPULimit):
		return &LimitError{Limit: cpu, CPU: true}
	}
	return nil
}

// batch is pods to create together: one pod, or all the pods of the workload that join one
// PodGroup, where the first of them is in the queue order. A gang's pods wait in the queue
// (PreEnqueue) until enough of them exist, and the scheduler then binds them all or none.
type batch struct {
	pods  []*corev1.Pod
	group bool
}

// batches splits the pods, in queue order, into batches.
func batches(pods []*corev1.Pod) []batch {
	var out []batch
	group := map[string]int{}
	for _, pod := range pods {
		g := pod.Spec.SchedulingGroup
		if g == nil || g.PodGroupName == nil {
			out = append(out, batch{pods: []*corev1.Pod{pod}})
			continue
		}
		key := pod.Namespace + "/" + *g.PodGroupName
		i, ok := group[key]
		if !ok {
			i = len(out)
			group[key] = i
			out = append(out, batch{group: true})
		}
		out[i].pods = append(out[i].pods, pod)
	}
	return out
}

// simulation is one scheduler on a fake clientset, with what it has done with each pod.
type simulation struct {
	client    *fake.Clientset
	sched     *profile.FakeScheduler
	queue     *internalqueue.PriorityQueue
	names     []string
	progress  *progress
	firstName string
	// requeue is the scheduler's own handling of a pod it did not bind: back into its queue,
	// nominated to the node its preemption makes room on.
	requeue scheduler.FailureHandlerFn
	// created are the workload's pods in the simulated cluster, by key.
	created map[string]*corev1.Pod
	// fence is the fence pod and the last version written.
	fence   *corev1.Pod
	fenceAt int
	// writes counts the writes into the cluster that completed, and fenced is their count when
	// the last fence was written (see fenceWrites).
	writes atomic.Int64
	fenced int64
	// cpu is the CPU time limit, nil for none.
	cpu *cpuWatch
}

// maxNominations is how often a pod may preempt before it is reported unschedulable: each
// preemption evicts pods, and the pod is tried again once they are gone.
const maxNominations = 3

// fenceName names the fence pod: a pod of the simulated cluster that no scheduler takes (it has
// a scheduling gate), which the simulation updates to learn that the scheduler's pod handler has
// handled every earlier write (see settle).
var fenceName = types.NamespacedName{Namespace: "kube-system", Name: "scheduler-profile-operator-simulation-fence"}

// newSimulation builds the scheduler of cfg on a fake clientset holding objs, starts its
// informers and waits until its cache holds them.
func newSimulation(ctx context.Context, cfg *schedulerconfig.KubeSchedulerConfiguration, objs []k8sruntime.Object, serialFilter bool) (*simulation, error) {
	// A goroutine per core for the framework's parallel steps and for the nodes Filter
	// evaluates ahead (filter.go). No extenders: they are not called.
	cfg.Parallelism = int32(runtime.GOMAXPROCS(0))
	cfg.Extenders = nil
	s := &simulation{progress: newProgress(), created: map[string]*corev1.Pod{}}
	for _, prof := range cfg.Profiles {
		s.names = append(s.names, prof.SchedulerName)
	}
	s.firstName = s.names[0]
	s.fence = fencePod(s.firstName)
	// The clientset without field management: NewClientset's tracker builds a REST mapper on
	// every request, which took half the CPU of a simulation.
	s.client = fake.NewSimpleClientset(append(objs, s.fence.DeepCopy())...)
	s.client.PrependReactor("*", "*", s.counted(clienttesting.ObjectReaction(s.client.Tracker())))
	s.client.PrependReactor("create", "pods", s.bind)
	s.client.PrependReactor("delete", "pods", s.evicted)
	sched, err := profile.NewSchedulerOn(ctx, cfg, withExactPreemption(cfg), s.client)
	if err != nil {
		return nil, err
	}
	for name, f := range sched.Profiles {
		in := inOrder{Framework: f}
		if !serialFilter {
			in.ahead = &filterAhead{f: f, percentage: ptr.Deref(cfg.PercentageOfNodesToScore, 0)}
		}
		sched.Profiles[name] = in
	}
	s.sched = sched
	if err := s.watch(); err != nil {
		return nil, err
	}
	if err := sched.StartInformers(ctx); err != nil {
		return nil, err
	}
	if sched.APIDispatcher != nil {
		sched.APIDispatcher.Run(klog.FromContext(ctx))
	}
	return s, nil
}

// fencePod is the fence: a pending pod of schedulerName that no scheduler takes, for it has a
// scheduling gate.
func fencePod(schedulerName string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: fenceName.Namespace, Name: fenceName.Name, UID: "simulation/fence", Labels: map[string]string{"version": "0"}},
		Spec: corev1.PodSpec{
			SchedulerName:   schedulerName,
			SchedulingGates: []corev1.PodSchedulingGate{{Name: "schedops.io/simulation-fence"}},
			Containers:      []corev1.Container{{Name: "fence", Image: "none"}},
		},
	}
}

// watch puts the simulation between the scheduler and what tells it about pods: it records the
// pods the scheduler takes from its queue, the updates its queue takes, the pods it fails, and
// the updates of pods in its informer.
func (s *simulation) watch() error {
	sched := s.sched
	queue, ok := sched.SchedulingQueue.(*internalqueue.PriorityQueue)
	if !ok {
		return fmt.Errorf("the scheduler's queue is a %T, not upstream's PriorityQueue", sched.SchedulingQueue)
	}
	s.queue = queue
	sched.SchedulingQueue = watchedQueue{SchedulingQueue: queue, s: s}
	s.requeue = sched.FailureHandler
	sched.FailureHandler = s.failed
	next := sched.NextEntity
	sched.NextEntity = func(logger klog.Logger) (framework.QueuedEntityInfo, error) {
		entity, err := next(logger)
		if entity != nil {
			entity.ForEachPodInfo(func(info *framework.QueuedPodInfo) bool {
				if info.Pod != nil {
					s.progress.take(podKey(info.Pod))
				}
				return true
			})
		}
		return entity, err
	}
	// A pod's status written by the scheduler (a nomination) reaches the informer's store, which
	// a wait reads, before any handler hears of it.
	_, err := sched.Informers.Core().V1().Pods().Informer().AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, _ any) { s.progress.notify() },
	})
	return err
}

// watchedQueue is the scheduler's queue as its event handlers see it: each update of a pending
// pod, the fence's included, is recorded once the queue has taken it.
type watchedQueue struct {
	internalqueue.SchedulingQueue
	s *simulation
}

func (q watchedQueue) Update(ctx context.Context, oldPod, newPod *corev1.Pod) {
	q.SchedulingQueue.Update(ctx, oldPod, newPod)
	if newPod.Namespace == fenceName.Namespace && newPod.Name == fenceName.Name {
		if n, err := strconv.Atoi(newPod.Labels["version"]); err == nil {
			q.s.progress.sawFence(n)
			return
		}
	}
	q.s.progress.notify()
}

// bind records a binding into the fake clientset, which keeps none of its own, and reports it.
func (s *simulation) bind(action clienttesting.Action) (bool, k8sruntime.Object, error) {
	create, ok := action.(clienttesting.CreateAction)
	if !ok || action.GetSubresource() != "binding" {
		return false, nil, nil
	}
	binding, ok := create.GetObject().(*corev1.Binding)
	if !ok {
		return false, nil, nil
	}
	if binding.Target.Name == "" {
		// A cycle that the simulation's limit cut short found no node.
		return true, nil, fmt.Errorf("binding pod %s/%s to no node", binding.Namespace, binding.Name)
	}
	gvr := corev1.SchemeGroupVersion.WithResource("pods")
	obj, err := s.client.Tracker().Get(gvr, binding.Namespace, binding.Name)
	if err != nil {
		return true, nil, err
	}
	// Get returned a copy of its own.
	pod := obj.(*corev1.Pod)
	pod.Spec.NodeName = binding.Target.Name
	err = s.client.Tracker().Update(gvr, pod, pod.Namespace)
	s.writes.Add(1)
	if err != nil {
		return true, nil, err
	}
	s.progress.decide(PodResult{Pod: binding.Namespace + "/" + binding.Name, SchedulerName: pod.Spec.SchedulerName, Node: binding.Target.Name})
	return true, binding, nil
}

// counted is react, the fake clientset's own reaction, that counts the writes: it writes as the
// clientset would, and counts each write once it is done, so that a fence written after the
// count was read follows the write.
func (s *simulation) counted(react clienttesting.ReactionFunc) clienttesting.ReactionFunc {
	return func(action clienttesting.Action) (bool, k8sruntime.Object, error) {
		switch action.GetVerb() {
		case "get", "list", "watch":
			return false, nil, nil
		}
		handled, obj, err := react(action)
		s.writes.Add(1)
		return handled, obj, err
	}
}

// evicted records a pod that the scheduler's preemption deletes, and lets the fake clientset
// delete it: the scheduler's cache and queue see the node's room as they would in a cluster.
func (s *simulation) evicted(action clienttesting.Action) (bool, k8sruntime.Object, error) {
	del, ok := action.(clienttesting.DeleteAction)
	if !ok || action.GetSubresource() != "" {
		return false, nil, nil
	}
	obj, err := s.client.Tracker().Get(corev1.SchemeGroupVersion.WithResource("pods"), del.GetNamespace(), del.GetName())
	if err == nil && obj.(*corev1.Pod).Spec.NodeName != "" {
		s.progress.evict(del.GetNamespace()+"/"+del.GetName(), obj.(*corev1.Pod).Spec.NodeName)
	}
	return false, nil, nil
}

// failed records a pod the scheduler did not bind, with its message, instead of putting the pod
// back into the queue: each pod is tried once, in order. A pod whose preemption evicts pods to
// make room on a node goes back to the scheduler's queue as in a cluster, nominated to that
// node, so that the pods after it leave that room to it; it is tried again once they are gone.
func (s *simulation) failed(ctx context.Context, f framework.Framework, podInfo *framework.QueuedPodInfo, status *fwk.Status, nominating *fwk.NominatingInfo, start time.Time) {
	pod := podInfo.Pod
	if ctx.Err() != nil {
		// The simulation stopped at its limit, and the cycle with it: no result of the scheduler.
		return
	}
	if nominating.Mode() == fwk.ModeOverride && nominating.NominatedNodeName != "" && s.progress.nominate(podKey(pod), nominating.NominatedNodeName) <= maxNominations {
		s.requeue(ctx, f, podInfo, status, nominating, start)
		s.progress.notify()
		return
	}
	s.sched.SchedulingQueue.Done(pod.UID)
	reason := status.Message()
	var fitErr *framework.FitError
	if err := status.AsError(); errors.As(err, &fitErr) {
		reason = fitErr.Error()
	}
	s.progress.decide(PodResult{Pod: pod.Namespace + "/" + pod.Name, SchedulerName: pod.Spec.SchedulerName, Reason: reason})
}

// scheduleAll creates the pods of each batch in turn and has the scheduler schedule them until
// it has nothing left to do (drain) before it creates the next batch.
func (s *simulation) scheduleAll(ctx context.Context, batches []batch) error {
	for _, b := range batches {
		keys, err := s.create(b.pods)
		if err != nil {
			return err
		}
		if err := s.drain(ctx); err != nil {
			return err
		}
		if err := s.holdBack(keys); err != nil {
			return err
		}
		// The fake clientset keeps two copies of every request it served, the bindings among
		// them, which nothing reads.
		s.client.ClearActions()
	}
	return nil
}

// results are the results of the pods, in the order of the batches; a pod without one (the
// simulation stopped at its limit) has none.
func (s *simulation) results(batches []batch) []PodResult {
	var out []PodResult
	for _, b := range batches {
		for _, pod := range b.pods {
			if r, ok := s.progress.result(pod); ok {
				out = append(out, r)
			}
		}
	}
	return out
}

// create writes the pods of a batch into the fake clientset, where the scheduler's informers
// find them, and returns their keys. A pod with scheduling gates is not created: it is reported
// so at once.
func (s *simulation) create(pods []*corev1.Pod) ([]string, error) {
	gvr := corev1.SchemeGroupVersion.WithResource("pods")
	var keys []string
	for _, pod := range pods {
		key := podKey(pod)
		if len(pod.Spec.SchedulingGates) > 0 {
			s.progress.give(PodResult{Pod: key, SchedulerName: pod.Spec.SchedulerName, Reason: fmt.Sprintf("the pod has scheduling gates (%s)", pod.Spec.SchedulingGates[0].Name)})
			continue
		}
		// Expected before the scheduler can see it. Into the tracker itself: the clientset
		// would keep a copy of every request.
		s.progress.expect(key)
		err := s.client.Tracker().Create(gvr, pod, pod.Namespace)
		s.writes.Add(1)
		if err != nil {
			return nil, fmt.Errorf("creating pod %s: %w", key, err)
		}
		s.created[key] = pod
		keys = append(keys, key)
	}
	return keys, nil
}

// queueOrder prepares the workload's pods (namespace, UID, scheduler name, priority) and sorts
// them as the scheduler's queue sort would, had they all been created at once in the given order.
func (s *simulation) queueOrder(pods []*corev1.Pod, cluster *Cluster) ([]*corev1.Pod, error) {
	priorities := priorityClasses(cluster)
	base := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	infos := make([]*framework.QueuedPodInfo, 0, len(pods))
	seen := map[string]bool{}
	for i, p := range pods {
		pod := p.DeepCopy()
		pod.Namespace = podNamespace(pod)
		key := podKey(pod)
		if seen[key] {
			return nil, fmt.Errorf("the workload has pod %s twice", key)
		}
		seen[key] = true
		pod.UID = types.UID("simulated/" + key)
		pod.Spec.NodeName = ""
		pod.Status = corev1.PodStatus{Phase: corev1.PodPending}
		if !slices.Contains(s.names, pod.Spec.SchedulerName) {
			pod.Spec.SchedulerName = s.firstName
		}
		if err := setPriority(pod, priorities); err != nil {
			return nil, err
		}
		info, err := framework.NewPodInfo(pod)
		if err != nil {
			return nil, err
		}
		infos = append(infos, &framework.QueuedPodInfo{PodInfo: info, QueueingParams: framework.QueueingParams{Timestamp: base.Add(time.Duration(i) * time.Millisecond)}})
	}
	less := s.sched.Profiles[s.firstName].QueueSortFunc()
	slices.SortStableFunc(infos, func(a, b *framework.QueuedPodInfo) int {
		switch {
		case less(a, b):
			return -1
		case less(b, a):
			return 1
		}
		return 0
	})
	out := make([]*corev1.Pod, len(infos))
	for i, info := range infos {
		out[i] = info.Pod
	}
	return out, nil
}

// priorityClasses are the values of the cluster's PriorityClasses, and the global default's
// under "".
func priorityClasses(c *Cluster) map[string]int32 {
	out := map[string]int32{}
	for _, o := range c.Objects {
		if pc, ok := o.(*schedulingv1.PriorityClass); ok {
			out[pc.Name] = pc.Value
			if pc.GlobalDefault {
				out[""] = pc.Value
			}
		}
	}
	return out
}

// setPriority sets spec.priority from spec.priorityClassName as the Priority admission plugin
// does.
func setPriority(pod *corev1.Pod, classes map[string]int32) error {
	if pod.Spec.Priority != nil {
		return nil
	}
	v, err := admittedPriority(pod.Spec.PriorityClassName, classes, "pod "+pod.Namespace+"/"+pod.Name)
	pod.Spec.Priority = v
	return err
}

// admitControllers returns the workload's controllers as the apiserver would store them: a
// PodGroup without spec.priority gets it from spec.priorityClassName, as the Priority admission
// plugin sets it, in a copy. The scheduler refuses a pod group whose pods' priority is not the
// group's.
func admitControllers(objs []k8sruntime.Object, classes map[string]int32) ([]k8sruntime.Object, error) {
	out := make([]k8sruntime.Object, len(objs))
	for i, obj := range objs {
		out[i] = obj
		pg, ok := obj.(*schedulingv1beta1.PodGroup)
		if !ok || pg.Spec.Priority != nil {
			continue
		}
		v, err := admittedPriority(pg.Spec.PriorityClassName, classes, "PodGroup "+pg.Namespace+"/"+pg.Name)
		if err != nil {
			return nil, err
		}
		if v != nil {
			pg = pg.DeepCopy()
			pg.Spec.Priority = v
			out[i] = pg
		}
	}
	return out, nil
}

// admittedPriority is the priority the Priority admission plugin gives an object of priority
// class class: the class's value, the global default's for none, nil when there is no default.
func admittedPriority(class string, classes map[string]int32, what string) (*int32, error) {
	v, ok := classes[class]
	switch {
	case ok:
		return &v, nil
	case class == "system-node-critical":
		return ptr.To(int32(2000001000)), nil
	case class == "system-cluster-critical":
		return ptr.To(int32(2000000000)), nil
	case class != "":
		return nil, fmt.Errorf("%s names PriorityClass %s, which is not in the cluster", what, class)
	}
	return nil, nil
}

// podNamespace is a workload pod's namespace: default when the file gives none.
func podNamespace(pod *corev1.Pod) string {
	if pod.Namespace == "" {
		return metav1.NamespaceDefault
	}
	return pod.Namespace
}

// podKey is namespace/name of a workload pod.
func podKey(pod *corev1.Pod) string {
	return podNamespace(pod) + "/" + pod.Name
}
