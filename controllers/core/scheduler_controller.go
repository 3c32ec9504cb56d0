package core

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/controllers/plan"
	"github.com/schedops/scheduler-profile-operator/scheduler/profile"
)

// +kubebuilder:rbac:groups=scheduling.schedops.io,resources=schedulers,verbs=get;list;watch
// +kubebuilder:rbac:groups=scheduling.schedops.io,resources=schedulers/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=scheduling.schedops.io,resources=schedulers/finalizers,verbs=update

// SchedulerReconciler runs each Scheduler as one scheduler process whose configuration has one
// profile per member SchedulerProfile.
type SchedulerReconciler struct {
	processObjects
	recorder events.EventRecorder
	// versions checks the scheduler against the apiserver's version; nil skips the check.
	versions *serverVersion
	// workers is how many Schedulers are reconciled at once; 0 is DefaultMaxConcurrentReconciles.
	workers int
}

// newSchedulerReconciler returns the reconciler that SetupManager runs, with the operator's processObjects.
func newSchedulerReconciler(objects processObjects, d Discovery, recorder events.EventRecorder) *SchedulerReconciler {
	return &SchedulerReconciler{processObjects: objects, recorder: recorder, versions: newServerVersion(d)}
}

// SetupWithManager watches Schedulers, the objects they own, the profiles that join, change
// or leave them, and the previews of the members' changes.
func (r *SchedulerReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ownsProcessObjects(ctrl.NewControllerManagedBy(mgr).For(&schedulingv1alpha1.Scheduler{}), schedulingv1alpha1.LabelScheduler).
		WithOptions(controller.Options{MaxConcurrentReconciles: workersOr(r.workers)}).
		Watches(&schedulingv1alpha1.SchedulerProfile{},
			handler.EnqueueRequestsFromMapFunc(r.schedulersOf),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.schedulersNamingSecret)).
		// A member waiting for a scheduler name gets it when the scheduler that serves it stops.
		Watches(&corev1.Pod{}, enqueueWaitingForNames(r.client, waitingScheduler)).
		Watches(&appsv1.Deployment{}, enqueueWaitingForNames(r.client, waitingScheduler)).
		// A new scheduler image rolls a few schedulers at a time: the next when one is available.
		Watches(&appsv1.Deployment{}, r.enqueueHeldSchedulers(schedulingv1alpha1.LabelScheduler)).
		// An owner that cannot move (refused, deleted) neither takes nor holds a turn.
		Watches(&schedulingv1alpha1.Scheduler{}, r.enqueueHeldOwners(schedulingv1alpha1.LabelScheduler), builder.WithPredicates(waveTurnChanged)).
		Watches(&schedulingv1alpha1.SchedulerProfile{}, r.enqueueHeldOwners(schedulingv1alpha1.LabelScheduler), builder.WithPredicates(waveTurnChanged)).
		// A Scheduler serves a profile that left it until the profile's new scheduler serves it.
		Watches(&appsv1.Deployment{}, handler.EnqueueRequestsFromMapFunc(r.schedulersWithLeavingMembers)).
		// A finished preview decides a member's guarded change.
		WatchesRawSource(r.Previews.SchedulerSource()).
		Complete(r)
}

// schedulersOf enqueues the Scheduler a profile names and every Scheduler that serves it now (the
// one it left, when its ref changed). Every profile's name claim can conflict with a member, so
// a profile without a ref enqueues the Schedulers that serve its scheduler name.
func (r *SchedulerReconciler) schedulersOf(ctx context.Context, obj client.Object) []reconcile.Request {
	p, ok := obj.(*schedulingv1alpha1.SchedulerProfile)
	if !ok {
		return nil
	}
	names := map[string]bool{}
	if p.Spec.SchedulerRef.Name != "" {
		names[p.Spec.SchedulerRef.Name] = true
	}
	var list schedulingv1alpha1.SchedulerList
	if err := r.client.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil { // only read
		log.FromContext(ctx).Error(err, "Listing Schedulers")
	}
	for _, s := range list.Items {
		for _, m := range s.Status.Profiles {
			if m.Name == p.Name || m.SchedulerName == profile.SchedulerName(p) {
				names[s.Name] = true
			}
		}
	}
	var reqs []reconcile.Request
	for name := range names {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKey{Name: name}})
	}
	return reqs
}

