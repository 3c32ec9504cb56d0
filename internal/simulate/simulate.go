// Package simulate schedules a workload on a snapshot of a cluster with the scheduler the
// operator would roll out for a profile, in this process, and reports where each pod lands.
//
// The scheduler is built by profile.NewSchedulerOn, the code that validation builds it with (our
// registry, the profile's args and feature gates), on a fake clientset that holds the snapshot.
// Pods are created one at a time in the order of the profile's queue sort, and each is scheduled
// by the scheduler's own ScheduleOne before the next is created; a binding is written into the
// fake clientset, so that the scheduler's informers and cache see it as they would a real one.
//
// Upstream breaks ties between nodes of equal score by the order in which Filter found them
// (a Randomizer is drawn only for extenders' scores), and Filter runs on several goroutines, so
// that order changes from run to run. The simulation runs the scheduler with parallelism 1,
// which makes Filter visit the nodes in the scheduler's own order (by zone, then by name) and
// every run give the same placements. Extenders are not called: they are services of the
// cluster, and a simulation writes nothing and calls nothing.
package simulate

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	schedulerconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/utils/ptr"

	"github.com/schedops/scheduler-profile-operator/scheduler/profile"
)

// podTimeout is how long one pod may take to be bound or refused. A pod that a PreEnqueue
// plugin holds back never reaches the queue, and is reported so after it.
const podTimeout = 10 * time.Second

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
}

// Run schedules workload on cluster with the scheduler of p, one pod at a time.
func Run(ctx context.Context, p Profile, cluster *Cluster, workload *Workload) ([]PodResult, error) {
	var results []PodResult
	var runErr error
	if err := profile.WithGates(p.FeatureGates, func() { results, runErr = run(ctx, p, cluster, workload) }); err != nil {
		return nil, err
	}
	return results, runErr
}

func run(ctx context.Context, p Profile, cluster *Cluster, workload *Workload) ([]PodResult, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cfg, err := profile.DecodeConfig(p.Config)
	if err != nil {
		return nil, fmt.Errorf("profile %s: %w", p.Name, err)
	}
	s, err := newSimulation(ctx, cfg, append(cluster.objectsExceptPending(), workload.Controllers...))
	if err != nil {
		return nil, fmt.Errorf("profile %s: %w", p.Name, err)
	}
	pods, err := s.queueOrder(workload.Pods, cluster)
	if err != nil {
		return nil, fmt.Errorf("profile %s: %w", p.Name, err)
	}
	go func() {
		for ctx.Err() == nil {
			s.sched.ScheduleOne(ctx)
		}
	}()
	results := make([]PodResult, 0, len(pods))
	for _, batch := range batches(pods) {
		r, err := s.schedule(ctx, batch)
		if err != nil {
			return nil, fmt.Errorf("profile %s: %w", p.Name, err)
		}
		results = append(results, r...)
	}
	return results, nil
}

// batches are the pods to create together: one pod, or all the pods of the workload that join
// one PodGroup, where the first of them is in the queue order. A gang's pods wait in the queue
// (PreEnqueue) until enough of them exist, and the scheduler then binds them all or none.
func batches(pods []*corev1.Pod) [][]*corev1.Pod {
	var out [][]*corev1.Pod
	group := map[string]int{}
	for _, pod := range pods {
		g := pod.Spec.SchedulingGroup
		if g == nil || g.PodGroupName == nil {
			out = append(out, []*corev1.Pod{pod})
			continue
		}
		key := pod.Namespace + "/" + *g.PodGroupName
		i, ok := group[key]
		if !ok {
			i = len(out)
			group[key] = i
			out = append(out, nil)
		}
		out[i] = append(out[i], pod)
	}
	return out
}

// simulation is one scheduler on a fake clientset, with the outcome of each pod's cycle.
type simulation struct {
	client    *fake.Clientset
	sched     *profile.FakeScheduler
	names     []string
	outcomes  chan PodResult
	firstName string
}

// newSimulation builds the scheduler of cfg on a fake clientset holding objs, starts its
// informers and waits until its cache holds them.
func newSimulation(ctx context.Context, cfg *schedulerconfig.KubeSchedulerConfiguration, objs []runtime.Object) (*simulation, error) {
	// One goroutine for Filter: the nodes are visited in order, so ties break the same way
	// every run (see the package comment). No extenders: they are not called.
	cfg.Parallelism = 1
	cfg.Extenders = nil
	// The clientset without field management: NewClientset's tracker builds a REST mapper on
	// every request, which took half the CPU of a simulation.
	s := &simulation{client: fake.NewSimpleClientset(objs...), outcomes: make(chan PodResult, 1)}
	for _, prof := range cfg.Profiles {
		s.names = append(s.names, prof.SchedulerName)
	}
	s.firstName = s.names[0]
	s.client.PrependReactor("create", "pods", s.bind)
	sched, err := profile.NewSchedulerOn(ctx, cfg, nil, s.client)
	if err != nil {
		return nil, err
	}
	s.sched = sched
	sched.FailureHandler = s.failed
	if err := sched.StartInformers(ctx); err != nil {
		return nil, err
	}
	if sched.APIDispatcher != nil {
		sched.APIDispatcher.Run(klog.FromContext(ctx))
	}
	return s, nil
}

