package core

import (
	"fmt"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/utils/ptr"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/controllers/deploy"
	"github.com/schedops/scheduler-profile-operator/controllers/internal/bound"
	"github.com/schedops/scheduler-profile-operator/controllers/plan"
)

// Defaults of the rollout thresholds (RolloutThresholds), which the operator's flags can change.
const (
	// DefaultRolloutDeadline is how long a new revision may take to become available, when its
	// owner sets no rolloutDeadlineSeconds, before the operator returns to the last one that ran
	// available.
	DefaultRolloutDeadline = 3 * time.Minute
	// DefaultUnschedulableTimeout is how long a new scheduler pod may stay Unschedulable. A
	// preemption needs the victims' graceful termination (30 s by default) and a cluster
	// autoscaler about a minute to add a node; the scheduler retries unschedulable pods at least
	// every 60 s (podMaxInUnschedulablePodsDuration is 5 min, its flush period 30 s).
	DefaultUnschedulableTimeout = time.Minute
	// DefaultStartErrorTimeout is how long a new scheduler pod may fail to start its container
	// for a reason that can pass (an image pull error, a ConfigMap or Secret the kubelet does not
	// see yet), measured from when it was bound: kubelet retries pulls with a back-off of
	// 10 s, 20 s, 40 s, so a minute covers three tries, and a registry outage of seconds.
	DefaultStartErrorTimeout = time.Minute
	// DefaultCrashLoopRestarts is how many restarts a container in CrashLoopBackOff may have had.
	// One crash can be a race at start (the apiserver briefly unreachable, a lease not yet
	// released); a third restart comes after the kubelet's back-off of 10 s, 20 s and 40 s, more
	// than a minute after the first crash, and the same crash each time does not fix itself.
	DefaultCrashLoopRestarts = 3
)

// RolloutThresholds decide when the rollout of a new scheduler revision has failed for good,
// so that the operator returns to the last revision that ran available. A pod state counts only
// when it persists or repeats past its threshold, from the time the revision was applied at the
// earliest: what passes (a preemption under way, a node being added, one crash) is waited for.
// A zero field takes its default.
type RolloutThresholds struct {
	// Deadline is the rollout deadline of an owner that sets no rolloutDeadlineSeconds, measured
	// from when the operator applied the revision (DefaultRolloutDeadline).
	Deadline time.Duration
	// Unschedulable is how long a new pod may be Unschedulable, measured from its PodScheduled
	// condition's lastTransitionTime (DefaultUnschedulableTimeout).
	Unschedulable time.Duration
	// StartError is how long a new pod may wait in ErrImagePull, ImagePullBackOff,
	// CreateContainerConfigError or CreateContainerError, measured from when it was bound
	// (DefaultStartErrorTimeout).
	StartError time.Duration
	// CrashLoopRestarts is the restart count at which a container in CrashLoopBackOff fails the
	// rollout (DefaultCrashLoopRestarts).
	CrashLoopRestarts int32
}

// withDefaults fills the zero fields with the defaults.
func (th RolloutThresholds) withDefaults() RolloutThresholds {
	if th.Deadline <= 0 {
		th.Deadline = DefaultRolloutDeadline
	}
	if th.Unschedulable <= 0 {
		th.Unschedulable = DefaultUnschedulableTimeout
	}
	if th.StartError <= 0 {
		th.StartError = DefaultStartErrorTimeout
	}
	if th.CrashLoopRestarts <= 0 {
		th.CrashLoopRestarts = DefaultCrashLoopRestarts
	}
	return th
}

// startErrors are the container waiting reasons of a pod that cannot start its container yet and
// may later: the kubelet retries, and a registry or a ConfigMap can come back.
var startErrors = map[string]bool{
	"ErrImagePull":               true,
	"ImagePullBackOff":           true,
	"CreateContainerConfigError": true,
	"CreateContainerError":       true,
}

// reasonInvalidImageName is a container's waiting reason when its image reference cannot be
// parsed: only a new template mends it, so it fails the rollout at once.
const reasonInvalidImageName = "InvalidImageName"

// rolloutVerdict is one look at the rollout of a revision.
type rolloutVerdict struct {
	// cause says why the rollout failed for good; empty while it can still finish.
	cause string
	// recheckAfter is when the verdict changes if nothing else does: the first threshold or the
	// deadline ahead; zero when none is.
	recheckAfter time.Duration
}

