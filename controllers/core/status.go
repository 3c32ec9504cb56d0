package core

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/controllers/internal/bound"
	"github.com/schedops/scheduler-profile-operator/controllers/plan"
	"github.com/schedops/scheduler-profile-operator/scheduler/profile"
)

// setStatus computes the status from what a pass observed. configHash and configMapName keep
// describing what runs: an invalid change does not replace them.
func setStatus(p *schedulingv1alpha1.SchedulerProfile, obs *observation) {
	st := &p.Status
	st.SchedulerName = obs.schedulerName
	st.ServedSchedulerName = obs.servedName
	st.StrandedPods = obs.stranded
	st.AssignedNamespaces = obs.assigned
	if obs.config != nil && obs.applied {
		st.ObservedGeneration = p.Generation
		st.ConfigHash = runningHash(obs.config, obs.rollout, obs.deployment)
		st.ConfigMapName = obs.process.Names.ConfigMap(st.ConfigHash)
		st.DeploymentName = obs.process.Names.Deployment()
	}
	if obs.process != nil {
		obs.rollout.writeTo(&st.ProcessStatus)
	}
	setConfigValidCondition(p, obs)
	setAvailableCondition(p, obs)
	setProgressingCondition(p, obs)
	setDegradedCondition(p, obs)
	setAdvisoryCondition(p, obs)
	setPreviewStatus(p, obs)
}

func setCondition(p *schedulingv1alpha1.SchedulerProfile, typ string, status metav1.ConditionStatus, reason, message string) {
	setConditionOn(&p.Status.Conditions, p.Generation, typ, status, reason, message)
}

// setConditionOn sets a condition of either kind, for the generation it describes.
func setConditionOn(conds *[]metav1.Condition, generation int64, typ string, status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(conds, metav1.Condition{
		Type:               typ,
		Status:             status,
		Reason:             reason,
		Message:            bound.String(message, maxConditionMessage),
		ObservedGeneration: generation,
	})
}

func setConfigValidCondition(p *schedulingv1alpha1.SchedulerProfile, obs *observation) {
	switch {
	case obs.conflictWith != "":
		setCondition(p, schedulingv1alpha1.ConditionConfigValid, metav1.ConditionFalse, schedulingv1alpha1.ReasonSchedulerNameConflict,
			plan.NameConflictMessage(obs.schedulerName, obs.conflictWith, obs.conflictServed)+"; nothing is rolled out until it is free")
	case obs.invalid != "":
		setCondition(p, schedulingv1alpha1.ConditionConfigValid, metav1.ConditionFalse, schedulingv1alpha1.ReasonInvalidConfig,
			"the scheduler would refuse this configuration, so it is not rolled out: "+obs.invalid)
	case obs.secret.Refused():
		setCondition(p, schedulingv1alpha1.ConditionConfigValid, metav1.ConditionFalse, obs.secret.Reason,
			obs.secret.Message+"; nothing is rolled out until "+obs.secret.Until())
	case obs.apiMissing != "":
		setCondition(p, schedulingv1alpha1.ConditionConfigValid, metav1.ConditionFalse, schedulingv1alpha1.ReasonRequiredAPIUnavailable, obs.apiMissing)
	case obs.skew.refused != "":
		setCondition(p, schedulingv1alpha1.ConditionConfigValid, metav1.ConditionFalse, schedulingv1alpha1.ReasonVersionSkew, obs.skew.refused)
	case obs.limit.Reason != "":
		setCondition(p, schedulingv1alpha1.ConditionConfigValid, metav1.ConditionFalse, obs.limit.Reason, obs.limit.Message)
	case obs.queueSortConflict != "":
		setCondition(p, schedulingv1alpha1.ConditionConfigValid, metav1.ConditionFalse, schedulingv1alpha1.ReasonQueueSortConflict,
			"the profiles of one scheduler must sort the queue alike; this change is not rolled out, and the other profiles of Scheduler "+p.Spec.SchedulerRef.Name+" are: "+obs.queueSortConflict)
	case obs.config != nil:
		setCondition(p, schedulingv1alpha1.ConditionConfigValid, metav1.ConditionTrue, schedulingv1alpha1.ReasonConfigAccepted,
			"the configuration passed the scheduler's decoding, validation and plugin construction")
	}
}

