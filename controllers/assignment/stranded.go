package assignment

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/source"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/controllers/metrics"
	"github.com/schedops/scheduler-profile-operator/scheduler/profile"
)

// The operator finds the pending pods of the whole cluster that assignment sent to a scheduler
// name nobody serves, and, where the admin allows it (--stranded-pod-grace), deletes those a
// controller owns so that it recreates them.
// +kubebuilder:rbac:groups="",resources=pods,verbs=list;delete

// Reasons of the Events about stranded pods, on the pod and on the profile that asks for the name.
const (
	// EventReasonSchedulerNotServed: pending pods were assigned to a scheduler name that no running
	// scheduler serves.
	EventReasonSchedulerNotServed = "SchedulerNotServed"
	// EventReasonStrandedPodDeleted: a stranded pod was deleted so that its controller recreates it.
	EventReasonStrandedPodDeleted = "StrandedPodDeleted"
	actionAssign                  = "Assign"
)

// DefaultStrandedInterval is how often the pending pods are looked at, besides each change of
// the served names.
const DefaultStrandedInterval = 30 * time.Second

// strandedListPage bounds the pods read per request of the list of pending pods.
const strandedListPage = 500

// strandedSelectorNames bounds the served names the list of pending pods leaves out by its field
// selector: with more, the selector would make a long request line, and the pods of the served
// names past these are read and passed over.
const strandedSelectorNames = 32

// StrandedPods finds the pods that namespace assignment stranded: pending, bound to no node,
// assigned by the policy (their annotation is "assigned", or a PodGroup's "assigned (PodGroup
// ...)") to a scheduler name no running scheduler serves. It records an Event on each when it is
// first seen, counts them by scheduler name for the metric and the profiles' status, and, with a
// grace, deletes those a controller owns once stranded that long. A pod assigned although nobody
// served its name (the namespace's fallback none) waits by the admin's choice and is not counted.
type StrandedPods struct {
	// profiles reads the profiles (the cache); pods lists pending pods and deletes (the apiserver).
	profiles client.Reader
	pods     client.Client
	recorder events.EventRecorder
	// metrics are the operator's metrics; nil records none.
	metrics  *metrics.Metrics
	grace    time.Duration
	interval time.Duration
	now      func() time.Time

	// wake asks for a pass now: the served names changed.
	wake chan struct{}
	// changed tells the profile controller of a profile whose count changed.
	changed chan event.GenericEvent

	mu sync.Mutex
	// counts are the stranded pods by scheduler name, from the latest pass.
	counts map[string]int32
	// since is when each stranded pod was first seen stranded.
	since map[types.UID]time.Time
}

// NewStrandedPods returns the finder of stranded pods: profiles reads the profiles (the cache),
// pods lists pending pods and deletes them (the apiserver), m records the metric (nil records
// none); grace 0 deletes none, interval 0 is DefaultStrandedInterval.
func NewStrandedPods(profiles client.Reader, pods client.Client, recorder events.EventRecorder, m *metrics.Metrics, grace, interval time.Duration) *StrandedPods {
	if interval <= 0 {
		interval = DefaultStrandedInterval
	}
	return &StrandedPods{profiles: profiles, pods: pods, recorder: recorder, metrics: m, grace: grace, interval: interval, now: time.Now,
		wake: make(chan struct{}, 1), changed: make(chan event.GenericEvent, 16), counts: map[string]int32{}, since: map[types.UID]time.Time{}}
}

// NeedLeaderElection is true: only the leader records, counts and deletes.
func (s *StrandedPods) NeedLeaderElection() bool { return true }

// Poke asks for a pass soon.
func (s *StrandedPods) Poke() {
	if s == nil {
		return
	}
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// Count is how many pending pods are stranded on a scheduler name.
func (s *StrandedPods) Count(name string) int32 {
	if s == nil {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.counts[name]
}

// Source enqueues the profiles whose count changed.
func (s *StrandedPods) Source() source.Source {
	return source.Channel(s.changed, &handler.EnqueueRequestForObject{})
}

// Start looks at the pending pods every interval, at each poke, and when a grace ends.
func (s *StrandedPods) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName("stranded-pods")
	for {
		next, err := s.pass(log.IntoContext(ctx, logger))
		if err != nil {
			logger.Error(err, "Looking for stranded pods")
		}
		timer := time.NewTimer(next)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil
		case <-s.wake:
		case <-timer.C:
		}
		timer.Stop()
	}
}

// pass looks at the pending pods once and returns when to look again.
func (s *StrandedPods) pass(ctx context.Context) (time.Duration, error) {
	var profiles schedulingv1alpha1.SchedulerProfileList
	if err := s.profiles.List(ctx, &profiles); err != nil {
		return s.interval, fmt.Errorf("listing SchedulerProfiles: %w", err)
	}
	served, notServed := assignmentNames(profiles.Items)
	now := s.now()
	next := s.interval
	counts := map[string]int32{}
	seen := map[types.UID]bool{}
	err := s.eachPendingPod(ctx, served, func(pod *corev1.Pod) error {
		name := pod.Spec.SchedulerName
		if served[name] || !assignedByPolicy(pod) {
			return nil
		}
		seen[pod.UID] = true
		counts[name]++
		reason, ok := notServed[name]
		if !ok {
			reason = "no SchedulerProfile has scheduler name " + name
		}
		s.mu.Lock()
		since, known := s.since[pod.UID]
		if !known {
			since = now
			s.since[pod.UID] = now
		}
		s.mu.Unlock()
		if !known {
			s.recorder.Eventf(pod, nil, corev1.EventTypeWarning, EventReasonSchedulerNotServed, actionAssign,
				"the pod was assigned to scheduler %s, which no running scheduler serves: %s; it waits Pending until one does", name, reason)
		}
		if !s.deletable(pod) {
			return nil
		}
		if wait := since.Add(s.grace).Sub(now); wait > 0 {
			next = min(next, wait)
			return nil
		}
		return s.delete(ctx, pod, name, reason)
	})
	if err != nil {
		return s.interval, err
	}
	s.mu.Lock()
	maps.DeleteFunc(s.since, func(uid types.UID, _ time.Time) bool { return !seen[uid] })
	before := s.counts
	s.counts = counts
	s.mu.Unlock()
	s.report(ctx, profiles.Items, before, counts)
	return next, nil
}