// judge tells whether the rollout of a ReplicaSet, applied at appliedAt with the given deadline,
// has failed for good at now: one of its pods fails past a threshold, or the ReplicaSet is not
// available by the deadline. A rollout that is still progressing normally is never failed, and an
// available ReplicaSet never is. It reads no clock: time is an input.
func (th RolloutThresholds) judge(rs *appsv1.ReplicaSet, pods []corev1.Pod, appliedAt time.Time, deadline time.Duration, now time.Time) rolloutVerdict {
	want := ptr.Deref(rs.Spec.Replicas, 1)
	if want > 0 && rs.Status.AvailableReplicas >= want {
		return rolloutVerdict{}
	}
	next := deadline - now.Sub(appliedAt)
	var waiting string
	for i := range pods {
		cause, state, wait := th.podFailure(&pods[i], appliedAt, now)
		if cause != "" {
			return rolloutVerdict{cause: cause}
		}
		if waiting == "" {
			waiting = state
		}
		if wait > 0 {
			next = min(next, wait)
		}
	}
	if next <= 0 {
		cause := fmt.Sprintf("%d of %d new scheduler pods available %s after the revision was applied, the rollout deadline",
			rs.Status.AvailableReplicas, want, deadline.Round(time.Second))
		if waiting != "" {
			cause += "; " + waiting
		}
		return rolloutVerdict{cause: cause}
	}
	return rolloutVerdict{recheckAfter: next}
}

// podFailure tells whether a pod of a new revision fails in a way that will not fix itself. A
// state counts from when it began, or from when the revision was applied if that is later (a
// pod of a reused ReplicaSet is judged on this rollout only). cause is set once a state persists
// or repeats past its threshold; before that, state describes it for the deadline's message and
// wait is the time until it crosses its threshold (zero when no clock runs: a crash loop counts
// restarts, and each restart changes the pod).
func (th RolloutThresholds) podFailure(pod *corev1.Pod, appliedAt, now time.Time) (cause, state string, wait time.Duration) {
	if pod.DeletionTimestamp != nil {
		return "", "", 0
	}
	since := func(t metav1.Time) time.Duration {
		from := t.Time
		if from.IsZero() {
			from = pod.CreationTimestamp.Time
		}
		if from.Before(appliedAt) {
			from = appliedAt
		}
		return now.Sub(from)
	}
	var scheduledAt metav1.Time
	for _, c := range pod.Status.Conditions {
		if c.Type != corev1.PodScheduled {
			continue
		}
		if c.Status == corev1.ConditionTrue {
			scheduledAt = c.LastTransitionTime
			continue
		}
		if c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			state = fmt.Sprintf("pod %s: %s: %s", pod.Name, c.Reason, c.Message)
			if left := th.Unschedulable - since(c.LastTransitionTime); left > 0 {
				return "", state, left
			}
			return fmt.Sprintf("pod %s: %s for %s: %s", pod.Name, c.Reason, th.Unschedulable.Round(time.Second), c.Message), state, 0
		}
	}
	statuses := append(slices.Clone(pod.Status.InitContainerStatuses), pod.Status.ContainerStatuses...)
	for _, cs := range statuses {
		w := cs.State.Waiting
		if w == nil {
			continue
		}
		switch {
		case w.Reason == reasonInvalidImageName:
			return fmt.Sprintf("pod %s: container %s: %s: %s", pod.Name, cs.Name, w.Reason, w.Message), "", 0
		case w.Reason == reasonCrashLoopBackOff:
			state = fmt.Sprintf("pod %s: container %s: %s after %d restarts: %s", pod.Name, cs.Name, w.Reason, cs.RestartCount, w.Message)
			if cs.RestartCount >= th.CrashLoopRestarts {
				return state, state, 0
			}
		case startErrors[w.Reason]:
			state = fmt.Sprintf("pod %s: container %s: %s: %s", pod.Name, cs.Name, w.Reason, w.Message)
			if left := th.StartError - since(scheduledAt); left > 0 {
				return "", state, left
			}
			return fmt.Sprintf("pod %s: container %s: %s for %s: %s", pod.Name, cs.Name, w.Reason, th.StartError.Round(time.Second), w.Message), state, 0
		}
	}
	return "", state, 0
}

// reasonCrashLoopBackOff is a container's waiting reason between restarts after it crashed.
const reasonCrashLoopBackOff = "CrashLoopBackOff"

