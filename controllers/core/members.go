package core

import (
	"context"

	"github.com/schedops/scheduler-profile-operator/controllers/plan"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
)

// schedulersWithLeavingMembers enqueues, on an event of a scheduler Deployment, the Schedulers
// that still serve a profile that left them: the profile's new scheduler may serve it now.
func (r *processObjects) schedulersWithLeavingMembers(ctx context.Context, obj client.Object) []reconcile.Request {
	if obj.GetLabels()[plan.LabelManagedBy] != schedulingv1alpha1.FieldManager {
		return nil
	}
	var schedulers schedulingv1alpha1.SchedulerList
	if err := r.client.List(ctx, &schedulers, client.UnsafeDisableDeepCopy); err != nil { // only read
		log.FromContext(ctx).Error(err, "Listing Schedulers")
		return nil
	}
	if len(schedulers.Items) == 0 {
		return nil
	}
	// One list of the profiles, rather than a read of each member of every Scheduler: every
	// event of a scheduler Deployment comes here. Without the list, every Scheduler with a
	// member is enqueued, as for a member that could not be read.
	var profiles schedulingv1alpha1.SchedulerProfileList
	if err := r.client.List(ctx, &profiles, client.UnsafeDisableDeepCopy); err != nil { // only read
		log.FromContext(ctx).Error(err, "Listing SchedulerProfiles")
	}
	refs := make(map[string]string, len(profiles.Items))
	for i := range profiles.Items {
		refs[profiles.Items[i].Name] = profiles.Items[i].Spec.SchedulerRef.Name
	}
	var reqs []reconcile.Request
	for _, s := range schedulers.Items {
		for _, m := range s.Status.Profiles {
			if ref, ok := refs[m.Name]; !ok || ref != s.Name {
				reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKey{Name: s.Name}})
				break
			}
		}
	}
	return reqs
}
