package controllers

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/controllers/plan"
	"github.com/schedops/scheduler-profile-operator/scheduler/profile"
)

// indexValue is the one value of the indexes that only tell whether an object is in them.
const indexValue = "true"

// ownerKey is the value of plan.IndexOwner for the objects of an owner: its label key and name.
func ownerKey(ownerLabel, name string) string { return ownerLabel + "=" + name }

// ownedBy lists the objects of a process by plan.IndexOwner.
func ownedBy(proc *plan.Process) client.MatchingFields {
	return client.MatchingFields{plan.IndexOwner: ownerKey(proc.OwnerLabel, proc.Owner.GetName())}
}

// fieldIndex is a field index of one kind of object in the manager's cache.
type fieldIndex struct {
	obj     client.Object
	field   string
	extract client.IndexerFunc
}

// IndexFields adds to a manager's cache the field indexes that the reconcilers and the webhook
// read through, before the manager starts: SetupManager does, and so does a test that runs a
// reconciler by hand on the cache of a manager with no controller (its parsed configurations
// are not remembered; SetupManager indexes with the operator's memos).
func IndexFields(mgr ctrl.Manager, o ManagerOptions) error {
	return indexObjects(context.Background(), mgr.GetFieldIndexer(), o.SchedulerImage, nil)
}

// indexObjects adds fieldIndexes to the manager's cache.
func indexObjects(ctx context.Context, indexer client.FieldIndexer, image string, ms *plan.Memos) error {
	for _, i := range fieldIndexes(image, ms) {
		if err := indexer.IndexField(ctx, i.obj, i.field, i.extract); err != nil {
			return fmt.Errorf("indexing %T by %s: %w", i.obj, i.field, err)
		}
	}
	return nil
}

// fieldIndexes are the field indexes of the profiles and of the objects of the operator's
// namespace. image is the operator's scheduler image, which plan.IndexHeld compares with.
func fieldIndexes(image string, ms *plan.Memos) []fieldIndex {
	byOwner := func(obj client.Object) []string {
		var keys []string
		for _, l := range []string{schedulingv1alpha1.LabelProfile, schedulingv1alpha1.LabelScheduler} {
			if name := obj.GetLabels()[l]; name != "" {
				keys = append(keys, ownerKey(l, name))
			}
		}
		return keys
	}
	bySpec := func(spec *corev1.PodSpec) []string {
		if cm := plan.ConfigMapOf(spec); cm != "" {
			return []string{cm}
		}
		return nil
	}
	return []fieldIndex{
		{&schedulingv1alpha1.SchedulerProfile{}, plan.IndexSchedulerName, func(obj client.Object) []string {
			return []string{profile.SchedulerName(obj.(*schedulingv1alpha1.SchedulerProfile))}
		}},
		{&schedulingv1alpha1.SchedulerProfile{}, plan.IndexSchedulerRef, func(obj client.Object) []string {
			if ref := obj.(*schedulingv1alpha1.SchedulerProfile).Spec.SchedulerRef.Name; ref != "" {
				return []string{ref}
			}
			return nil
		}},
		{&schedulingv1alpha1.SchedulerProfile{}, plan.IndexWaitingForName, func(obj client.Object) []string {
			c := meta.FindStatusCondition(obj.(*schedulingv1alpha1.SchedulerProfile).Status.Conditions, schedulingv1alpha1.ConditionConfigValid)
			if c != nil && c.Reason == schedulingv1alpha1.ReasonSchedulerNameConflict {
				return []string{indexValue}
			}
			return nil
		}},
		{&corev1.ConfigMap{}, plan.IndexOwner, byOwner},
		{&appsv1.ReplicaSet{}, plan.IndexOwner, byOwner},
		{&corev1.Pod{}, plan.IndexOwner, byOwner},
		{&appsv1.Deployment{}, plan.IndexMounts, func(obj client.Object) []string {
			return bySpec(&obj.(*appsv1.Deployment).Spec.Template.Spec)
		}},
		{&corev1.Pod{}, plan.IndexMounts, func(obj client.Object) []string { return bySpec(&obj.(*corev1.Pod).Spec) }},
		{&corev1.Pod{}, plan.IndexLease, func(obj client.Object) []string {
			if lease := obj.GetAnnotations()[schedulingv1alpha1.AnnotationLease]; lease != "" {
				return []string{lease}
			}
			return nil
		}},
		{&corev1.ConfigMap{}, plan.IndexSchedulerNames, func(obj client.Object) []string { return plan.ConfigSchedulerNames(ms, obj) }},
		{&appsv1.Deployment{}, plan.IndexHeld, func(obj client.Object) []string {
			if d := obj.(*appsv1.Deployment); isScheduler(d) && !upgradedTo(image, d) {
				return []string{indexValue}
			}
			return nil
		}},
	}
}

// isScheduler tells whether a Deployment is a scheduler the operator manages.
func isScheduler(d *appsv1.Deployment) bool {
	return d.Labels[plan.LabelName] == "kube-scheduler" && d.Labels[plan.LabelManagedBy] == schedulingv1alpha1.FieldManager
}
