package core

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
)

// Event reasons (besides the condition reasons) and actions.
const (
	eventReasonRolloutStarted = "RolloutStarted"
	// eventReasonPreview is the reason of the event that sums a preview up.
	eventReasonPreview = "Preview"
	actionValidate     = "Validate"
	actionRollout      = "Rollout"
	actionAdvise       = "Advise"
)

// recordEvents emits events for the transitions between two statuses, after the status that
// records them was written (with an optimistic lock, so a transition is announced once): a pass
// that changes nothing emits nothing.
func (r *SchedulerProfileReconciler) recordEvents(before, after *schedulingv1alpha1.SchedulerProfile) {
	if c, changed := transition(before, after, schedulingv1alpha1.ConditionConfigValid); changed {
		eventType := corev1.EventTypeNormal
		if c.Status != metav1.ConditionTrue {
			eventType = corev1.EventTypeWarning
		}
		r.recorder.Eventf(after, nil, eventType, c.Reason, actionValidate, "%s", c.Message)
	}
	if rolledBack(before, after) {
		r.recorder.Eventf(after, nil, corev1.EventTypeWarning, schedulingv1alpha1.ReasonRolloutFailed, actionRollout, "%s",
			meta.FindStatusCondition(after.Status.Conditions, schedulingv1alpha1.ConditionDegraded).Message)
	}
	if c, ok := upgradeStopped(before.Status.Conditions, after.Status.Conditions); ok {
		r.Metrics.UpgradeStopped("SchedulerProfile", after.Name)
		r.recorder.Eventf(after, nil, corev1.EventTypeWarning, c.Reason, actionRollout, "%s", c.Message)
	}
	r.recordPreviewEvent(before, after)
	if rolloutStarted(before, after) {
		r.recorder.Eventf(after, nil, corev1.EventTypeNormal, eventReasonRolloutStarted, actionRollout,
			"Rolling out the configuration %s to Deployment %s", after.Status.ConfigMapName, after.Status.DeploymentName)
	}
	// Advice is announced when it is found or its codes change; advice that clears is no news.
	if c, changed := transition(before, after, schedulingv1alpha1.ConditionAdvisory); changed && c.Status == metav1.ConditionTrue {
		r.recorder.Eventf(after, nil, corev1.EventTypeNormal, c.Reason, actionAdvise, "%s", c.Message)
	}
	// Availability is announced when it is gained, and when it is lost; a scheduler that is still
	// starting is no news.
	if c, changed := transition(before, after, schedulingv1alpha1.ConditionAvailable); changed {
		wasAvailable := meta.IsStatusConditionTrue(before.Status.Conditions, schedulingv1alpha1.ConditionAvailable)
		switch {
		case c.Status == metav1.ConditionTrue && !wasAvailable:
			r.recorder.Eventf(after, nil, corev1.EventTypeNormal, c.Reason, actionRollout, "%s", c.Message)
		case c.Status != metav1.ConditionTrue && wasAvailable:
			r.recorder.Eventf(after, nil, corev1.EventTypeWarning, c.Reason, actionRollout, "%s", c.Message)
		}
	}
}

// transition returns a condition of after if its status, reason or message differ from before.
func transition(before, after *schedulingv1alpha1.SchedulerProfile, typ string) (*metav1.Condition, bool) {
	b := meta.FindStatusCondition(before.Status.Conditions, typ)
	a := meta.FindStatusCondition(after.Status.Conditions, typ)
	if a == nil {
		return nil, false
	}
	if b != nil && b.Status == a.Status && b.Reason == a.Reason && b.Message == a.Message {
		return nil, false
	}
	return a, true
}

// rolloutStarted tells whether the status moved to a new configuration: the configuration that
// runs is the status's, so each new one starts exactly one rollout.
func rolloutStarted(before, after *schedulingv1alpha1.SchedulerProfile) bool {
	return after.Status.ConfigHash != "" && after.Status.ConfigHash != before.Status.ConfigHash
}

// rolledBack tells whether the status newly records a failed revision, which the pass rolled back.
func rolledBack(before, after *schedulingv1alpha1.SchedulerProfile) bool {
	return after.Status.FailedRevision != "" && after.Status.FailedRevision != before.Status.FailedRevision
}
