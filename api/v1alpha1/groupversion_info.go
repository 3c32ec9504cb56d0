// Package v1alpha1 contains the SchedulerProfile API of the scheduling.schedops.io group.
//
// It imports nothing heavier than k8s.io/api and k8s.io/apimachinery, so that clients can use
// the types without pulling in the operator or the scheduler.
//
// +kubebuilder:object:generate=true
// +groupName=scheduling.schedops.io
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of the SchedulerProfile and Scheduler API.
	GroupVersion = schema.GroupVersion{Group: "scheduling.schedops.io", Version: "v1alpha1"}

	// SchemeBuilder registers the types of this group version into a scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the types of this group version to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(GroupVersion, &SchedulerProfile{}, &SchedulerProfileList{}, &Scheduler{}, &SchedulerList{})
	metav1.AddToGroupVersion(scheme, GroupVersion)
	return nil
}
