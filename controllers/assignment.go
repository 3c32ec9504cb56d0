package controllers

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
)

// The pod assignment webhook reads the labelled Namespaces from the cache.
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
	return r.profileRequests(ctx, nil, client.MatchingFields{indexSchedulerName: name})
}

// SchedulerNameNotServed says why no Available SchedulerProfile serves a scheduler name, reading
// c, the manager's cache, by indexSchedulerName; "" when one does. A profile serves its name when
// it holds it (status.schedulerName), is not being deleted and its Available condition is True,
// which for a member of a Scheduler means that its own entry runs.
func SchedulerNameNotServed(ctx context.Context, c client.Reader, name string) (string, error) {
	var profiles schedulingv1alpha1.SchedulerProfileList
	if err := c.List(ctx, &profiles, client.MatchingFields{indexSchedulerName: name}); err != nil {
		return "", fmt.Errorf("listing the SchedulerProfiles of scheduler name %s: %w", name, err)
	}
	if len(profiles.Items) == 0 {
		return fmt.Sprintf("no SchedulerProfile has scheduler name %s", name), nil
	}
	// The reason names the first profile by name: the cache lists in no stable order.
	reason, first := "", ""
	for i := range profiles.Items {
		p := &profiles.Items[i]
		r := profileNotServing(p, name)
		if r == "" {
			return "", nil
		}
		if first == "" || p.Name < first {
			reason, first = r, p.Name
		}
	}
	return reason, nil
}

// profileNotServing says why a profile that asks for a scheduler name does not serve it; ""
// when it does.
func profileNotServing(p *schedulingv1alpha1.SchedulerProfile, name string) string {
	available := meta.FindStatusCondition(p.Status.Conditions, schedulingv1alpha1.ConditionAvailable)
	switch {
	case p.DeletionTimestamp != nil:
		return fmt.Sprintf("SchedulerProfile %s is being deleted", p.Name)
	case p.Status.SchedulerName != name:
		return fmt.Sprintf("SchedulerProfile %s does not hold scheduler name %s", p.Name, name)
	case available == nil:
		return fmt.Sprintf("SchedulerProfile %s is not Available yet", p.Name)
	case available.Status != metav1.ConditionTrue:
		return fmt.Sprintf("SchedulerProfile %s is not Available (%s)", p.Name, available.Reason)
	}
	return ""
}
