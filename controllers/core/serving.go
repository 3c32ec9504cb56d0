package core

import (
	"context"
	"fmt"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/controllers/plan"
)

// stopServing scales a profile's own scheduler to no replicas when it serves a scheduler name
// that another profile keeps, since two schedulers must never serve one name; the next pass that
// gives it the name applies its replicas again. A profile refused a name it does not serve yet
// keeps running what it runs (under its old name): nothing it served is lost.
func (r *processObjects) stopServing(ctx context.Context, proc *plan.Process, obs *observation, served plan.ServedNames) error {
	d := obs.deployment
	if d == nil || !metav1.IsControlledBy(d, proc.Owner) || plan.Replicas(d.Spec.Replicas) == 0 ||
		!slices.Contains(served[obs.schedulerName], proc.Owner.GetName()) {
		return nil
	}
	patch := client.MergeFrom(d.DeepCopy())
	d.Spec.Replicas = ptr.To[int32](0)
	if err := r.client.Patch(ctx, d, patch, client.FieldOwner(schedulingv1alpha1.FieldManager)); err != nil {
		return fmt.Errorf("scaling down the scheduler of a name another profile keeps: %w", err)
	}
	obs.stoppedServing = true
	log.FromContext(ctx).Info("Scaled down a scheduler that served a name another profile keeps", "schedulerName", obs.schedulerName, "owner", obs.conflictWith)
	return nil
}

// enqueueWaitingForNames enqueues, on an event of a scheduler pod or Deployment, what the profiles
// waiting for a scheduler name (ConfigValid=False, SchedulerNameConflict) need reconciled: the
// name they wait for may be free now that a scheduler stopped serving it. request maps a waiting
// profile to its request, if any.
func enqueueWaitingForNames(c client.Reader, request func(*schedulingv1alpha1.SchedulerProfile) (string, bool)) handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, obj client.Object) []reconcile.Request {
		if obj.GetLabels()[plan.LabelManagedBy] != schedulingv1alpha1.FieldManager {
			return nil
		}
		var list schedulingv1alpha1.SchedulerProfileList
		if err := c.List(ctx, &list, client.MatchingFields{plan.IndexWaitingForName: plan.IndexValue}, client.UnsafeDisableDeepCopy); err != nil { // only read
			log.FromContext(ctx).Error(err, "Listing SchedulerProfiles")
			return nil
		}
		var reqs []reconcile.Request
		for i := range list.Items {
			if name, ok := request(&list.Items[i]); ok && !slices.ContainsFunc(reqs, func(r reconcile.Request) bool { return r.Name == name }) {
				reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKey{Name: name}})
			}
		}
		return reqs
	})
}

// waitingProfile is the request of a profile waiting for a scheduler name: its own.
func waitingProfile(p *schedulingv1alpha1.SchedulerProfile) (string, bool) { return p.Name, true }

// waitingScheduler is the request of a member waiting for a scheduler name: its Scheduler's, which
// serves it.
func waitingScheduler(p *schedulingv1alpha1.SchedulerProfile) (string, bool) {
	return p.Spec.SchedulerRef.Name, p.Spec.SchedulerRef.Name != ""
}
