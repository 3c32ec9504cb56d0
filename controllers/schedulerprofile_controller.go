// Package controllers holds the SchedulerProfile reconciler: it renders and validates a
// profile's configuration and runs a scheduler Deployment with it.
package controllers

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	policyv1ac "k8s.io/client-go/applyconfigurations/policy/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	"k8s.io/client-go/tools/events"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/scheduler/profile"
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
// +kubebuilder:rbac:groups="",namespace=scheduler-profile-operator-system,resources=serviceaccounts;configmaps,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=apps,namespace=scheduler-profile-operator-system,resources=deployments,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=apps,namespace=scheduler-profile-operator-system,resources=replicasets,verbs=get;list;watch
// +kubebuilder:rbac:groups=policy,namespace=scheduler-profile-operator-system,resources=poddisruptionbudgets,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,namespace=scheduler-profile-operator-system,resources=roles;rolebindings,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=scheduler-profile-operator-system,resources=leases,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",namespace=scheduler-profile-operator-system,resources=events,verbs=create;patch

// SchedulerProfileReconciler turns each SchedulerProfile into a validated configuration and the
// scheduler Deployment that runs it.
type SchedulerProfileReconciler struct {
	client   client.Client
	recorder events.EventRecorder
	settings settings
}

// NewSchedulerProfileReconciler returns a reconciler that runs schedulers in namespace with
// image, the image of kube-scheduler with this project's plugins.
func NewSchedulerProfileReconciler(c client.Client, recorder events.EventRecorder, namespace, image string) *SchedulerProfileReconciler {
	return &SchedulerProfileReconciler{client: c, recorder: recorder, settings: settings{namespace: namespace, image: image}}
}

// SetupWithManager watches profiles, the objects they own (a managed object edited or deleted by
// hand is restored), and other profiles, whose scheduler names can conflict.
func (r *SchedulerProfileReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&schedulingv1alpha1.SchedulerProfile{}).
		Owns(&corev1.ServiceAccount{}).
		Owns(&corev1.ConfigMap{}).
		Owns(&appsv1.Deployment{}).
		Owns(&policyv1.PodDisruptionBudget{}).
		Owns(&rbacv1.Role{}).
		Owns(&rbacv1.RoleBinding{}).
		Owns(&rbacv1.ClusterRoleBinding{}).
		// A profile's create, delete or scheduler-name change can start or end a conflict of
		// the others; status-only updates cannot.
		Watches(&schedulingv1alpha1.SchedulerProfile{},
			handler.EnqueueRequestsFromMapFunc(r.otherProfiles),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Complete(r)
}

