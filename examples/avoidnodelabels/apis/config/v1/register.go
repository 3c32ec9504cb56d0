package v1

import (
	"k8s.io/apimachinery/pkg/runtime"
	schedconfigv1 "k8s.io/kube-scheduler/config/v1"
)

// SchemeGroupVersion is kubescheduler.config.k8s.io/v1: args kinds must be in the group and
// version of KubeSchedulerConfiguration to be decoded strictly and defaulted.
var SchemeGroupVersion = schedconfigv1.SchemeGroupVersion

var (
	// localSchemeBuilder registers the type with its defaults and conversions (the generated
	// conversions register into it).
	localSchemeBuilder = &runtime.SchemeBuilder{}
	// AddToScheme registers the versioned args type with its defaults and conversions.
	AddToScheme = localSchemeBuilder.AddToScheme
)

func init() {
	localSchemeBuilder.Register(addKnownTypes, RegisterDefaults)
}

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion, &AvoidNodeLabelsArgs{})
	return nil
}
