package core

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/controllers/plan"
	"github.com/schedops/scheduler-profile-operator/scheduler/profile"
)

// Leases are deleted here with the Lease rule of the operator's namespace
// (schedulerprofile_controller.go), which grants delete.

const (
	// leaseSkewMargin is how long past its expiry (renewTime + leaseDurationSeconds) a held
	// lease is still taken to be renewed: renewTime is written by the holder's clock and
	// compared here with the operator's.
	leaseSkewMargin = 30 * time.Second
	// defaultLeaseDuration is upstream's leaseDuration, for a held lease that does not say its own.
	defaultLeaseDuration = 15 * time.Second
	// leaseRecheck is when a lease that changed between its read and its deletion is judged again.
	leaseRecheck = time.Second
	// leaseListRetry is how often the first list of the leases is retried when it fails.
	leaseListRetry = 10 * time.Second
)

// leaseReconciler deletes the leader-election Lease of a managed scheduler once no scheduler
// uses it: a profile that is deleted, renamed (a new scheduler name is a new lease) or moved
// into or out of a Scheduler leaves its old lease behind. A lease is used while an owner that is
// not being deleted renders it, or a scheduler pod of ours that has not ended runs on it (the
// old pods of a rollout renew the old lease until they stop); a lease that is not used is still
// kept while its holder may renew it. Only the leases of the operator's namespace with
// profile.LeasePrefix are ever judged.
//
// Leases are not watched: every scheduler renews its own each second, and the operator would
// decode a thousand events a second to learn nothing. What ends a lease's use is watched
// instead (an owner's deletion or change, a pod's end), and every lease is judged once when the
// controller starts, for what was left while the operator did not run. A pass reads the cache,
// and the apiserver only for a lease that nothing uses; it writes nothing unless it deletes.
type leaseReconciler struct {
	// client reads the cache and deletes.
	client client.Client
	// leases reads the leases from the apiserver.
	leases client.Reader
	// namespace is the operator's namespace, where the schedulers' leases are.
	namespace string
	// now is the clock that a lease's expiry is judged by.
	now func() time.Time
}

// newLeaseReconciler returns the reconciler of the schedulers' leases in namespace; c reads the
// cache and leases the apiserver.
func newLeaseReconciler(c client.Client, leases client.Reader, namespace string) *leaseReconciler {
	return &leaseReconciler{client: c, leases: leases, namespace: namespace, now: time.Now}
}

// SetupWithManager watches what ends a lease's use, and lists the leases once at start.
func (r *leaseReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("lease").
		Watches(&schedulingv1alpha1.SchedulerProfile{}, handler.EnqueueRequestsFromMapFunc(r.leaseOf), builder.WithPredicates(ownerLeaves)).
		Watches(&schedulingv1alpha1.Scheduler{}, handler.EnqueueRequestsFromMapFunc(r.leaseOf), builder.WithPredicates(ownerLeaves)).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(r.leaseOf), builder.WithPredicates(podEnds)).
		WatchesRawSource(source.Func(r.listLeases)).
		Complete(r)
}

