package plan

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/scheduler/profile"
)

// Field indexes of the objects in the manager's cache, so that a pass or an event reads the few
// objects it concerns instead of every object of a kind: with a thousand profiles, a pass that
// reads every Deployment costs a thousand times what it should.
const (
	// IndexSchedulerName indexes profiles by the scheduler name they ask for.
	IndexSchedulerName = "schedops.io/schedulerName"
	// IndexSchedulerRef indexes profiles by the Scheduler their schedulerRef names.
	IndexSchedulerRef = "schedops.io/schedulerRef"
	// IndexOwner indexes the ConfigMaps, ReplicaSets and pods of the operator's namespace by the
	// owner their labels name: ownerKey.
	IndexOwner = "schedops.io/owner"
	// IndexMounts indexes the scheduler Deployments and pods by the configuration ConfigMap they
	// mount.
	IndexMounts = "schedops.io/mounts"
	// IndexSchedulerNames indexes the configuration ConfigMaps by the scheduler names of the
	// profiles they hold.
	IndexSchedulerNames = "schedops.io/schedulerNames"
	// IndexHeld indexes the scheduler Deployments that are not on the operator's image and
	// lease (upgraded): the upgrade wave's, which wait for their turn.
	IndexHeld = "schedops.io/held"
	// IndexWaitingForName indexes the profiles that wait for a scheduler name
	// (ConfigValid=False, SchedulerNameConflict).
	IndexWaitingForName = "schedops.io/waitingForName"
	// IndexLease indexes the scheduler pods by the lease their template runs on (schedulingv1alpha1.AnnotationLease).
	IndexLease = "schedops.io/lease"
)

// IndexValue is the one value of the indexes that only tell whether an object is in them.
const IndexValue = "true"

// OwnerKey is the value of IndexOwner for the objects of an owner: its label key and name.
func OwnerKey(ownerLabel, name string) string { return ownerLabel + "=" + name }

// FieldIndex is a field index of one kind of object in the manager's cache.
type FieldIndex struct {
	Obj     client.Object
	Field   string
	Extract client.IndexerFunc
}

// FieldIndexes are the field indexes of the profiles and of the objects of the operator's
// namespace: held tells which scheduler Deployments IndexHeld holds (the upgrade wave's), ms
// parses each configuration once.
func FieldIndexes(held func(*appsv1.Deployment) bool, ms *Memos) []FieldIndex {
	byOwner := func(obj client.Object) []string {
		var keys []string
		for _, l := range []string{schedulingv1alpha1.LabelProfile, schedulingv1alpha1.LabelScheduler} {
			if name := obj.GetLabels()[l]; name != "" {
				keys = append(keys, OwnerKey(l, name))
			}
		}
		return keys
	}
	bySpec := func(spec *corev1.PodSpec) []string {
		if cm := ConfigMapOf(spec); cm != "" {
			return []string{cm}
		}
		return nil
	}
	return []FieldIndex{
		{&schedulingv1alpha1.SchedulerProfile{}, IndexSchedulerName, func(obj client.Object) []string {
			return []string{profile.SchedulerName(obj.(*schedulingv1alpha1.SchedulerProfile))}
		}},
		{&schedulingv1alpha1.SchedulerProfile{}, IndexSchedulerRef, func(obj client.Object) []string {
			if ref := obj.(*schedulingv1alpha1.SchedulerProfile).Spec.SchedulerRef.Name; ref != "" {
				return []string{ref}
			}
			return nil
		}},
		{&schedulingv1alpha1.SchedulerProfile{}, IndexWaitingForName, func(obj client.Object) []string {
			c := meta.FindStatusCondition(obj.(*schedulingv1alpha1.SchedulerProfile).Status.Conditions, schedulingv1alpha1.ConditionConfigValid)
			if c != nil && c.Reason == schedulingv1alpha1.ReasonSchedulerNameConflict {
				return []string{IndexValue}
			}
			return nil
		}},
		{&corev1.ConfigMap{}, IndexOwner, byOwner},
		{&appsv1.ReplicaSet{}, IndexOwner, byOwner},
		{&corev1.Pod{}, IndexOwner, byOwner},
		{&appsv1.Deployment{}, IndexMounts, func(obj client.Object) []string {
			return bySpec(&obj.(*appsv1.Deployment).Spec.Template.Spec)
		}},
		{&corev1.Pod{}, IndexMounts, func(obj client.Object) []string { return bySpec(&obj.(*corev1.Pod).Spec) }},
		{&corev1.Pod{}, IndexLease, func(obj client.Object) []string {
			if lease := obj.GetAnnotations()[schedulingv1alpha1.AnnotationLease]; lease != "" {
				return []string{lease}
			}
			return nil
		}},
		{&corev1.ConfigMap{}, IndexSchedulerNames, func(obj client.Object) []string { return ConfigSchedulerNames(ms, obj) }},
		{&appsv1.Deployment{}, IndexHeld, func(obj client.Object) []string {
			if held(obj.(*appsv1.Deployment)) {
				return []string{IndexValue}
			}
			return nil
		}},
	}
}