func setAvailableCondition(p *schedulingv1alpha1.SchedulerProfile, obs *observation) {
	if obs.schedulerMissing {
		setCondition(p, schedulingv1alpha1.ConditionAvailable, metav1.ConditionFalse, schedulingv1alpha1.ReasonSchedulerNotFound,
			fmt.Sprintf("Scheduler %q does not exist; the profile runs once it is created", p.Spec.SchedulerRef.Name))
		return
	}
	status, reason, message := availability(obs.deployment)
	if status == metav1.ConditionTrue && obs.notServed != "" {
		status, reason, message = metav1.ConditionFalse, schedulingv1alpha1.ReasonNotServed, obs.notServed
	}
	setCondition(p, schedulingv1alpha1.ConditionAvailable, status, reason, message)
}

// availability is the Available condition of a process from its Deployment.
func availability(d *appsv1.Deployment) (metav1.ConditionStatus, string, string) {
	switch {
	case d == nil:
		return metav1.ConditionFalse, schedulingv1alpha1.ReasonNotRolledOut, "no valid configuration has been rolled out yet"
	case d.Status.AvailableReplicas > 0:
		return metav1.ConditionTrue, schedulingv1alpha1.ReasonMinimumReplicasAvailable,
			fmt.Sprintf("%d of %d scheduler replicas are available", d.Status.AvailableReplicas, plan.Replicas(d.Spec.Replicas))
	default:
		return metav1.ConditionFalse, schedulingv1alpha1.ReasonNoReplicasAvailable,
			fmt.Sprintf("0 of %d scheduler replicas are available", plan.Replicas(d.Spec.Replicas))
	}
}

func setProgressingCondition(p *schedulingv1alpha1.SchedulerProfile, obs *observation) {
	status, reason, message := progress(obs.deployment, p.Status.ConfigHash, p.Status.ConfigMapName)
	status, reason, message = upgradeProgress(obs.rollout.upgrade, status, reason, message)
	status, reason, message = previewProgress(obs.preview, status, reason, message)
	setCondition(p, schedulingv1alpha1.ConditionProgressing, status, reason, message)
}

// upgradeProgress is the Progressing condition of a process whose configuration rolled out while
// the wave of the operator's new scheduler image holds it: waiting for its turn is progress to
// come; a stopped wave is not.
func upgradeProgress(step upgradeStep, status metav1.ConditionStatus, reason, message string) (metav1.ConditionStatus, string, string) {
	switch {
	case step.held == "" || reason != schedulingv1alpha1.ReasonRolloutComplete:
		return status, reason, message
	case step.stopped:
		return metav1.ConditionFalse, schedulingv1alpha1.ReasonUpgradeStopped, step.held
	default:
		return metav1.ConditionTrue, schedulingv1alpha1.ReasonUpgradeWaiting, step.held
	}
}

// progress is the Progressing condition of a process from its Deployment and the configuration
// it should run.
func progress(d *appsv1.Deployment, hash, configMap string) (metav1.ConditionStatus, string, string) {
	switch {
	case d == nil || hash == "":
		return metav1.ConditionFalse, schedulingv1alpha1.ReasonNotRolledOut, "no valid configuration has been rolled out yet"
	case rolledOut(d, hash):
		return metav1.ConditionFalse, schedulingv1alpha1.ReasonRolloutComplete, "every scheduler replica runs the configuration " + configMap
	default:
		return metav1.ConditionTrue, schedulingv1alpha1.ReasonRollingOut,
			fmt.Sprintf("rolling out the configuration %s: %d of %d replicas updated, %d available",
				configMap, d.Status.UpdatedReplicas, plan.Replicas(d.Spec.Replicas), d.Status.AvailableReplicas)
	}
}