// replicaSetOf finds the ReplicaSet of a revision among a Deployment's.
func replicaSetOf(rss []appsv1.ReplicaSet, revision string) *appsv1.ReplicaSet {
	for i := range rss {
		if rss[i].Spec.Template.Annotations[schedulingv1alpha1.AnnotationRevision] == revision {
			return &rss[i]
		}
	}
	return nil
}

// podsOf are the pods of a ReplicaSet, by the pod-template-hash its controller gives them.
func podsOf(rs *appsv1.ReplicaSet, pods []corev1.Pod) []corev1.Pod {
	hash := rs.Labels[appsv1.DefaultDeploymentUniqueLabelKey]
	var out []corev1.Pod
	for _, p := range pods {
		if hash != "" && p.Labels[appsv1.DefaultDeploymentUniqueLabelKey] == hash {
			out = append(out, p)
		}
	}
	return out
}

// templateSecrets are the Secrets that a pod template mounts, in volume order: those of the
// revision's extenders, which a rollback to it mounts again.
func templateSecrets(t *corev1.PodTemplateSpec) []string {
	var names []string
	for _, v := range t.Spec.Volumes {
		if v.Secret != nil {
			names = append(names, v.Secret.SecretName)
		}
	}
	return names
}

// rollbackTemplate is the pod template of an earlier ReplicaSet as the operator applies it, without
// the label that the Deployment controller adds.
func rollbackTemplate(rs *appsv1.ReplicaSet) *corev1ac.PodTemplateSpecApplyConfiguration {
	t := rs.Spec.Template.DeepCopy()
	delete(t.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
	out := corev1ac.PodTemplateSpec()
	deploy.MustConvert(t, out)
	return out
}

// rolloutState is what an owner's status remembers of its scheduler's rollouts.
type rolloutState struct {
	// lastAvailable is the revision that last ran with every replica available.
	lastAvailable string
	// failed is the revision that was rolled back, and cause says why.
	failed, cause string
	// rollbackRefused says why the Deployment was not returned to lastAvailable after failed:
	// a Secret that revision mounts no longer consents (rollbackDeployment).
	rollbackRefused string
	// recheckAfter is when to look at a rollout in progress again, for a threshold or its
	// deadline; not kept.
	recheckAfter time.Duration
	// upgrade is what the wave of the operator's scheduler image said in this pass; not kept.
	upgrade upgradeStep
}

// rolloutStateOf reads what a status remembers of the rollouts.
func rolloutStateOf(ps schedulingv1alpha1.ProcessStatus) rolloutState {
	return rolloutState{lastAvailable: ps.LastAvailableRevision, failed: ps.FailedRevision, cause: ps.RolloutFailure, rollbackRefused: ps.RollbackRefusal}
}

// writeTo records the rollout state in a status.
func (st rolloutState) writeTo(ps *schedulingv1alpha1.ProcessStatus) {
	ps.LastAvailableRevision, ps.FailedRevision, ps.RolloutFailure = st.lastAvailable, st.failed, bound.String(st.cause, maxRolloutFailure)
	ps.RollbackRefusal = bound.String(st.rollbackRefused, maxRolloutFailure)
}

// rolloutObservation is what one pass sees of the rollout of the Deployment's revision.
type rolloutObservation struct {
	// revision is the Deployment's template revision.
	revision string
	// available is set when every replica of the Deployment's template is available.
	available bool
	// verdict judges the rollout; nil when it was not judged (see judges).
	verdict *rolloutVerdict
}

// judges tells whether the rollout of a revision is judged: one that is not available yet, with
// a revision to return to that is another one, and that was not rolled back already. A revision
// that ran before is judged like any other: going back to it is a rollout of its own, with its
// own clock. The first rollout has nothing to return to; the Deployment's own progress deadline
// reports it.
func (st rolloutState) judges(revision string, available bool) bool {
	return !available && revision != "" && st.lastAvailable != "" && revision != st.lastAvailable && revision != st.failed
}

// next is the rollout state after an observation, the one transition of the state machine:
//   - a revision that runs available becomes the one to return to (lastAvailable);
//   - a judged rollout that failed for good marks its revision failed with the cause, and run
//     returns the Deployment to lastAvailable;
//   - otherwise nothing changes, and a judged rollout is looked at again at its verdict's
//     recheckAfter.
//
// failed is cleared by run, not here: it blocks only as long as the spec asks for that revision.
func (st rolloutState) next(o rolloutObservation) rolloutState {
	switch {
	case o.available && o.revision != "":
		st.lastAvailable = o.revision
	case o.verdict == nil || !st.judges(o.revision, o.available):
	case o.verdict.cause != "":
		st.failed, st.cause, st.rollbackRefused = o.revision, o.verdict.cause, ""
		st.recheckAfter = time.Second
	default:
		st.recheckAfter = o.verdict.recheckAfter
	}
	return st
}

// rolloutDeadline is the process's rolloutDeadlineSeconds, or the operator's default.
func rolloutDeadline(proc *plan.Process, th RolloutThresholds) time.Duration {
	if proc.Run.RolloutDeadlineSeconds > 0 {
		return time.Duration(proc.Run.RolloutDeadlineSeconds) * time.Second
	}
	return th.withDefaults().Deadline
}

// stampApplied records on a Deployment to apply when its template revision was applied: the
// time recorded on the live Deployment while it runs the same revision, now for a new one (and
// for a revision that ran before: a revert is a rollout of its own). Carried unchanged, the
// stamp makes no write at steady state.
func stampApplied(desired *appsv1ac.DeploymentApplyConfiguration, live *appsv1.Deployment, now time.Time) {
	at := now.UTC().Format(time.RFC3339)
	if live != nil && live.Spec.Template.Annotations[schedulingv1alpha1.AnnotationRevision] == desired.Spec.Template.Annotations[schedulingv1alpha1.AnnotationRevision] {
		if _, ok := appliedAt(live); ok {
			at = live.Annotations[schedulingv1alpha1.AnnotationRevisionAppliedAt]
		}
	}
	desired.WithAnnotations(map[string]string{schedulingv1alpha1.AnnotationRevisionAppliedAt: at})
}

// oneLeaderStrategy makes a rollout between templates on different leases a Recreate: the old
// pods stop before the new ones start. Surge first, a new pod would lead on its lease while an old
// one still leads on the other, and two schedulers would bind pods of the same scheduler name.
// The Deployment stays Recreate until that rollout is done (no pod of an older template left), so
// that a change in the middle of it cannot bring surge back while an old leader still runs; then
// it returns to surge first. Only the upgrade from a version before profile.LeasePrefix (and a
// rollback across it) changes the lease.
func oneLeaderStrategy(proc *plan.Process, desired *appsv1ac.DeploymentApplyConfiguration, live *appsv1.Deployment) {
	if live == nil {
		return
	}
	crossing := proc.LeaseOf(live.Spec.Template.Annotations) != proc.LeaseOf(desired.Spec.Template.Annotations)
	recreating := live.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType && !onTemplate(live)
	if crossing || recreating {
		desired.Spec.WithStrategy(appsv1ac.DeploymentStrategy().WithType(appsv1.RecreateDeploymentStrategyType))
	}
}

// onTemplate tells whether every pod of a Deployment runs its current template.
func onTemplate(d *appsv1.Deployment) bool {
	want := ptr.Deref(d.Spec.Replicas, 1)
	return d.Status.ObservedGeneration >= d.Generation && d.Status.UpdatedReplicas == want && d.Status.Replicas == want
}

// appliedAt is when the operator applied the live Deployment's revision; false when it did not
// record it.
func appliedAt(d *appsv1.Deployment) (time.Time, bool) {
	t, err := time.Parse(time.RFC3339, d.Annotations[schedulingv1alpha1.AnnotationRevisionAppliedAt])
	return t, err == nil
}

// rolloutFailedMessage is the Degraded message and event of a rolled-back revision, or of one
// whose rollback was refused.
func rolloutFailedMessage(st rolloutState) string {
	if st.rollbackRefused != "" {
		return fmt.Sprintf("the rollout of scheduler revision %s failed (%s); the Deployment is not returned to revision %s, the last that ran available, since a rollback is checked like a rollout: %s; a change of the spec tries again",
			st.failed, st.cause, st.lastAvailable, st.rollbackRefused)
	}
	return fmt.Sprintf("the rollout of scheduler revision %s failed (%s); the Deployment was returned to revision %s, the last that ran available; a change of the spec tries again",
		st.failed, st.cause, st.lastAvailable)
}
