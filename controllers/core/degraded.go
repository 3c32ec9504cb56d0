package core

import (
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
)

// degradedOrder is the one order of Degraded's reasons, for SchedulerProfiles and Schedulers:
// when several hold, the first is reported. A refused change that leaves the running
// configuration in place comes first (it names what the author must fix), then what the cluster
// lacks, then conflicts with other objects, then what went wrong while applying and rolling out,
// and last the skew that is only a warning.
var degradedOrder = []string{
	schedulingv1alpha1.ReasonInvalidConfigNotRolledOut,
	schedulingv1alpha1.ReasonSecretNotFound,
	schedulingv1alpha1.ReasonSecretInvalid,
	schedulingv1alpha1.ReasonRequiredAPIUnavailable,
	schedulingv1alpha1.ReasonVersionSkew,
	schedulingv1alpha1.ReasonSchedulerDeleting,
	schedulingv1alpha1.ReasonQueueSortConflict,
	schedulingv1alpha1.ReasonSchedulerNameConflict,
	schedulingv1alpha1.ReasonApplyFailed,
	schedulingv1alpha1.ReasonRolloutFailed,
	schedulingv1alpha1.ReasonProgressDeadlineExceeded,
	schedulingv1alpha1.ReasonUnsupportedVersionSkew,
}

// degradations are the causes of Degraded=True that a pass found, by reason, with their messages.
type degradations map[string]string

// add records a cause when it holds; the first message added for a reason stays.
func (d degradations) add(holds bool, reason, message string) {
	if _, ok := d[reason]; holds && !ok {
		if !slices.Contains(degradedOrder, reason) {
			panic("Degraded reason " + reason + " is not in degradedOrder")
		}
		d[reason] = message
	}
}

// condition returns Degraded's status, reason and message: the first cause in degradedOrder, or
// AsExpected when there is none.
func (d degradations) condition() (metav1.ConditionStatus, string, string) {
	for _, reason := range degradedOrder {
		if message, ok := d[reason]; ok {
			return metav1.ConditionTrue, reason, message
		}
	}
	return metav1.ConditionFalse, schedulingv1alpha1.ReasonAsExpected, "nothing needs attention"
}
