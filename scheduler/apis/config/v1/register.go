package v1

import (
	"k8s.io/apimachinery/pkg/runtime"
	schedconfigv1 "k8s.io/kube-scheduler/config/v1"
)

// SchemeGroupVersion is kubescheduler.config.k8s.io/v1: args kinds must live in the group and
// version of KubeSchedulerConfiguration to be decoded strictly and defaulted.
var SchemeGroupVersion = schedconfigv1.SchemeGroupVersion

var (
	// SchemeBuilder registers the v1 args types of this package with their defaults and
	// conversions (the generated conversions register into it too); scheduler/registry adds
	// them to kube-scheduler's schemes for the binaries that run these plugins.
	SchemeBuilder runtime.SchemeBuilder
	// localSchemeBuilder is the name the generated code registers with.
	localSchemeBuilder = &SchemeBuilder
	// AddToScheme registers the v1 args types of this package.
	AddToScheme = localSchemeBuilder.AddToScheme
)

func init() {
	localSchemeBuilder.Register(addKnownTypes, RegisterDefaults)
}

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion,
		&NodePoolArgs{},
		&NodeLabelPreferenceArgs{},
	)
	return nil
}