// Reconcile gets the Scheduler, brings its objects to the desired state, and writes its status once.
func (r *SchedulerReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	s := &schedulingv1alpha1.Scheduler{}
	if err := r.client.Get(ctx, req.NamespacedName, s); err != nil {
		// Its objects are garbage-collected through their owner references.
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	logger := log.FromContext(ctx).WithValues("Scheduler", klog.KObj(s))
	ctx = log.IntoContext(ctx, logger)
	if s.DeletionTimestamp != nil {
		// Deletion is final, as for a profile: its members' statuses say it is going.
		logger.V(1).Info("Being deleted, not reconciled")
		return ctrl.Result{}, nil
	}

	obs, reconcileErr := r.reconcile(ctx, s)
	if reconcileErr != nil {
		obs.failure = reconcileErr.Error()
	}
	before := s.DeepCopy()
	setSchedulerStatus(s, obs)
	if !equality.Semantic.DeepEqual(before.Status, s.Status) {
		if err := r.client.Status().Patch(ctx, s, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
			if res, ok := afterStaleWrite(err); ok {
				return res, nil
			}
			return ctrl.Result{}, fmt.Errorf("writing the status: %w", err)
		}
		if s.Status.FailedRevision != "" && s.Status.FailedRevision != before.Status.FailedRevision {
			awaitFailureCached(ctx, r.client, &schedulingv1alpha1.Scheduler{ObjectMeta: metav1.ObjectMeta{Name: s.Name}}, before.ResourceVersion)
		}
		if s.Status.ConfigHash != "" && s.Status.ConfigHash != before.Status.ConfigHash {
			r.recorder.Eventf(s, nil, corev1.EventTypeNormal, eventReasonRolloutStarted, actionRollout,
				"Rolling out the configuration %s with %d profiles to Deployment %s", s.Status.ConfigMapName, s.Status.ProfileCount, s.Status.DeploymentName)
		}
		if obs.skew.refused != "" && obs.skew.refused != degradedMessage(before, schedulingv1alpha1.ReasonVersionSkew) {
			r.recorder.Eventf(s, nil, corev1.EventTypeWarning, schedulingv1alpha1.ReasonVersionSkew, actionRollout, "%s", obs.skew.refused)
		}
		if c, ok := upgradeStopped(before.Status.Conditions, s.Status.Conditions); ok {
			r.Metrics.UpgradeStopped("Scheduler", s.Name)
			r.recorder.Eventf(s, nil, corev1.EventTypeWarning, c.Reason, actionRollout, "%s", c.Message)
		}
		if s.Status.FailedRevision != "" && s.Status.FailedRevision != before.Status.FailedRevision {
			r.Metrics.RolledBack("Scheduler", s.Name)
			r.recorder.Eventf(s, nil, corev1.EventTypeWarning, schedulingv1alpha1.ReasonRolloutFailed, actionRollout, "%s", rolloutFailedMessage(obs.rollout))
		}
	}
	return ctrl.Result{RequeueAfter: plan.Recheck(obs.rollout.recheckAfter, obs.apiMissing != "" || obs.skew.refused != "")}, reconcileErr
}

// degradedMessage is the message of the Scheduler's Degraded condition when it has reason; "" otherwise.
func degradedMessage(s *schedulingv1alpha1.Scheduler, reason string) string {
	c := meta.FindStatusCondition(s.Status.Conditions, schedulingv1alpha1.ConditionDegraded)
	if c == nil || c.Status != metav1.ConditionTrue || c.Reason != reason {
		return ""
	}
	return c.Message
}

// schedulerObservation is what one pass over a Scheduler found and did.
type schedulerObservation struct {
	proc *plan.Process
	plan *plan.SchedulerPlan
	// invalid is the scheduler's message when the combined configuration would not start.
	invalid string
	// apiMissing names an API that the scheduler's feature gates need and the cluster lacks.
	apiMissing string
	// skew is what the version skew policy says of the scheduler against the apiserver.
	skew versionSkew
	// secret is why the Secrets of the extenders cannot be used: missing, or refused.
	secret plan.SecretRefusal
	// deployment is the live scheduler Deployment, if any.
	deployment *appsv1.Deployment
	// applied is set when every owned object was applied.
	applied bool
	// rollout is what the pass found of the scheduler's rollouts.
	rollout rolloutState
	// failure is the error that ended the pass early, if any.
	failure string
}

// reconcile runs the steps of one pass. Without any member to serve, the Deployment is removed:
// kube-scheduler would otherwise run its default profile, a second "default-scheduler".
func (r *SchedulerReconciler) reconcile(ctx context.Context, s *schedulingv1alpha1.Scheduler) (*schedulerObservation, error) {
	obs := &schedulerObservation{proc: plan.SharedProcess(s)}
	obs.rollout = rolloutStateOf(s.Status.ProcessStatus)
	var err error
	if obs.deployment, err = r.LiveDeployment(ctx, obs.proc); err != nil {
		return obs, err
	}
	if errs := obs.proc.SettingsErrors(r.Settings); len(errs) > 0 {
		obs.invalid = errs.ToAggregate().Error()
		return obs, nil
	}
	if obs.secret, err = r.ReadExtenderSecrets(ctx, obs.proc); err != nil || obs.secret.Refused() {
		return obs, err
	}
	if obs.plan, err = r.PlanScheduler(ctx, s, obs.proc, obs.deployment); err != nil {
		return obs, err
	}
	if obs.plan.Config == nil {
		if obs.deployment != nil && metav1.IsControlledBy(obs.deployment, s) {
			if err := r.client.Delete(ctx, obs.deployment); client.IgnoreNotFound(err) != nil {
				return obs, fmt.Errorf("deleting the scheduler Deployment: %w", err)
			}
			obs.deployment = nil
		}
		return obs, nil
	}
	if err := r.ValidateProcess(obs.plan.Config, obs.proc.Run.FeatureGates); err != nil {
		obs.invalid = err.Error()
		return obs, nil
	}
	if obs.apiMissing, err = r.APIs.Missing(obs.proc.Run.FeatureGates); err != nil || obs.apiMissing != "" {
		return obs, err
	}
	if obs.skew, err = r.versions.skew(); err != nil || obs.skew.refused != "" {
		return obs, err
	}
	st := obs.rollout
	defer r.lockUpgrade(obs.deployment)()
	if obs.deployment, obs.rollout, err = r.run(ctx, obs.proc, obs.plan.Config, st); err != nil {
		obs.rollout = st
		return obs, err
	}
	obs.applied = true
	return obs, nil
}

// setSchedulerStatus computes a Scheduler's status from what a pass observed.
func setSchedulerStatus(s *schedulingv1alpha1.Scheduler, obs *schedulerObservation) {
	st := &s.Status
	switch {
	case obs.applied:
		st.ObservedGeneration = s.Generation
		st.ConfigHash = runningHash(obs.plan.Config, obs.rollout, obs.deployment)
		st.ConfigMapName = obs.proc.Names.ConfigMap(st.ConfigHash)
		st.DeploymentName = obs.proc.Names.Deployment()
		st.Profiles = servedProfiles(obs.plan)
	case obs.plan != nil && obs.plan.Config == nil && obs.failure == "":
		st.ObservedGeneration = s.Generation
		st.ConfigHash, st.ConfigMapName, st.DeploymentName, st.Profiles = "", "", "", nil
	}
	st.ProfileCount = int32(len(st.Profiles))
	obs.rollout.writeTo(&st.ProcessStatus)
	set := func(typ string, status metav1.ConditionStatus, reason, message string) {
		setConditionOn(&st.Conditions, s.Generation, typ, status, reason, message)
	}
	if obs.plan != nil && obs.plan.Config == nil && obs.failure == "" {
		set(schedulingv1alpha1.ConditionAvailable, metav1.ConditionFalse, schedulingv1alpha1.ReasonNoProfiles,
			"no SchedulerProfile with a valid configuration names this Scheduler in spec.schedulerRef, so no scheduler runs")
	} else {
		status, reason, message := availability(obs.deployment)
		set(schedulingv1alpha1.ConditionAvailable, status, reason, message)
	}
	status, reason, message := progress(obs.deployment, st.ConfigHash, st.ConfigMapName)
	status, reason, message = upgradeProgress(obs.rollout.upgrade, status, reason, message)
	set(schedulingv1alpha1.ConditionProgressing, status, reason, message)
	causes := degradations{}
	causes.add(obs.invalid != "", schedulingv1alpha1.ReasonInvalidConfigNotRolledOut,
		"the scheduler would refuse the combined configuration of the profiles, so it is not rolled out: "+obs.invalid)
	causes.add(obs.secret.Refused(), obs.secret.Reason,
		obs.secret.Message+"; nothing is rolled out until "+obs.secret.Until()+", and a running scheduler keeps its configuration")
	causes.add(obs.apiMissing != "", schedulingv1alpha1.ReasonRequiredAPIUnavailable, obs.apiMissing)
	causes.add(obs.skew.refused != "", schedulingv1alpha1.ReasonVersionSkew, obs.skew.refused)
	causes.add(obs.failure != "", schedulingv1alpha1.ReasonApplyFailed, "applying the scheduler's objects failed, retrying: "+obs.failure)
	causes.add(obs.rollout.failed != "", schedulingv1alpha1.ReasonRolloutFailed, rolloutFailedMessage(obs.rollout))
	causes.add(obs.deployment != nil && progressDeadlineExceeded(obs.deployment), schedulingv1alpha1.ReasonProgressDeadlineExceeded,
		"the rollout of "+st.ConfigMapName+" did not finish within the Deployment's progress deadline")
	causes.add(obs.skew.unsupported != "", schedulingv1alpha1.ReasonUnsupportedVersionSkew, obs.skew.unsupported)
	status, reason, message = causes.condition()
	set(schedulingv1alpha1.ConditionDegraded, status, reason, message)
}

// servedProfiles are the members with an entry in the configuration, in the plan's profile-name
// order.
func servedProfiles(pl *plan.SchedulerPlan) []schedulingv1alpha1.SchedulerMember {
	var out []schedulingv1alpha1.SchedulerMember
	for _, m := range pl.Members {
		if m.Entry != nil {
			out = append(out, schedulingv1alpha1.SchedulerMember{Name: m.Profile.Name, SchedulerName: m.Entry.SchedulerName})
		}
	}
	return out
}