// bind records a binding into the fake clientset, which keeps none of its own, and reports it.
func (s *simulation) bind(action clienttesting.Action) (bool, runtime.Object, error) {
	create, ok := action.(clienttesting.CreateAction)
	if !ok || action.GetSubresource() != "binding" {
		return false, nil, nil
	}
	binding, ok := create.GetObject().(*corev1.Binding)
	if !ok {
		return false, nil, nil
	}
	gvr := corev1.SchemeGroupVersion.WithResource("pods")
	obj, err := s.client.Tracker().Get(gvr, binding.Namespace, binding.Name)
	if err != nil {
		return true, nil, err
	}
	pod := obj.(*corev1.Pod).DeepCopy()
	pod.Spec.NodeName = binding.Target.Name
	if err := s.client.Tracker().Update(gvr, pod, pod.Namespace); err != nil {
		return true, nil, err
	}
	s.outcomes <- PodResult{Pod: binding.Namespace + "/" + binding.Name, SchedulerName: pod.Spec.SchedulerName, Node: binding.Target.Name}
	return true, binding, nil
}

// failed records a pod the scheduler did not bind, with its message, instead of putting the pod
// back into the queue: each pod is tried once, in order.
func (s *simulation) failed(ctx context.Context, _ framework.Framework, podInfo *framework.QueuedPodInfo, status *fwk.Status, _ *fwk.NominatingInfo, _ time.Time) {
	pod := podInfo.Pod
	s.sched.SchedulingQueue.Done(pod.UID)
	reason := status.Message()
	var fitErr *framework.FitError
	if err := status.AsError(); errors.As(err, &fitErr) {
		reason = fitErr.Error()
	}
	select {
	case s.outcomes <- PodResult{Pod: pod.Namespace + "/" + pod.Name, SchedulerName: pod.Spec.SchedulerName, Reason: reason}:
	case <-ctx.Done():
	}
}

// schedule creates the pods of a batch and waits for the scheduler to bind or refuse each.
func (s *simulation) schedule(ctx context.Context, batch []*corev1.Pod) ([]PodResult, error) {
	results := make(map[string]PodResult, len(batch))
	waiting := 0
	for _, pod := range batch {
		key := podKey(pod)
		if len(pod.Spec.SchedulingGates) > 0 {
			results[key] = PodResult{Pod: key, SchedulerName: pod.Spec.SchedulerName, Reason: fmt.Sprintf("the pod has scheduling gates (%s)", pod.Spec.SchedulingGates[0].Name)}
			continue
		}
		if _, err := s.client.CoreV1().Pods(pod.Namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			return nil, fmt.Errorf("creating pod %s: %w", key, err)
		}
		waiting++
	}
	timer := time.NewTimer(podTimeout)
	defer timer.Stop()
	for ; waiting > 0; waiting-- {
		select {
		case r := <-s.outcomes:
			if _, ok := results[r.Pod]; ok || !inBatch(batch, r.Pod) {
				return nil, fmt.Errorf("the scheduler scheduled %s while it was not expected", r.Pod)
			}
			results[r.Pod] = r
		case <-timer.C:
			waiting = 0
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	out := make([]PodResult, 0, len(batch))
	for _, pod := range batch {
		r, ok := results[podKey(pod)]
		if !ok {
			r = PodResult{Pod: podKey(pod), SchedulerName: pod.Spec.SchedulerName, Reason: fmt.Sprintf("the pod did not reach the scheduling queue in %s (a PreEnqueue plugin holds it back, e.g. a gang with fewer pods than its minCount)", podTimeout)}
		}
		out = append(out, r)
	}
	return out, nil
}

func inBatch(batch []*corev1.Pod, key string) bool {
	return slices.ContainsFunc(batch, func(p *corev1.Pod) bool { return podKey(p) == key })
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
	v, ok := classes[pod.Spec.PriorityClassName]
	switch {
	case ok:
		pod.Spec.Priority = &v
	case pod.Spec.PriorityClassName == "system-node-critical":
		pod.Spec.Priority = ptr.To(int32(2000001000))
	case pod.Spec.PriorityClassName == "system-cluster-critical":
		pod.Spec.Priority = ptr.To(int32(2000000000))
	case pod.Spec.PriorityClassName != "":
		return fmt.Errorf("pod %s/%s names PriorityClass %s, which is not in the cluster", pod.Namespace, pod.Name, pod.Spec.PriorityClassName)
	}
	return nil
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