// otherProfiles enqueues every profile but the one that changed.
func (r *SchedulerProfileReconciler) otherProfiles(ctx context.Context, obj client.Object) []reconcile.Request {
	var list schedulingv1alpha1.SchedulerProfileList
	if err := r.client.List(ctx, &list); err != nil {
		log.FromContext(ctx).Error(err, "Listing SchedulerProfiles for conflicts")
		return nil
	}
	var reqs []reconcile.Request
	for _, p := range list.Items {
		if p.Name != obj.GetName() {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKey{Name: p.Name}})
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
			forgetMetrics(req.Name)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	logger := log.FromContext(ctx).WithValues("schedulerProfile", klog.KObj(p))
	ctx = log.IntoContext(ctx, logger)

	obs, reconcileErr := r.reconcile(ctx, p)
	if reconcileErr != nil {
		obs.failure = reconcileErr.Error()
	}
	before := p.DeepCopy()
	setStatus(p, obs)
	if err := r.updateStatus(ctx, before, p); err != nil {
		if apierrors.IsConflict(err) {
			// The cache held an older profile; the newer one is on its way and reconciles again.
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	r.recordEvents(before, p)
	recordMetrics(before, p, obs)
	return ctrl.Result{}, reconcileErr
}

// observation is what one pass found and did; the status is computed from it.
type observation struct {
	schedulerName string
	// conflictWith is the older profile that claims the same scheduler name.
	conflictWith string
	// invalid is the validator's message when the configuration would not start.
	invalid string
	// config is the valid configuration that was applied.
	config *profile.Config
	// deployment is the live scheduler Deployment, if any.
	deployment *appsv1.Deployment
	// applied is set when every owned object was applied.
	applied bool
	// failure is the error that ended the pass early, if any.
	failure string
}

// reconcile runs the steps of one pass. An invalid or conflicting profile touches nothing: the
// scheduler that runs keeps running its last good configuration.
func (r *SchedulerProfileReconciler) reconcile(ctx context.Context, p *schedulingv1alpha1.SchedulerProfile) (*observation, error) {
	obs := &observation{schedulerName: profile.SchedulerName(p)}
	var err error
	if obs.deployment, err = r.liveDeployment(ctx, p); err != nil {
		return obs, err
	}
	if obs.conflictWith, err = r.conflictingProfile(ctx, p, obs.schedulerName); err != nil || obs.conflictWith != "" {
		return obs, err
	}
	cfg, err := profile.Render(p, profile.Settings{Namespace: r.settings.namespace})
	if err != nil {
		obs.invalid = err.Error()
		return obs, nil
	}
	if errs := profile.Validate(cfg.YAML); len(errs) > 0 {
		obs.invalid = errs.ToAggregate().Error()
		return obs, nil
	}
	obs.config = cfg
	if err := r.applyAll(ctx, p, cfg); err != nil {
		return obs, err
	}
	obs.applied = true
	if err := r.deleteUnwantedPDB(ctx, p); err != nil {
		return obs, err
	}
	if err := r.pruneConfigMaps(ctx, p, cfg.Hash); err != nil {
		return obs, err
	}
	obs.deployment, err = r.liveDeployment(ctx, p)
	return obs, err
}

// desiredObjects are the objects a valid profile owns, the ConfigMap before the Deployment that
// mounts it.
func (r *SchedulerProfileReconciler) desiredObjects(p *schedulingv1alpha1.SchedulerProfile, cfg *profile.Config) []owned {
	s := r.settings
	objs := []owned{
		newOwned(p, buildServiceAccount(p, s), &corev1.ServiceAccount{}, corev1ac.ExtractServiceAccount),
		newOwned(p, buildClusterRoleBinding(p, s, kubeSchedulerClusterRole), &rbacv1.ClusterRoleBinding{}, rbacv1ac.ExtractClusterRoleBinding),
		newOwned(p, buildClusterRoleBinding(p, s, volumeSchedulerClusterRole), &rbacv1.ClusterRoleBinding{}, rbacv1ac.ExtractClusterRoleBinding),
		newOwned(p, buildAuthReaderRoleBinding(p, s), &rbacv1.RoleBinding{}, rbacv1ac.ExtractRoleBinding),
		newOwned(p, buildLeaseRole(p, s, cfg.SchedulerName), &rbacv1.Role{}, rbacv1ac.ExtractRole),
		newOwned(p, buildLeaseRoleBinding(p, s), &rbacv1.RoleBinding{}, rbacv1ac.ExtractRoleBinding),
		newOwned(p, buildConfigMap(p, s, cfg), &corev1.ConfigMap{}, corev1ac.ExtractConfigMap),
	}
	if replicas(p.Spec.Scheduler.Replicas) > 1 {
		objs = append(objs, newOwned(p, buildPodDisruptionBudget(p, s), &policyv1.PodDisruptionBudget{}, policyv1ac.ExtractPodDisruptionBudget))
	}
	return append(objs, newOwned(p, buildDeployment(p, s, cfg), &appsv1.Deployment{}, appsv1ac.ExtractDeployment))
}

func (r *SchedulerProfileReconciler) applyAll(ctx context.Context, p *schedulingv1alpha1.SchedulerProfile, cfg *profile.Config) error {
	for _, o := range r.desiredObjects(p, cfg) {
		changed, err := r.apply(ctx, o)
		if err != nil {
			return err
		}
		if changed {
			log.FromContext(ctx).V(1).Info("Applied", "kind", fmt.Sprintf("%T", o.observed), "object", o.key)
		}
	}
	return nil
}

func (r *SchedulerProfileReconciler) liveDeployment(ctx context.Context, p *schedulingv1alpha1.SchedulerProfile) (*appsv1.Deployment, error) {
	d := &appsv1.Deployment{}
	err := r.client.Get(ctx, client.ObjectKey{Namespace: r.settings.namespace, Name: deploymentName(p)}, d)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the scheduler Deployment: %w", err)
	}
	return d, nil
}

// conflictingProfile returns the oldest other profile that resolves to the same scheduler name,
// if it is older than p: the older profile keeps the name.
func (r *SchedulerProfileReconciler) conflictingProfile(ctx context.Context, p *schedulingv1alpha1.SchedulerProfile, name string) (string, error) {
	var list schedulingv1alpha1.SchedulerProfileList
	if err := r.client.List(ctx, &list); err != nil {
		return "", fmt.Errorf("listing SchedulerProfiles: %w", err)
	}
	claimants := []schedulingv1alpha1.SchedulerProfile{*p}
	for _, other := range list.Items {
		if other.Name != p.Name && other.DeletionTimestamp == nil && profile.SchedulerName(&other) == name {
			claimants = append(claimants, other)
		}
	}
	oldest := slices.MinFunc(claimants, func(a, b schedulingv1alpha1.SchedulerProfile) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
	if oldest.Name == p.Name {
		return "", nil
	}
	return oldest.Name, nil
}

// deleteUnwantedPDB removes the PodDisruptionBudget of a profile scaled down to one replica.
func (r *SchedulerProfileReconciler) deleteUnwantedPDB(ctx context.Context, p *schedulingv1alpha1.SchedulerProfile) error {
	if replicas(p.Spec.Scheduler.Replicas) > 1 {
		return nil
	}
	pdb := &policyv1.PodDisruptionBudget{}
	err := r.client.Get(ctx, client.ObjectKey{Namespace: r.settings.namespace, Name: deploymentName(p)}, pdb)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading the PodDisruptionBudget: %w", err)
	}
	if !metav1.IsControlledBy(pdb, p) {
		return nil
	}
	if err := r.client.Delete(ctx, pdb); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting the PodDisruptionBudget: %w", err)
	}
	return nil
}
