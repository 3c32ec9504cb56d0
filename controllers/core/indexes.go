package core

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/controllers/plan"
)

// ownedBy lists the objects of a process by plan.IndexOwner.
func ownedBy(proc *plan.Process) client.MatchingFields {
	return client.MatchingFields{plan.IndexOwner: plan.OwnerKey(proc.OwnerLabel, proc.Owner.GetName())}
}

// IndexObjects adds plan.FieldIndexes to a manager's cache, for an operator whose scheduler
// image is image; ms remembers the parsed configurations (nil: none).
func IndexObjects(ctx context.Context, indexer client.FieldIndexer, image string, ms *plan.Memos) error {
	for _, i := range plan.FieldIndexes(heldBy(image), ms) {
		if err := indexer.IndexField(ctx, i.Obj, i.Field, i.Extract); err != nil {
			return fmt.Errorf("indexing %T by %s: %w", i.Obj, i.Field, err)
		}
	}
	return nil
}

// isScheduler tells whether a Deployment is a scheduler the operator manages.
func isScheduler(d *appsv1.Deployment) bool {
	return d.Labels[plan.LabelName] == "kube-scheduler" && d.Labels[plan.LabelManagedBy] == schedulingv1alpha1.FieldManager
}

// heldBy tells which scheduler Deployments plan.IndexHeld holds for an operator whose scheduler
// image is image: those not yet on it and its lease (upgradedTo), the upgrade wave's.
func heldBy(image string) func(*appsv1.Deployment) bool {
	return func(d *appsv1.Deployment) bool { return isScheduler(d) && !upgradedTo(image, d) }
}
