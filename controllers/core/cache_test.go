package core

import (
	"reflect"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
)

// TestCacheKeepsManagedFieldsOnlyOfAppliedObjects: the cache drops the managed fields of the
// objects the operator only reads (profiles, Schedulers, pods, ReplicaSets), which every pass
// of a member copies, and keeps those of the objects it applies, from which apply extracts
// what the operator owns: without them, every pass would apply every object again.
func TestCacheKeepsManagedFieldsOnlyOfAppliedObjects(t *testing.T) {
	byObject := CacheOptions("ns").ByObject
	for _, tc := range []struct {
		obj  client.Object
		kept bool
	}{
		{obj: &schedulingv1alpha1.SchedulerProfile{}},
		{obj: &schedulingv1alpha1.Scheduler{}},
		{obj: &corev1.Pod{}},
		{obj: &appsv1.ReplicaSet{}},
		{obj: &corev1.ConfigMap{}, kept: true},
		{obj: &appsv1.Deployment{}, kept: true},
		{obj: &corev1.Service{}, kept: true},
	} {
		t.Run(reflect.TypeOf(tc.obj).Elem().Name(), func(t *testing.T) {
			obj := tc.obj.DeepCopyObject().(client.Object)
			obj.SetManagedFields([]metav1.ManagedFieldsEntry{{Manager: schedulingv1alpha1.FieldManager}})
			for key, opts := range byObject {
				if reflect.TypeOf(key) != reflect.TypeOf(tc.obj) || opts.Transform == nil {
					continue
				}
				out, err := opts.Transform(obj)
				if err != nil {
					t.Fatalf("Transform: %v", err)
				}
				obj = out.(client.Object)
			}
			if kept := len(obj.GetManagedFields()) > 0; kept != tc.kept {
				t.Errorf("Cached with its managed fields: %v, want %v", kept, tc.kept)
			}
		})
	}
}
