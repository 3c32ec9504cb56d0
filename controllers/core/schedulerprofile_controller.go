// Package core holds the operator's reconcilers: the SchedulerProfile reconciler, which renders
// and validates a profile's configuration and runs a scheduler Deployment with it, the Scheduler
// reconciler, which does so for a Scheduler's members, and the Lease reconciler; with their
// status, events and watches, and the write side they drive (rollout, rollback, the upgrade
// wave, prune). controllers.SetupManager builds them (Setup).
package core

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/schedops/scheduler-profile-operator/controllers/assignment"
	"github.com/schedops/scheduler-profile-operator/controllers/plan"
	"github.com/schedops/scheduler-profile-operator/controllers/preview"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/scheduler/advice"
	"github.com/schedops/scheduler-profile-operator/scheduler/profile"
	"github.com/schedops/scheduler-profile-operator/webhooks"
)

// +kubebuilder:rbac:groups=scheduling.schedops.io,resources=schedulerprofiles,verbs=get;list;watch
// +kubebuilder:rbac:groups=scheduling.schedops.io,resources=schedulerprofiles/status,verbs=get;update;patch
// Owner references with blockOwnerDeletion need this where OwnerReferencesPermissionEnforcement is on (OpenShift).
// +kubebuilder:rbac:groups=scheduling.schedops.io,resources=schedulerprofiles/finalizers,verbs=update
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=clusterrolebindings,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=clusterroles,verbs=bind,resourceNames=system:kube-scheduler;system:volume-scheduler
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,namespace=kube-system,resources=rolebindings,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,namespace=kube-system,resources=roles,verbs=bind,resourceNames=extension-apiserver-authentication-reader
// +kubebuilder:rbac:groups="",namespace=scheduler-profile-operator-system,resources=serviceaccounts;configmaps;services,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=apps,namespace=scheduler-profile-operator-system,resources=deployments,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=apps,namespace=scheduler-profile-operator-system,resources=replicasets,verbs=get;list;watch
// +kubebuilder:rbac:groups="",namespace=scheduler-profile-operator-system,resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups=policy,namespace=scheduler-profile-operator-system,resources=poddisruptionbudgets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,namespace=scheduler-profile-operator-system,resources=roles;rolebindings,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=scheduler-profile-operator-system,resources=leases,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",namespace=scheduler-profile-operator-system,resources=events,verbs=create;patch
// The client certificates of extenders: read-only, and only in the operator's namespace.
// +kubebuilder:rbac:groups="",namespace=scheduler-profile-operator-system,resources=secrets,verbs=get;list;watch

// SchedulerProfileReconciler turns each SchedulerProfile into a validated configuration and the
// scheduler Deployment that runs it; for a profile of a shared Scheduler, it reports on the
// profile what its Scheduler makes of it.
type SchedulerProfileReconciler struct {
	processObjects
	recorder events.EventRecorder
	// versions checks the scheduler against the apiserver's version; nil skips the check.
	versions *serverVersion
	// workers is how many profiles are reconciled at once; 0 is DefaultMaxConcurrentReconciles.
	workers int
	// cluster is what the advice's cluster checks read, once per change of the cluster.
	cluster clusterView
	// stranded counts the pending pods stranded on each scheduler name; nil counts none.
	stranded *assignment.StrandedPods
}

// NewSchedulerProfileReconciler returns a reconciler that runs schedulers in namespace with
// image, the image of kube-scheduler with this project's plugins. d answers which APIs and
// which version the apiserver serves; nil skips those checks.
func NewSchedulerProfileReconciler(c client.Client, d Discovery, recorder events.EventRecorder, namespace, image string) *SchedulerProfileReconciler {
	return newSchedulerProfileReconciler(processObjects{client: c, Planner: plan.Planner{Reader: c, APIs: plan.NewServedAPIs(d), Settings: plan.Settings{Namespace: namespace, Image: image}}}, d, recorder)
}

// newSchedulerProfileReconciler returns the reconciler that SetupManager runs, with the operator's processObjects.
func newSchedulerProfileReconciler(objects processObjects, d Discovery, recorder events.EventRecorder) *SchedulerProfileReconciler {
	return &SchedulerProfileReconciler{processObjects: objects, recorder: recorder, versions: newServerVersion(d)}
}