// Reconcile deletes the lease req names when no scheduler uses it.
func (r *leaseReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	if req.Namespace != r.namespace || !strings.HasPrefix(req.Name, profile.LeasePrefix) {
		return ctrl.Result{}, nil // another component's lease: never ours to judge
	}
	logger := log.FromContext(ctx).WithValues("Lease", klog.KRef(req.Namespace, req.Name))
	ctx = log.IntoContext(ctx, logger)
	used, err := r.used(ctx, req.Name)
	if err != nil || used {
		return ctrl.Result{}, err
	}
	lease := &coordinationv1.Lease{}
	if err := r.leases.Get(ctx, req.NamespacedName, lease); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("reading the lease: %w", err)
	}
	if held := heldFor(lease, r.now()); held > 0 {
		logger.V(1).Info("Unused lease still held, judged again when it expires", "holder", ptr.Deref(lease.Spec.HolderIdentity, ""), "after", held)
		return ctrl.Result{RequeueAfter: held}, nil
	}
	// The preconditions refuse the deletion if a scheduler renewed or took the lease since it
	// was read. A free lease deleted just before a new scheduler wants it (an owner the cache
	// has not seen yet) costs nothing: leader election creates a lease that does not exist.
	err = r.client.Delete(ctx, lease, client.Preconditions{UID: &lease.UID, ResourceVersion: &lease.ResourceVersion})
	switch {
	case apierrors.IsNotFound(err):
		return ctrl.Result{}, nil
	case apierrors.IsConflict(err):
		return ctrl.Result{RequeueAfter: leaseRecheck}, nil
	case err != nil:
		return ctrl.Result{}, fmt.Errorf("deleting the unused lease: %w", err)
	}
	logger.Info("Deleted the lease of a scheduler that no longer runs")
	return ctrl.Result{}, nil
}

// used tells whether a scheduler may hold the lease now or soon: an owner renders it, or a pod
// of ours that has not ended runs on it.
func (r *leaseReconciler) used(ctx context.Context, name string) (bool, error) {
	rendered, err := r.rendered(ctx, name)
	if err != nil || rendered {
		return rendered, err
	}
	var pods corev1.PodList
	if err := r.client.List(ctx, &pods, client.InNamespace(r.namespace), client.MatchingFields{plan.IndexLease: name}, client.UnsafeDisableDeepCopy); err != nil { // only read
		return false, fmt.Errorf("listing the scheduler pods on the lease: %w", err)
	}
	return slices.ContainsFunc(pods.Items, func(p corev1.Pod) bool { return !podEnded(&p) }), nil
}

// rendered tells whether an owner that is not being deleted renders the lease: a profile that
// runs its own scheduler under the scheduler name the lease is named after, or the Scheduler
// whose process the lease is named after. Only a Scheduler's lease has a ".".
func (r *leaseReconciler) rendered(ctx context.Context, name string) (bool, error) {
	var owners []client.Object
	rest := strings.TrimPrefix(name, profile.LeasePrefix)
	if scheduler, ok := strings.CutSuffix(rest, sharedLeaseSuffix); ok {
		s := &schedulingv1alpha1.Scheduler{}
		switch err := r.client.Get(ctx, client.ObjectKey{Name: scheduler}, s); {
		case err == nil:
			owners = append(owners, s)
		case !apierrors.IsNotFound(err):
			return false, fmt.Errorf("reading Scheduler %s: %w", scheduler, err)
		}
	} else {
		var list schedulingv1alpha1.SchedulerProfileList
		if err := r.client.List(ctx, &list, client.MatchingFields{plan.IndexSchedulerName: rest}, client.UnsafeDisableDeepCopy); err != nil { // only read
			return false, fmt.Errorf("listing the SchedulerProfiles of scheduler name %s: %w", rest, err)
		}
		for i := range list.Items {
			owners = append(owners, &list.Items[i])
		}
	}
	return slices.ContainsFunc(owners, func(o client.Object) bool { return rendersLease(o) == name }), nil
}

// sharedLeaseSuffix ends the lease of every Scheduler's process (sharedProcess): its
// Deployment's name after the Scheduler's.
var sharedLeaseSuffix = strings.TrimPrefix(plan.SharedProcess(&schedulingv1alpha1.Scheduler{}).LeaseName, profile.LeasePrefix)

// rendersLease is the lease an owner's scheduler runs on now: a profile's own scheduler's, a
// Scheduler's; none for an owner being deleted, which is not reconciled into anything, or for a
// member of a Scheduler, which runs on its Scheduler's.
func rendersLease(obj client.Object) string {
	if obj.GetDeletionTimestamp() != nil {
		return ""
	}
	switch o := obj.(type) {
	case *schedulingv1alpha1.SchedulerProfile:
		if o.Spec.SchedulerRef.Name == "" {
			return plan.DedicatedProcess(o, profile.SchedulerName(o)).LeaseName
		}
	case *schedulingv1alpha1.Scheduler:
		return plan.SharedProcess(o).LeaseName
	}
	return ""
}

