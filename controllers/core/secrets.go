package core

import (
	"context"
	"slices"

	"k8s.io/apimachinery/pkg/util/sets"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/scheduler/profile"
)

// schedulerRequests are the Schedulers with an extender that uses the named Secret.
func (r *processObjects) schedulerRequests(ctx context.Context, secret string) []reconcile.Request {
	var list schedulingv1alpha1.SchedulerList
	if err := r.client.List(ctx, &list); err != nil {
		log.FromContext(ctx).Error(err, "Listing Schedulers")
		return nil
	}
	var reqs []reconcile.Request
	for _, s := range list.Items {
		if slices.Contains(profile.ExtenderSecrets(s.Spec.Extenders), secret) {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKey{Name: s.Name}})
		}
	}
	return reqs
}

// profilesNamingSecret enqueues the profiles whose scheduler calls an extender with the Secret:
// a profile's own extenders, or those of its Scheduler. A Secret that appears lets them roll out;
// a changed one rolls their scheduler.
func (r *SchedulerProfileReconciler) profilesNamingSecret(ctx context.Context, obj client.Object) []reconcile.Request {
	if obj.GetNamespace() != r.Settings.Namespace {
		return nil
	}
	schedulers := sets.New[string]()
	for _, req := range r.schedulerRequests(ctx, obj.GetName()) {
		schedulers.Insert(req.Name)
	}
	return r.profileRequests(ctx, func(p *schedulingv1alpha1.SchedulerProfile) bool {
		if ref := p.Spec.SchedulerRef.Name; ref != "" {
			return schedulers.Has(ref)
		}
		return slices.Contains(profile.ExtenderSecrets(p.Spec.Extenders), obj.GetName())
	})
}

// schedulersNamingSecret enqueues the Schedulers with an extender that uses the Secret.
func (r *SchedulerReconciler) schedulersNamingSecret(ctx context.Context, obj client.Object) []reconcile.Request {
	if obj.GetNamespace() != r.Settings.Namespace {
		return nil
	}
	return r.schedulerRequests(ctx, obj.GetName())
}
