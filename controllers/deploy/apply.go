// Package deploy is the operator's write side: the pure builders of a scheduler process's objects
// (its ServiceAccount and bindings, ConfigMap, Deployment, PodDisruptionBudget and metrics
// Service) and the server-side apply of those and of namespace assignment's objects, which writes
// nothing where the operator's fields already have the values it wants.
package deploy

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
)

// Owned is one object the operator owns: what it should be, and how to read what it is.
type Owned struct {
	Desired runtime.ApplyConfiguration
	Key     client.ObjectKey
	// Observed is an empty object of the right type to read the live object into.
	Observed client.Object
	// Extract returns the fields of a live object that schedulingv1alpha1.FieldManager owns, as
	// an apply configuration comparable with Desired.
	Extract func(client.Object) (runtime.ApplyConfiguration, error)
}

// Apply server-side applies an owned object unless the fields the operator owns already have the
// desired values: re-applying identical content can still write (and bump resourceVersion), and a
// steady-state reconcile must write nothing. A field that someone else changed is no longer
// ours, so the comparison fails and the apply (forced) takes it back. c reads the live object
// (the cache) and applies.
func Apply(ctx context.Context, c client.Client, o Owned) (changed bool, err error) {
	live := o.Observed.DeepCopyObject().(client.Object)
	err = c.Get(ctx, o.Key, live)
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		return false, fmt.Errorf("reading %T %s: %w", o.Observed, o.Key, err)
	default:
		current, err := o.Extract(live)
		if err != nil {
			return false, fmt.Errorf("extracting the fields of %T %s: %w", o.Observed, o.Key, err)
		}
		if equality.Semantic.DeepEqual(current, o.Desired) {
			return false, nil
		}
	}
	if err := c.Apply(ctx, o.Desired, client.FieldOwner(schedulingv1alpha1.FieldManager), client.ForceOwnership); err != nil {
		return false, fmt.Errorf("applying %T %s: %w", o.Observed, o.Key, err)
	}
	return true, nil
}