// leaseOf enqueues the lease an owner's scheduler runs on, or would if it ran its own (a member
// of a Scheduler may still run its own until the hand-over), or the lease of a scheduler pod.
// An update maps the old object too, so the lease a rename left is judged.
func (r *leaseReconciler) leaseOf(_ context.Context, obj client.Object) []reconcile.Request {
	var name string
	switch o := obj.(type) {
	case *schedulingv1alpha1.SchedulerProfile:
		name = plan.DedicatedProcess(o, profile.SchedulerName(o)).LeaseName
	case *schedulingv1alpha1.Scheduler:
		name = plan.SharedProcess(o).LeaseName
	case *corev1.Pod:
		name = o.Annotations[schedulingv1alpha1.AnnotationLease]
	}
	if !strings.HasPrefix(name, profile.LeasePrefix) {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: r.namespace, Name: name}}}
}

// ownerLeaves passes the events after which an owner may no longer render a lease: its deletion,
// the start of its deletion, and a change of its spec (a new scheduler name, a schedulerRef).
var ownerLeaves = predicate.Funcs{
	CreateFunc:  func(event.CreateEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		return e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration() ||
			(e.ObjectOld.GetDeletionTimestamp() == nil) != (e.ObjectNew.GetDeletionTimestamp() == nil)
	},
}

// podEnds passes the end of a pod: its deletion, or its move to a phase it does not leave.
var podEnds = predicate.Funcs{
	CreateFunc:  func(event.CreateEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		old, okOld := e.ObjectOld.(*corev1.Pod)
		pod, ok := e.ObjectNew.(*corev1.Pod)
		return okOld && ok && !podEnded(old) && podEnded(pod)
	},
}

// podEnded tells whether a pod's containers will not run again.
func podEnded(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// heldFor is how long a lease's holder may still renew it; zero when it has none (a scheduler
// that stops releases its lease) or its time ran out.
func heldFor(lease *coordinationv1.Lease, now time.Time) time.Duration {
	if ptr.Deref(lease.Spec.HolderIdentity, "") == "" {
		return 0
	}
	renewed := lease.CreationTimestamp.Time
	if lease.Spec.RenewTime != nil {
		renewed = lease.Spec.RenewTime.Time
	}
	duration := defaultLeaseDuration
	if d := lease.Spec.LeaseDurationSeconds; d != nil {
		duration = time.Duration(*d) * time.Second
	}
	return max(renewed.Add(duration+leaseSkewMargin).Sub(now), 0)
}

// listLeases enqueues every lease of ours when the controller starts, in the background: a list
// that fails is retried, and does not keep the operator from starting.
func (r *leaseReconciler) listLeases(ctx context.Context, queue workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
	go func() {
		_ = wait.PollUntilContextCancel(ctx, leaseListRetry, true, func(ctx context.Context) (bool, error) {
			list := &metav1.PartialObjectMetadataList{}
			list.SetGroupVersionKind(coordinationv1.SchemeGroupVersion.WithKind("LeaseList"))
			if err := r.leases.List(ctx, list, client.InNamespace(r.namespace)); err != nil {
				log.FromContext(ctx).Error(err, "Listing the schedulers' leases, retrying", "namespace", r.namespace)
				return false, nil
			}
			for _, l := range list.Items {
				if strings.HasPrefix(l.Name, profile.LeasePrefix) {
					queue.Add(reconcile.Request{NamespacedName: client.ObjectKey{Namespace: r.namespace, Name: l.Name}})
				}
			}
			return true, nil
		})
	}()
	return nil
}