// eachPendingPod calls f with each pod of the cluster that waits for a scheduler other than the
// default one and the served names, a page at a time, so that the pending pods are never all in
// memory at once. The apiserver leaves out the pods of the served names (up to
// strandedSelectorNames of them): the pods that wait for a running scheduler, however many, are
// not sent to the operator every pass.
func (s *StrandedPods) eachPendingPod(ctx context.Context, served map[string]bool, f func(*corev1.Pod) error) error {
	selector := pendingPodsSelector(served)
	cont := ""
	for {
		var list corev1.PodList
		if err := s.pods.List(ctx, &list, client.MatchingFieldsSelector{Selector: selector}, client.Limit(strandedListPage), client.Continue(cont)); err != nil {
			return fmt.Errorf("listing pending pods: %w", err)
		}
		for i := range list.Items {
			if err := f(&list.Items[i]); err != nil {
				return err
			}
		}
		if cont = list.Continue; cont == "" {
			return nil
		}
	}
}

// pendingPodsSelector selects the pending pods bound to no node whose scheduler is neither the
// default one nor one of the first strandedSelectorNames served names, in order.
func pendingPodsSelector(served map[string]bool) fields.Selector {
	terms := []fields.Selector{fields.OneTermEqualSelector("status.phase", string(corev1.PodPending)),
		fields.OneTermEqualSelector("spec.nodeName", ""),
		fields.OneTermNotEqualSelector("spec.schedulerName", schedulingv1alpha1.DefaultSchedulerName)}
	for _, name := range slices.Sorted(maps.Keys(served)) {
		if len(terms) == 3+strandedSelectorNames {
			break
		}
		if name != schedulingv1alpha1.DefaultSchedulerName {
			terms = append(terms, fields.OneTermNotEqualSelector("spec.schedulerName", name))
		}
	}
	return fields.AndSelectors(terms...)
}

// assignedByPolicy tells the pods that the assignment policy assigned to the name they have: the
// annotation "assigned", or a PodGroup's "assigned (PodGroup ...)". "assigned although ...", the
// namespace's fallback none, waits for the name by choice.
func assignedByPolicy(pod *corev1.Pod) bool {
	note := pod.Annotations[schedulingv1alpha1.AnnotationAssignment]
	return note == "assigned" || strings.HasPrefix(note, "assigned (PodGroup ")
}

// deletable tells a stranded pod that the grace allows deleting: one a controller owns, which
// recreates it, that is not in a PodGroup (its group's decision would assign the new pod to the
// same name again).
func (s *StrandedPods) deletable(pod *corev1.Pod) bool {
	return s.grace > 0 && metav1.GetControllerOf(pod) != nil && pod.Spec.SchedulingGroup == nil && pod.DeletionTimestamp == nil
}

// delete deletes a stranded pod, unless it changed since it was read.
func (s *StrandedPods) delete(ctx context.Context, pod *corev1.Pod, name, reason string) error {
	err := s.pods.Delete(ctx, pod, client.Preconditions{UID: &pod.UID, ResourceVersion: &pod.ResourceVersion})
	switch {
	case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
		return nil
	case err != nil:
		return fmt.Errorf("deleting stranded pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	owner := metav1.GetControllerOf(pod)
	log.FromContext(ctx).Info("Deleted a stranded pod for its controller to recreate", "pod", client.ObjectKeyFromObject(pod), "schedulerName", name, "owner", owner.Kind+"/"+owner.Name)
	s.recorder.Eventf(pod, nil, corev1.EventTypeWarning, EventReasonStrandedPodDeleted, actionAssign,
		"deleted after %s stranded on scheduler %s (%s), for %s %s to recreate it", s.grace, name, reason, owner.Kind, owner.Name)
	return nil
}

// report sets the metric, records an Event on each profile whose name has more stranded pods
// than before, and tells the profile controller of each profile whose count changed.
func (s *StrandedPods) report(ctx context.Context, profiles []schedulingv1alpha1.SchedulerProfile, before, after map[string]int32) {
	s.metrics.Stranded(after)
	for i := range profiles {
		p := &profiles[i]
		name := profile.SchedulerName(p)
		if before[name] == after[name] {
			continue
		}
		if after[name] > before[name] {
			s.recorder.Eventf(p, nil, corev1.EventTypeWarning, EventReasonSchedulerNotServed, actionAssign,
				"%d pending pods were assigned to scheduler %s, which no running scheduler serves; they wait until it does", after[name], name)
		}
		select {
		case s.changed <- event.GenericEvent{Object: p.DeepCopy()}:
		case <-ctx.Done():
			return
		}
	}
}
