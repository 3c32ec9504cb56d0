package controllers

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/utils/ptr"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
)

// defaultRolloutDeadline is how long a new revision may take to become available before the
// operator returns to the last one that ran available.
const defaultRolloutDeadline = 3 * time.Minute

// waitingReasonsThatStay are container waiting reasons that do not go away without a change:
// the pod will never run the new revision.
var waitingReasonsThatStay = map[string]bool{
	"CrashLoopBackOff":           true,
	"ImagePullBackOff":           true,
	"ErrImagePull":               true,
	"InvalidImageName":           true,
	"CreateContainerConfigError": true,
	"CreateContainerError":       true,
}

// rolloutFailure tells whether the rollout of a ReplicaSet has failed for good, and why: one of
// its pods waits for a reason that stays, or cannot be scheduled, or the ReplicaSet is not
// available by the deadline. An empty cause means keep waiting: a rollout that is still
// progressing normally is never rolled back.
func rolloutFailure(rs *appsv1.ReplicaSet, pods []corev1.Pod, deadline time.Duration, now time.Time) string {
	want := ptr.Deref(rs.Spec.Replicas, 1)
	if want > 0 && rs.Status.AvailableReplicas >= want {
		return ""
	}
	for _, pod := range pods {
		for _, cs := range pod.Status.ContainerStatuses {
			if w := cs.State.Waiting; w != nil && waitingReasonsThatStay[w.Reason] {
				return fmt.Sprintf("pod %s: %s: %s", pod.Name, w.Reason, w.Message)
			}
		}
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
				return fmt.Sprintf("pod %s: %s: %s", pod.Name, c.Reason, c.Message)
			}
		}
	}
	if age := now.Sub(rs.CreationTimestamp.Time); age > deadline {
		return fmt.Sprintf("%d of %d new scheduler pods available after %s, the rollout deadline",
			rs.Status.AvailableReplicas, want, deadline.Round(time.Second))
	}
	return ""
}

// revisionOf hashes a pod template: the revision of a Deployment is its template, since a change
// of config and a change of placement alike make a new ReplicaSet.
func revisionOf(template *corev1ac.PodTemplateSpecApplyConfiguration) string {
	data, err := json.Marshal(template)
	if err != nil {
		panic(fmt.Sprintf("encoding a pod template: %v", err))
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])[:10]
}

// replicaSetOf finds the ReplicaSet of a revision among a Deployment's.
func replicaSetOf(rss []appsv1.ReplicaSet, revision string) *appsv1.ReplicaSet {
	for i := range rss {
		if rss[i].Spec.Template.Annotations[AnnotationRevision] == revision {
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

// rollbackTemplate is the pod template of an earlier ReplicaSet as the operator applies it, without
// the label that the Deployment controller adds.
func rollbackTemplate(rs *appsv1.ReplicaSet) *corev1ac.PodTemplateSpecApplyConfiguration {
	t := rs.Spec.Template.DeepCopy()
	delete(t.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
	out := corev1ac.PodTemplateSpec()
	mustConvert(t, out)
	return out
}

// rolloutState is what an owner's status remembers of its scheduler's rollouts.
type rolloutState struct {
	// lastAvailable is the revision that last ran with every replica available.
	lastAvailable string
	// failed is the revision that was rolled back, and cause says why.
	failed, cause string
	// recheckAfter is when to look at a rollout in progress again, for its deadline; not kept.
	recheckAfter time.Duration
}

// rolloutStateOf reads what a status remembers of the rollouts.
func rolloutStateOf(ps schedulingv1alpha1.ProcessStatus) rolloutState {
	return rolloutState{lastAvailable: ps.LastAvailableRevision, failed: ps.FailedRevision, cause: ps.RolloutFailure}
}

// writeTo records the rollout state in a status.
func (st rolloutState) writeTo(ps *schedulingv1alpha1.ProcessStatus) {
	ps.LastAvailableRevision, ps.FailedRevision, ps.RolloutFailure = st.lastAvailable, st.failed, st.cause
}

// deploymentAvailable tells whether every replica of the Deployment's current template is available.
func deploymentAvailable(d *appsv1.Deployment) bool {
	n := replicas(d.Spec.Replicas)
	return d.Status.ObservedGeneration >= d.Generation &&
		d.Status.UpdatedReplicas == n && d.Status.Replicas == n && d.Status.AvailableReplicas == n
}

// rolloutDeadline is the process's rolloutDeadlineSeconds, or the default.
func rolloutDeadline(proc *process) time.Duration {
	if proc.run.RolloutDeadlineSeconds > 0 {
		return time.Duration(proc.run.RolloutDeadlineSeconds) * time.Second
	}
	return defaultRolloutDeadline
}

// rolloutFailedMessage is the Degraded message and event of a rolled-back revision.
func rolloutFailedMessage(st rolloutState) string {
	return fmt.Sprintf("the rollout of scheduler revision %s failed (%s); the Deployment was returned to revision %s, the last that ran available; a change of the spec tries again",
		st.failed, st.cause, st.lastAvailable)
}