// SetupWithManager watches profiles, the objects they own (a managed object edited or deleted by
// hand is restored), other profiles, whose scheduler names and queue sorts can conflict, and the
// Schedulers and their Deployments, which decide what a shared profile's status says.
func (r *SchedulerProfileReconciler) SetupWithManager(mgr ctrl.Manager) error {
	b := ownsProcessObjects(ctrl.NewControllerManagedBy(mgr).For(&schedulingv1alpha1.SchedulerProfile{}, builder.WithPredicates(notMemberStatusWrite)), schedulingv1alpha1.LabelProfile).
		WithOptions(controller.Options{MaxConcurrentReconciles: workersOr(r.workers)}).
		// A profile's create, delete or spec change can start or end a conflict of the others;
		// status-only updates cannot.
		Watches(&schedulingv1alpha1.SchedulerProfile{},
			handler.EnqueueRequestsFromMapFunc(r.otherProfiles),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&schedulingv1alpha1.Scheduler{}, handler.EnqueueRequestsFromMapFunc(r.membersOf)).
		Watches(&appsv1.Deployment{}, handler.EnqueueRequestsFromMapFunc(r.membersOfDeployment)).
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.profilesNamingSecret)).
		// A profile waiting for a scheduler name gets it when the scheduler that serves it stops.
		Watches(&corev1.Pod{}, enqueueWaitingForNames(r.client, waitingProfile)).
		Watches(&appsv1.Deployment{}, enqueueWaitingForNames(r.client, waitingProfile)).
		// A new scheduler image rolls a few schedulers at a time: the next when one is available.
		Watches(&appsv1.Deployment{}, r.enqueueHeldSchedulers(schedulingv1alpha1.LabelProfile)).
		// An owner that cannot move (refused, deleted) neither takes nor holds a turn.
		Watches(&schedulingv1alpha1.Scheduler{}, r.enqueueHeldOwners(schedulingv1alpha1.LabelProfile), builder.WithPredicates(waveTurnChanged)).
		Watches(&schedulingv1alpha1.SchedulerProfile{}, r.enqueueHeldOwners(schedulingv1alpha1.LabelProfile), builder.WithPredicates(waveTurnChanged)).
		// The status counts the Namespaces assigned to the profile's scheduler name.
		Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(r.profilesAssignedBy), builder.WithPredicates(predicate.LabelChangedPredicate{})).
		// A finished preview decides a guarded change and goes into the status.
		WatchesRawSource(r.Previews.Source()).
		// status.servedSchedulerName follows the scheduler pods' readiness.
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(r.profilesOfSchedulerPod), builder.WithPredicates(servingChanged))
	if r.stranded != nil {
		// status.strandedPods follows the pending pods.
		b = b.WatchesRawSource(r.stranded.Source())
	}
	// The advice of every profile follows the nodes' labels and the PriorityClasses.
	return r.watchCluster(b).Complete(r)
}

// otherProfiles enqueues, for a profile's create, delete or spec change, the other profiles that
// ask for the same scheduler name: a name conflict starts or ends. An update maps its old object
// too, so the name a profile left is covered. The other members of its Scheduler are not
// enqueued here: what one member's change does to the others (the oldest member's queue sort,
// the member limit, the size of the configuration) changes the Scheduler's configuration or its
// Degraded condition, and the Scheduler's status write enqueues its members (membersOf), once,
// rather than every member once for the change and once more for the rollout.
func (r *SchedulerProfileReconciler) otherProfiles(ctx context.Context, obj client.Object) []reconcile.Request {
	p, ok := obj.(*schedulingv1alpha1.SchedulerProfile)
	if !ok {
		return nil
	}
	reqs := r.profileRequests(ctx, nil, client.MatchingFields{plan.IndexSchedulerName: profile.SchedulerName(p)})
	return slices.DeleteFunc(reqs, func(req reconcile.Request) bool { return req.Name == p.Name })
}

