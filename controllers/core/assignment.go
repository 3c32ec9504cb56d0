package core

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/controllers/plan"
)

// status.assignedNamespaces counts the labelled Namespaces, from the cache.
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get;list;watch

// assignedNamespaces selects the Namespaces the cache holds: those that assign their pods to a
// scheduler name, so that the operator's memory does not grow with the cluster's namespaces.
func assignedNamespaces() labels.Selector {
	req, err := labels.NewRequirement(schedulingv1alpha1.LabelAssignSchedulerName, selection.Exists, nil)
	if err != nil {
		panic(fmt.Sprintf("the selector of assigned namespaces: %v", err))
	}
	return labels.NewSelector().Add(*req)
}

// maxAssignedNamespaceNames is how many Namespaces status.assignedNamespaces names.
const maxAssignedNamespaceNames = 5

// assignedTo reads from the cache the Namespaces that assign their pods to a scheduler name: how
// many, and the first in alphabetical order; the zero value when none does.
func assignedTo(ctx context.Context, c client.Reader, name string) (schedulingv1alpha1.AssignedNamespaces, error) {
	var list corev1.NamespaceList
	if err := c.List(ctx, &list, client.MatchingLabels{schedulingv1alpha1.LabelAssignSchedulerName: name}, client.UnsafeDisableDeepCopy); err != nil { // only read
		return schedulingv1alpha1.AssignedNamespaces{}, fmt.Errorf("listing the Namespaces assigned to %s: %w", name, err)
	}
	if len(list.Items) == 0 {
		return schedulingv1alpha1.AssignedNamespaces{}, nil
	}
	names := make([]string, 0, len(list.Items))
	for i := range list.Items {
		names = append(names, list.Items[i].Name)
	}
	slices.Sort(names)
	return schedulingv1alpha1.AssignedNamespaces{Count: int32(len(names)), Names: names[:min(len(names), maxAssignedNamespaceNames)]}, nil
}

// profilesAssignedBy enqueues the profiles of the scheduler name a Namespace assigns its pods to;
// for a relabelled Namespace, of the name it left too (the handler maps the old object as well).
func (r *SchedulerProfileReconciler) profilesAssignedBy(ctx context.Context, obj client.Object) []reconcile.Request {
	name, ok := obj.GetLabels()[schedulingv1alpha1.LabelAssignSchedulerName]
	if !ok {
		return nil
	}
	return r.profileRequests(ctx, nil, client.MatchingFields{plan.IndexSchedulerName: name})
}
