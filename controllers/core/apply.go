package core

import (
	"context"

	"k8s.io/apimachinery/pkg/runtime"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/controllers/deploy"
	"github.com/schedops/scheduler-profile-operator/controllers/plan"
)

// applyConfiguration is a typed apply configuration of one of the objects a process owns.
type applyConfiguration[A any] interface {
	runtime.ApplyConfiguration
	GetName() *string
	GetNamespace() *string
	WithOwnerReferences(...*metav1ac.OwnerReferenceApplyConfiguration) A
}

// newOwned sets the process's owner as the controller owner of an apply configuration, so that
// deleting the owner garbage-collects the object and a change to it reconciles the owner.
func newOwned[A applyConfiguration[A], T client.Object](proc *plan.Process, ac A, observed T, extract func(T, string) (A, error)) deploy.Owned {
	ac.WithOwnerReferences(metav1ac.OwnerReference().
		WithAPIVersion(schedulingv1alpha1.GroupVersion.String()).
		WithKind(proc.Kind).
		WithName(proc.Owner.GetName()).
		WithUID(proc.Owner.GetUID()).
		WithController(true).
		WithBlockOwnerDeletion(true))
	return deploy.Owned{
		Desired:  ac,
		Key:      client.ObjectKey{Name: ptr.Deref(ac.GetName(), ""), Namespace: ptr.Deref(ac.GetNamespace(), "")},
		Observed: observed,
		Extract: func(obj client.Object) (runtime.ApplyConfiguration, error) {
			return extract(obj.(T), schedulingv1alpha1.FieldManager)
		},
	}
}

// apply is deploy.Apply with the operator's client.
func (r *processObjects) apply(ctx context.Context, o deploy.Owned) (changed bool, err error) {
	return deploy.Apply(ctx, r.client, o)
}