// membersOf enqueues the profiles that name a Scheduler.
func (r *SchedulerProfileReconciler) membersOf(ctx context.Context, obj client.Object) []reconcile.Request {
	return r.profileRequests(ctx, nil, client.MatchingFields{plan.IndexSchedulerRef: obj.GetName()})
}

// profilesOfSchedulerPod enqueues the profile whose own scheduler a pod runs, or the members of
// the Scheduler it runs.
func (r *SchedulerProfileReconciler) profilesOfSchedulerPod(ctx context.Context, obj client.Object) []reconcile.Request {
	if p, ok := obj.GetLabels()[schedulingv1alpha1.LabelProfile]; ok {
		return []reconcile.Request{{NamespacedName: client.ObjectKey{Name: p}}}
	}
	if s, ok := obj.GetLabels()[schedulingv1alpha1.LabelScheduler]; ok {
		return r.membersOf(ctx, &schedulingv1alpha1.Scheduler{ObjectMeta: metav1.ObjectMeta{Name: s}})
	}
	return nil
}

// servingChanged passes the events of a scheduler pod that change whether it serves (podServes).
var servingChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		a, aok := e.ObjectOld.(*corev1.Pod)
		b, bok := e.ObjectNew.(*corev1.Pod)
		return aok && bok && plan.PodServes(a) != plan.PodServes(b)
	},
}

// membersOfDeployment enqueues the profiles of the Scheduler that a Deployment runs, when the
// Scheduler is gone or being deleted. Otherwise the Scheduler's own pass follows its Deployment,
// and its status says what the members' statuses take from the Deployment (availability,
// progress, the configuration that runs): the write of that status enqueues them (membersOf),
// so that a Deployment's event does not pass every member twice.
func (r *SchedulerProfileReconciler) membersOfDeployment(ctx context.Context, obj client.Object) []reconcile.Request {
	name, ok := obj.GetLabels()[schedulingv1alpha1.LabelScheduler]
	if !ok {
		return nil
	}
	s := &schedulingv1alpha1.Scheduler{}
	if err := r.client.Get(ctx, client.ObjectKey{Name: name}, s); err == nil && s.DeletionTimestamp == nil {
		return nil
	}
	return r.membersOf(ctx, &schedulingv1alpha1.Scheduler{ObjectMeta: metav1.ObjectMeta{Name: name}})
}

// notMemberStatusWrite drops the update events of a Scheduler's member that leave its spec,
// labels, annotations and deletion as they are: the member's own status writes, which would
// each pass it once more for nothing. Its status is computed from its spec and its Scheduler,
// whose events enqueue it.
var notMemberStatusWrite = predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
	old, ok := e.ObjectOld.(*schedulingv1alpha1.SchedulerProfile)
	p, okNew := e.ObjectNew.(*schedulingv1alpha1.SchedulerProfile)
	if !ok || !okNew || old.Spec.SchedulerRef.Name == "" || p.Spec.SchedulerRef.Name == "" {
		return true
	}
	return old.Generation != p.Generation || (old.DeletionTimestamp == nil) != (p.DeletionTimestamp == nil) ||
		!maps.Equal(old.Labels, p.Labels) || !maps.Equal(old.Annotations, p.Annotations)
}}

// profileRequests are the requests of the profiles that opts list (a field of the cache's index)
// and match accepts; a nil match accepts every one.
func (r *SchedulerProfileReconciler) profileRequests(ctx context.Context, match func(*schedulingv1alpha1.SchedulerProfile) bool, opts ...client.ListOption) []reconcile.Request {
	var list schedulingv1alpha1.SchedulerProfileList
	if err := r.client.List(ctx, &list, append(opts, client.UnsafeDisableDeepCopy)...); err != nil { // only read
		log.FromContext(ctx).Error(err, "Listing SchedulerProfiles")
		return nil
	}
	var reqs []reconcile.Request
	for i := range list.Items {
		if match == nil || match(&list.Items[i]) {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKey{Name: list.Items[i].Name}})
		}
	}
	return reqs
}

