package controllers

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
)

// applyConfiguration is a typed apply configuration of one of the objects a process owns.
type applyConfiguration[A any] interface {
	runtime.ApplyConfiguration
	GetName() *string
	GetNamespace() *string
	WithOwnerReferences(...*metav1ac.OwnerReferenceApplyConfiguration) A
}

// owned is one object a process owns: what it should be, and how to read what it is.
type owned struct {
	desired runtime.ApplyConfiguration
	key     client.ObjectKey
	// observed is an empty object of the right type to read the live object into.
	observed client.Object
	// extract returns the fields of a live object that schedulingv1alpha1.FieldManager owns, as an apply
	// configuration comparable with desired.
	extract func(client.Object) (runtime.ApplyConfiguration, error)
}

// newOwned sets the process's owner as the controller owner of an apply configuration, so that
// deleting the owner garbage-collects the object and a change to it reconciles the owner.
func newOwned[A applyConfiguration[A], T client.Object](proc *process, ac A, observed T, extract func(T, string) (A, error)) owned {
	ac.WithOwnerReferences(metav1ac.OwnerReference().
		WithAPIVersion(schedulingv1alpha1.GroupVersion.String()).
		WithKind(proc.kind).
		WithName(proc.owner.GetName()).
		WithUID(proc.owner.GetUID()).
		WithController(true).
		WithBlockOwnerDeletion(true))
	return owned{
		desired:  ac,
		key:      client.ObjectKey{Name: ptr.Deref(ac.GetName(), ""), Namespace: ptr.Deref(ac.GetNamespace(), "")},
		observed: observed,
		extract: func(obj client.Object) (runtime.ApplyConfiguration, error) {
			return extract(obj.(T), schedulingv1alpha1.FieldManager)
		},
	}
}

// apply server-side applies an owned object unless the fields the operator owns already have the
// desired values: re-applying identical content can still write (and bump resourceVersion), and a
// steady-state reconcile must write nothing. A field that someone else changed is no longer
// ours, so the comparison fails and the apply (forced) takes it back.
func (r *processObjects) apply(ctx context.Context, o owned) (changed bool, err error) {
	return applyOwned(ctx, r.client, o)
}

// applyOwned is apply with c, which reads the live object (the cache) and applies.
func applyOwned(ctx context.Context, c client.Client, o owned) (changed bool, err error) {
	live := o.observed.DeepCopyObject().(client.Object)
	err = c.Get(ctx, o.key, live)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return false, fmt.Errorf("reading %T %s: %w", o.observed, o.key, err)
	default:
		current, err := o.extract(live)
		if err != nil {
			return false, fmt.Errorf("extracting the fields of %T %s: %w", o.observed, o.key, err)
		}
		if equality.Semantic.DeepEqual(current, o.desired) {
			return false, nil
		}
	}
	if err := c.Apply(ctx, o.desired, client.FieldOwner(schedulingv1alpha1.FieldManager), client.ForceOwnership); err != nil {
		return false, fmt.Errorf("applying %T %s: %w", o.observed, o.key, err)
	}
	return true, nil
}