// rolledOut tells whether every replica of the Deployment runs the configuration with hash.
func rolledOut(d *appsv1.Deployment, hash string) bool {
	return d.Spec.Template.Annotations[schedulingv1alpha1.AnnotationConfigHash] == hash && plan.DeploymentAvailable(d)
}

func setDegradedCondition(p *schedulingv1alpha1.SchedulerProfile, obs *observation) {
	d := obs.deployment
	causes := degradations{}
	causes.add(d != nil && obs.invalid != "", schedulingv1alpha1.ReasonInvalidConfigNotRolledOut,
		"the latest change is invalid (see ConfigValid); the scheduler keeps running the configuration "+p.Status.ConfigMapName)
	causes.add(d != nil && obs.secret.Refused(), obs.secret.Reason,
		"a Secret of an extender is "+obs.secret.What()+" (see ConfigValid); the scheduler keeps running the configuration "+p.Status.ConfigMapName)
	causes.add(obs.apiMissing != "", schedulingv1alpha1.ReasonRequiredAPIUnavailable,
		"the scheduler's feature gates need an API the cluster does not serve (see ConfigValid); nothing is rolled out, and a running scheduler keeps its configuration")
	causes.add(obs.skew.refused != "", schedulingv1alpha1.ReasonVersionSkew,
		"the scheduler would be newer than the apiserver (see ConfigValid); nothing is rolled out, and a running scheduler keeps its configuration")
	causes.add(obs.schedulerDeleting, schedulingv1alpha1.ReasonSchedulerDeleting,
		fmt.Sprintf("Scheduler %q is being deleted: it serves this profile only until its Deployment is gone; name another Scheduler, or none for a scheduler of its own", p.Spec.SchedulerRef.Name))
	causes.add(d != nil && obs.queueSortConflict != "", schedulingv1alpha1.ReasonQueueSortConflict,
		"the latest change conflicts with the queue sort of the Scheduler (see ConfigValid); the scheduler keeps running the configuration "+p.Status.ConfigMapName)
	causes.add(obs.stoppedServing || (d != nil && obs.conflictWith != "" && plan.Replicas(d.Spec.Replicas) == 0), schedulingv1alpha1.ReasonSchedulerNameConflict,
		"another profile serves this schedulerName (see ConfigValid), so this profile's scheduler was scaled down: two schedulers never serve one name")
	causes.add(d != nil && obs.conflictWith != "", schedulingv1alpha1.ReasonSchedulerNameConflict,
		"the latest change conflicts with another profile (see ConfigValid); the scheduler keeps running the configuration "+p.Status.ConfigMapName)
	causes.add(obs.conflictWith != "", schedulingv1alpha1.ReasonSchedulerNameConflict,
		"no scheduler runs for this profile until its schedulerName is free (see ConfigValid)")
	causes.add(obs.failure != "", schedulingv1alpha1.ReasonApplyFailed, "applying the scheduler's objects failed, retrying: "+obs.failure)
	causes.add(obs.rollout.failed != "", schedulingv1alpha1.ReasonRolloutFailed, rolloutFailedMessage(obs.rollout))
	causes.add(d != nil && progressDeadlineExceeded(d), schedulingv1alpha1.ReasonProgressDeadlineExceeded,
		"the rollout of "+p.Status.ConfigMapName+" did not finish within the Deployment's progress deadline")
	causes.add(obs.skew.unsupported != "", schedulingv1alpha1.ReasonUnsupportedVersionSkew, obs.skew.unsupported)
	status, reason, message := causes.condition()
	setCondition(p, schedulingv1alpha1.ConditionDegraded, status, reason, message)
}

func progressDeadlineExceeded(d *appsv1.Deployment) bool {
	for _, c := range d.Status.Conditions {
		if c.Type == appsv1.DeploymentProgressing && c.Status == corev1.ConditionFalse && c.Reason == "ProgressDeadlineExceeded" {
			return true
		}
	}
	return false
}