// Reconcile gets the profile, brings its objects to the desired state, and writes its status once.
func (r *SchedulerProfileReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	p := &schedulingv1alpha1.SchedulerProfile{}
	if err := r.client.Get(ctx, req.NamespacedName, p); err != nil {
		if apierrors.IsNotFound(err) {
			// Its objects are garbage-collected through their owner references.
			r.Metrics.Forget(req.Name)
			r.Previews.Forget(req.Name)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	logger := log.FromContext(ctx).WithValues("SchedulerProfile", klog.KObj(p))
	ctx = log.IntoContext(ctx, logger)
	if p.DeletionTimestamp != nil {
		// Deletion is final: nothing is applied, not even the objects the garbage collector is
		// removing, and the status stays as the last pass left it.
		logger.V(1).Info("Being deleted, not reconciled")
		return ctrl.Result{}, nil
	}

	obs, reconcileErr := r.reconcile(ctx, p)
	if assigned, err := assignedTo(ctx, r.client, obs.schedulerName); err != nil {
		reconcileErr = errors.Join(reconcileErr, err)
	} else {
		obs.assigned = assigned
	}
	if reconcileErr != nil {
		obs.failure = reconcileErr.Error()
	}
	before := p.DeepCopy()
	setStatus(p, obs)
	if err := r.updateStatus(ctx, before, p); err != nil {
		if res, ok := afterStaleWrite(err); ok {
			return res, nil
		}
		return ctrl.Result{}, err
	}
	if p.Status.FailedRevision != "" && p.Status.FailedRevision != before.Status.FailedRevision {
		awaitFailureCached(ctx, r.client, &schedulingv1alpha1.SchedulerProfile{ObjectMeta: metav1.ObjectMeta{Name: p.Name}}, before.ResourceVersion)
	}
	r.recordEvents(before, p)
	recordMetrics(r.Metrics, before, p, obs)
	return ctrl.Result{RequeueAfter: plan.Recheck(obs.rollout.recheckAfter, obs.apiMissing != "" || obs.skew.refused != "")}, reconcileErr
}

// observation is what one pass found and did; the status is computed from it.
type observation struct {
	schedulerName string
	// process runs the profile: its own, or its Scheduler's; nil when the Scheduler is missing.
	process *plan.Process
	// schedulerMissing is set when schedulerRef names a Scheduler that does not exist.
	schedulerMissing bool
	// schedulerDeleting is set when schedulerRef names a Scheduler that is being deleted.
	schedulerDeleting bool
	// conflictWith is the profile that keeps the scheduler name, and ConflictServed says
	// whether it keeps it because it serves it (else it is older).
	conflictWith   string
	conflictServed bool
	// stoppedServing is set when the pass scaled the profile's own scheduler down, since it
	// served a scheduler name that another profile keeps.
	stoppedServing bool
	// invalid is the validator's message when the configuration would not start.
	invalid string
	// apiMissing names an API that the scheduler's feature gates need and the cluster lacks.
	apiMissing string
	// skew is what the version skew policy says of the scheduler against the apiserver.
	skew versionSkew
	// secret is why the Secrets of the extenders cannot be used: missing, or refused.
	secret plan.SecretRefusal
	// queueSortConflict is upstream's message when a shared profile sorts the queue unlike the
	// oldest profile of its Scheduler.
	queueSortConflict string
	// limit is set when a valid shared profile does not fit into its Scheduler.
	limit plan.LimitRefusal
	// notServed says which configuration a member's Scheduler runs when its replicas do not
	// serve the member's own entry; "" when they do, and for a profile with its own scheduler.
	notServed string
	// config is the valid configuration that was applied: the profile's own, or the one of its
	// Scheduler that serves its latest spec.
	config *profile.Config
	// deployment is the live scheduler Deployment, if any.
	deployment *appsv1.Deployment
	// applied is set when every owned object was applied.
	applied bool
	// rollout is what the pass found of the scheduler's rollouts.
	rollout rolloutState
	// failure is the error that ended the pass early, if any.
	failure string
	// advice is what the profile doctor found in the valid configuration of the latest spec,
	// when adviceChecked; adviceFailed says why it could not be worked out.
	advice        []advice.Advice
	adviceChecked bool
	adviceFailed  string
	// servedName is the scheduler name a running scheduler serves for the profile (runningNames).
	servedName string
	// stranded counts the pending pods assigned to the name the profile asks for and not served.
	stranded int32
	// assigned are the Namespaces assigned to the scheduler name.
	assigned schedulingv1alpha1.AssignedNamespaces
	// preview holds a change back for its preview (spec.rollout.preview), and previewed is the
	// latest preview that finished, nil when none did since the operator started.
	preview   preview.Gate
	previewed *schedulingv1alpha1.PreviewStatus
}

// reconcile runs the steps of one pass. An invalid or conflicting profile touches nothing: the
// scheduler that runs keeps running its last good configuration.
func (r *SchedulerProfileReconciler) reconcile(ctx context.Context, p *schedulingv1alpha1.SchedulerProfile) (*observation, error) {
	obs := &observation{schedulerName: profile.SchedulerName(p)}
	var err error
	if obs.servedName, err = r.servedNameFor(ctx, p, obs.schedulerName); err != nil {
		return obs, err
	}
	obs.stranded = r.stranded.Count(obs.schedulerName)
	if errs := webhooks.ValidateAccess(p); len(errs) > 0 {
		// The access policy reads it as admitting no namespace; nothing else of it changes.
		obs.invalid = errs.ToAggregate().Error()
		return obs, nil
	}
	if p.Spec.SchedulerRef.Name != "" {
		return obs, r.reconcileMember(ctx, p, obs)
	}
	proc := plan.DedicatedProcess(p, obs.schedulerName)
	obs.process = proc
	obs.previewed = r.Previews.Status(p.Name)
	st := rolloutStateOf(p.Status.ProcessStatus)
	obs.rollout = st
	if obs.deployment, err = r.LiveDeployment(ctx, proc); err != nil {
		return obs, err
	}
	served, err := r.ServedNamesOf(ctx, []string{obs.schedulerName})
	if err != nil {
		return obs, err
	}
	claimants, err := r.claimantsOf(ctx, obs.schedulerName, served)
	if err != nil {
		return obs, err
	}
	if obs.conflictWith, obs.conflictServed = plan.NameOwner(p, claimants, obs.schedulerName, served); obs.conflictWith != "" {
		return obs, r.stopServing(ctx, proc, obs, served)
	}
	// Refused settings come before a missing Secret, as for a Scheduler: the Secret would not help.
	if errs := proc.SettingsErrors(r.Settings); len(errs) > 0 {
		obs.invalid = errs.ToAggregate().Error()
		return obs, nil
	}
	if obs.secret, err = r.ReadExtenderSecrets(ctx, proc); err != nil || obs.secret.Refused() {
		return obs, err
	}
	cfg, invalid, _ := r.CheckDedicated(p, proc)
	if invalid != "" {
		obs.invalid = invalid
		return obs, nil
	}
	r.observeAdvice(ctx, p, proc, obs)
	if obs.apiMissing, err = r.APIs.Missing(proc.Run.FeatureGates); err != nil || obs.apiMissing != "" {
		return obs, err
	}
	if obs.skew, err = r.versions.skew(); err != nil || obs.skew.refused != "" {
		return obs, err
	}
	obs.config = cfg
	if obs.preview, err = r.preview(ctx, p, proc, cfg, obs.deployment); err != nil {
		return obs, err
	}
	if obs.preview.Held() {
		// The held change does not roll out, but an operator upgrade moves what runs.
		obs.deployment, obs.rollout, err = r.runHeld(ctx, proc, obs.deployment, st)
		return obs, err
	}
	defer r.lockUpgrade(obs.deployment)()
	if obs.deployment, obs.rollout, err = r.run(ctx, proc, cfg, st); err != nil {
		obs.rollout = st
		return obs, err
	}
	obs.applied = true
	return obs, nil
}

// servedNameFor is the scheduler name that a running scheduler serves for p now (runningNames):
// its own scheduler's, or its Scheduler's; asked is the name p asks for.
func (r *SchedulerProfileReconciler) servedNameFor(ctx context.Context, p *schedulingv1alpha1.SchedulerProfile, asked string) (string, error) {
	index, err := r.RunningNames(ctx, client.MatchingLabels{schedulingv1alpha1.LabelProfile: p.Name})
	if err != nil {
		return "", err
	}
	if ref := p.Spec.SchedulerRef.Name; ref != "" {
		shared, err := r.RunningNames(ctx, client.MatchingLabels{schedulingv1alpha1.LabelScheduler: ref})
		if err != nil {
			return "", err
		}
		for name, profiles := range shared {
			for _, n := range profiles {
				index.Add(name, n)
			}
		}
	}
	return plan.ServedNameOf(index, p.Name, asked), nil
}

// claimantsOf are the profiles that plan.NameOwner weighs for a scheduler name: those that ask for it
// and those that serve it (served, which a rename keeps serving until its rollout).
func (r *SchedulerProfileReconciler) claimantsOf(ctx context.Context, name string, served plan.ServedNames) ([]schedulingv1alpha1.SchedulerProfile, error) {
	var list schedulingv1alpha1.SchedulerProfileList
	if err := r.client.List(ctx, &list, client.MatchingFields{plan.IndexSchedulerName: name}, client.UnsafeDisableDeepCopy); err != nil { // only read
		return nil, fmt.Errorf("listing the SchedulerProfiles of scheduler name %s: %w", name, err)
	}
	for _, server := range served[name] {
		if strings.HasPrefix(server, plan.SchedulerHolderPrefix) {
			continue // a Scheduler's older revision: plan.NameOwner counts it as the oldest
		}
		if slices.ContainsFunc(list.Items, func(p schedulingv1alpha1.SchedulerProfile) bool { return p.Name == server }) {
			continue
		}
		p := schedulingv1alpha1.SchedulerProfile{}
		if err := r.client.Get(ctx, client.ObjectKey{Name: server}, &p); err != nil {
			if apierrors.IsNotFound(err) {
				continue // gone, its pods not yet: plan.NameOwner counts it as the oldest
			}
			return nil, fmt.Errorf("reading SchedulerProfile %s: %w", server, err)
		}
		list.Items = append(list.Items, p)
	}
	return list.Items, nil
}

// reconcileMember observes a profile of a shared Scheduler: the Scheduler's reconciler runs the
// process, and this pass works out the same plan to tell the profile what became of it. Once the
// shared scheduler serves the profile, the scheduler it may have run on its own is removed.
func (r *SchedulerProfileReconciler) reconcileMember(ctx context.Context, p *schedulingv1alpha1.SchedulerProfile, obs *observation) error {
	s := &schedulingv1alpha1.Scheduler{}
	if err := r.client.Get(ctx, client.ObjectKey{Name: p.Spec.SchedulerRef.Name}, s); err != nil {
		if apierrors.IsNotFound(err) {
			obs.schedulerMissing = true
			return nil
		}
		return fmt.Errorf("reading Scheduler %s: %w", p.Spec.SchedulerRef.Name, err)
	}
	proc := plan.SharedProcess(s)
	obs.process = proc
	obs.previewed = r.Previews.Status(p.Name)
	// The Scheduler's rollouts are the member's: its status shows them.
	obs.rollout = rolloutStateOf(s.Status.ProcessStatus)
	var err error
	if obs.deployment, err = r.LiveDeployment(ctx, proc); err != nil {
		return err
	}
	if obs.rollout.upgrade, err = r.upgradeStepOf(ctx, proc); err != nil {
		return err
	}
	if obs.notServed, err = r.memberNotServed(ctx, s, proc, obs.deployment, p); err != nil {
		return err
	}
	if s.DeletionTimestamp != nil {
		// A Scheduler being deleted serves the profile only until its Deployment is gone; the
		// profile's own scheduler, if it still has one, is kept.
		obs.schedulerDeleting = true
		return nil
	}
	if errs := proc.SettingsErrors(r.Settings); len(errs) > 0 {
		obs.invalid = "Scheduler " + s.Name + ": " + errs.ToAggregate().Error()
		return nil
	}
	if obs.secret, err = r.ReadExtenderSecrets(ctx, proc); err != nil || obs.secret.Refused() {
		return err
	}
	pl, err := r.PlanScheduler(ctx, s, proc, obs.deployment)
	if err != nil {
		return err
	}
	m := pl.Member(p.Name)
	if m == nil {
		return nil
	}
	obs.conflictWith, obs.conflictServed, obs.invalid, obs.queueSortConflict, obs.limit = m.ConflictWith, m.ConflictServed, m.Invalid, m.QueueSortConflict, m.Limit
	if m.Refused() {
		return nil
	}
	r.observeAdvice(ctx, p, proc, obs)
	if pl.Config == nil {
		return nil
	}
	// The Scheduler's reconciler holds the rollout back for a missing API or a version skew: say
	// so here too.
	if obs.apiMissing, err = r.APIs.Missing(proc.Run.FeatureGates); err != nil || obs.apiMissing != "" {
		return err
	}
	if obs.skew, err = r.versions.skew(); err != nil || obs.skew.refused != "" {
		return err
	}
	obs.config = pl.Config
	// A change its preview holds back is not applied: the Scheduler serves the running entry.
	if obs.preview = m.Preview; obs.preview.Held() {
		return nil
	}
	// While the upgrade wave keeps the Scheduler on the legacy lease, it runs the configuration
	// on that lease.
	if _, obs.rollout.upgrade.config, err = obs.rollout.upgrade.keepLease(proc, pl.Config); err != nil {
		return err
	}
	obs.applied = obs.deployment != nil && obs.deployment.Spec.Template.Annotations[schedulingv1alpha1.AnnotationConfigHash] == obs.rollout.upgrade.config.Hash
	// Hand-over before release: the profile's own scheduler goes only once every replica of the
	// Scheduler runs the configuration that contains the profile. An available replica of the
	// old revision does not serve it, and a new revision that fails is rolled back.
	if obs.applied && plan.DeploymentAvailable(obs.deployment) {
		return r.releaseOwnProcess(ctx, p, obs.schedulerName)
	}
	return nil
}

// memberNotServed says which configuration the Scheduler's replicas run when it has no entry of
// the member p, "" when its replicas serve p. The entry must be in the configuration of the
// Deployment's template; while that configuration rolls out, old replicas may run one without
// it, so a member that was not Available becomes so only once the rollout is complete.
func (r *SchedulerProfileReconciler) memberNotServed(ctx context.Context, s *schedulingv1alpha1.Scheduler, proc *plan.Process, d *appsv1.Deployment, p *schedulingv1alpha1.SchedulerProfile) (string, error) {
	if d == nil {
		return "", nil // availability says nothing runs
	}
	running, err := r.RunningEntries(ctx, s, proc, d)
	if err != nil {
		return "", err
	}
	configMap := proc.Names.ConfigMap(d.Spec.Template.Annotations[schedulingv1alpha1.AnnotationConfigHash])
	if running[p.Name] == nil {
		return fmt.Sprintf("Scheduler %s runs the configuration %s, which has no entry of this profile (see ConfigValid)", s.Name, configMap), nil
	}
	if !plan.DeploymentAvailable(d) && !meta.IsStatusConditionTrue(p.Status.Conditions, schedulingv1alpha1.ConditionAvailable) {
		return fmt.Sprintf("Scheduler %s is rolling out the configuration %s, which has this profile's entry; its available replicas may run one without it", s.Name, configMap), nil
	}
	return "", nil
}

// releaseOwnProcess removes the scheduler a member may have run on its own. It is done once per
// generation of the member: a member's own scheduler is only applied by a pass of a generation
// without a schedulerRef, so once the removal found nothing left, the next passes of the same
// generation (one per rollout of its Scheduler) need not read its nine objects again.
func (r *SchedulerProfileReconciler) releaseOwnProcess(ctx context.Context, p *schedulingv1alpha1.SchedulerProfile, schedulerName string) error {
	key := string(p.UID) + "/" + strconv.FormatInt(p.Generation, 10)
	if p.UID == "" {
		key = ""
	}
	if key != "" && r.Cache().Released(key) {
		return nil
	}
	if err := r.removeProcess(ctx, plan.DedicatedProcess(p, schedulerName)); err != nil {
		return err
	}
	if key != "" {
		r.Cache().MarkReleased(key)
	}
	return nil
}
