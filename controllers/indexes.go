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

// Field indexes of the objects in the manager's cache, so that a pass or an event reads the few
// objects it concerns instead of every object of a kind: with a thousand profiles, a pass that
// reads every Deployment costs a thousand times what it should.
const (
	// indexSchedulerName indexes profiles by the scheduler name they ask for.
	indexSchedulerName = "schedops.io/schedulerName"
	// indexSchedulerRef indexes profiles by the Scheduler their schedulerRef names.
	indexSchedulerRef = "schedops.io/schedulerRef"
	// indexOwner indexes the ConfigMaps, ReplicaSets and pods of the operator's namespace by the
	// owner their labels name: ownerKey.
	indexOwner = "schedops.io/owner"
	// indexMounts indexes the scheduler Deployments and pods by the configuration ConfigMap they
	// mount.
	indexMounts = "schedops.io/mounts"
	// indexSchedulerNames indexes the configuration ConfigMaps by the scheduler names of the
	// profiles they hold.
	indexSchedulerNames = "schedops.io/schedulerNames"
	// indexHeld indexes the scheduler Deployments that are not on the operator's image and
	// lease (upgraded): the upgrade wave's, which wait for their turn.
	indexHeld = "schedops.io/held"
	// indexWaitingForName indexes the profiles that wait for a scheduler name
	// (ConfigValid=False, SchedulerNameConflict).
	indexWaitingForName = "schedops.io/waitingForName"
	// indexLease indexes the scheduler pods by the lease their template runs on (schedulingv1alpha1.AnnotationLease).
	indexLease = "schedops.io/lease"
)

// indexValue is the one value of the indexes that only tell whether an object is in them.
const indexValue = "true"

// ownerKey is the value of indexOwner for the objects of an owner: its label key and name.
func ownerKey(ownerLabel, name string) string { return ownerLabel + "=" + name }

// ownedBy lists the objects of a process by indexOwner.
func ownedBy(proc *plan.Process) client.MatchingFields {
	return client.MatchingFields{indexOwner: ownerKey(proc.OwnerLabel, proc.Owner.GetName())}
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
func indexObjects(ctx context.Context, indexer client.FieldIndexer, image string, ms *Memos) error {
	for _, i := range fieldIndexes(image, ms) {
		if err := indexer.IndexField(ctx, i.obj, i.field, i.extract); err != nil {
			return fmt.Errorf("indexing %T by %s: %w", i.obj, i.field, err)
		}
	}
	return nil
}

// fieldIndexes are the field indexes of the profiles and of the objects of the operator's
// namespace. image is the operator's scheduler image, which indexHeld compares with.
func fieldIndexes(image string, ms *Memos) []fieldIndex {
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
		{&schedulingv1alpha1.SchedulerProfile{}, indexSchedulerName, func(obj client.Object) []string {
			return []string{profile.SchedulerName(obj.(*schedulingv1alpha1.SchedulerProfile))}
		}},
		{&schedulingv1alpha1.SchedulerProfile{}, indexSchedulerRef, func(obj client.Object) []string {
			if ref := obj.(*schedulingv1alpha1.SchedulerProfile).Spec.SchedulerRef.Name; ref != "" {
				return []string{ref}
			}
			return nil
		}},
		{&schedulingv1alpha1.SchedulerProfile{}, indexWaitingForName, func(obj client.Object) []string {
			c := meta.FindStatusCondition(obj.(*schedulingv1alpha1.SchedulerProfile).Status.Conditions, schedulingv1alpha1.ConditionConfigValid)
			if c != nil && c.Reason == schedulingv1alpha1.ReasonSchedulerNameConflict {
				return []string{indexValue}
			}
			return nil
		}},
		{&corev1.ConfigMap{}, indexOwner, byOwner},
		{&appsv1.ReplicaSet{}, indexOwner, byOwner},
		{&corev1.Pod{}, indexOwner, byOwner},
		{&appsv1.Deployment{}, indexMounts, func(obj client.Object) []string {
			return bySpec(&obj.(*appsv1.Deployment).Spec.Template.Spec)
		}},
		{&corev1.Pod{}, indexMounts, func(obj client.Object) []string { return bySpec(&obj.(*corev1.Pod).Spec) }},
		{&corev1.Pod{}, indexLease, func(obj client.Object) []string {
			if lease := obj.GetAnnotations()[schedulingv1alpha1.AnnotationLease]; lease != "" {
				return []string{lease}
			}
			return nil
		}},
		{&corev1.ConfigMap{}, indexSchedulerNames, func(obj client.Object) []string { return configSchedulerNames(ms, obj) }},
		{&appsv1.Deployment{}, indexHeld, func(obj client.Object) []string {
			if d := obj.(*appsv1.Deployment); isScheduler(d) && !upgradedTo(image, d) {
				return []string{indexValue}
			}
			return nil
		}},
	}
}

// configSchedulerNames are the scheduler names of the configuration a ConfigMap holds (the cache
// holds only the operator's); none for a ConfigMap without one or one that does not parse.
func configSchedulerNames(ms *Memos, obj client.Object) []string {
	cm := obj.(*corev1.ConfigMap)
	if _, ok := cm.Data[plan.ConfigFileKey]; !ok {
		return nil
	}
	profiles, err := ms.profilesIn(cm)
	if err != nil {
		return nil
	}
	names := make([]string, 0, len(profiles))
	for n := range profiles {
		names = append(names, n)
	}
	return names
}

// isScheduler tells whether a Deployment is a scheduler the operator manages.
func isScheduler(d *appsv1.Deployment) bool {
	return d.Labels[plan.LabelName] == "kube-scheduler" && d.Labels[plan.LabelManagedBy] == schedulingv1alpha1.FieldManager
}