// updateStatus writes the status only when it changed: a steady-state pass writes nothing.
func (r *SchedulerProfileReconciler) updateStatus(ctx context.Context, before, after *schedulingv1alpha1.SchedulerProfile) error {
	if equality.Semantic.DeepEqual(before.Status, after.Status) {
		return nil
	}
	// The optimistic lock makes a pass that read a stale profile fail instead of writing (and
	// announcing in events) a transition that was already written. The patch is worked out from
	// the statuses alone: the rest of the object is the same, and copying and encoding it (its
	// managed fields) twice per write is most of a write's cost to the operator.
	patch, err := client.MergeFromWithOptions(statusOf(before), client.MergeFromWithOptimisticLock{}).Data(statusOf(after))
	if err != nil {
		return fmt.Errorf("writing the status: %w", err)
	}
	// The answer is asked for as metadata only: decoding the whole profile that the apiserver
	// sends back, once per member for every change of its Scheduler, is work for nothing, since
	// the pass needs only the new resource version.
	written := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: after.Name}}
	written.SetGroupVersionKind(schedulingv1alpha1.GroupVersion.WithKind("SchedulerProfile"))
	if err := r.client.Status().Patch(ctx, written, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return fmt.Errorf("writing the status: %w", err)
	}
	after.ResourceVersion = written.ResourceVersion
	return nil
}

// awaitFailureCached waits, for at most cacheWait, until the cache holds the object of key at
// another resource version than stale, the one the pass read: the status write that recorded a
// failed revision, or a later one. A pass that returned the Deployment to the last available
// revision waits so before it ends: that write of the Deployment enqueues the owner again at
// once, and a pass that read the status from before the failure was recorded would apply the
// failed revision again. A wait that runs out is not an error: the next pass then fails its
// status write on the optimistic lock and runs again.
func awaitFailureCached(ctx context.Context, c client.Reader, obj client.Object, stale string) {
	key := client.ObjectKeyFromObject(obj)
	_ = wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, cacheWait, true, func(ctx context.Context) (bool, error) {
		if err := c.Get(ctx, key, obj); err != nil {
			return false, nil // read again until cacheWait
		}
		return obj.GetResourceVersion() != stale, nil
	})
}

// statusOf is what a status write of a profile compares: its status, and the name and resource
// version of the object.
func statusOf(p *schedulingv1alpha1.SchedulerProfile) *schedulingv1alpha1.SchedulerProfile {
	return &schedulingv1alpha1.SchedulerProfile{
		ObjectMeta: metav1.ObjectMeta{Name: p.Name, ResourceVersion: p.ResourceVersion},
		Status:     p.Status,
	}
}

// runningHash is the configuration a process runs: the one applied (on the legacy lease while the
// upgrade wave keeps it there), or after a rollback the one of the revision the Deployment
// returned to.
func runningHash(cfg *profile.Config, st rolloutState, d *appsv1.Deployment) string {
	if st.failed != "" && d != nil && d.Spec.Template.Annotations[schedulingv1alpha1.AnnotationConfigHash] != "" {
		return d.Spec.Template.Annotations[schedulingv1alpha1.AnnotationConfigHash]
	}
	if st.upgrade.config != nil {
		return st.upgrade.config.Hash
	}
	return cfg.Hash
}

// Limits of the status strings the apiserver enforces: a condition's message (metav1.Condition)
// and rolloutFailure (the CRD). A longer string would fail the whole status write, and so every
// retry of the pass; it is cut instead.
const (
	maxConditionMessage = 32768
	maxRolloutFailure   = 4096
)

// staleWriteRetry is how soon a pass whose status write met a newer object runs again.
const staleWriteRetry = 200 * time.Millisecond

// afterStaleWrite is the result of a pass whose status write failed with err because the cache
// held an older object, and true; false for any other error. A deleted object is not requeued.
// A conflict is: the newer object's event may be one the watch filters (a member's own status
// write), so without a requeue the status could stay stale until the next resync.
func afterStaleWrite(err error) (ctrl.Result, bool) {
	switch {
	case apierrors.IsNotFound(err):
		return ctrl.Result{}, true
	case apierrors.IsConflict(err):
		return ctrl.Result{RequeueAfter: staleWriteRetry}, true
	}
	return ctrl.Result{}, false
}
