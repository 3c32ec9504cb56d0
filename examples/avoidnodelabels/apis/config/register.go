package config

import (
	"k8s.io/apimachinery/pkg/runtime"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
)

// SchemeGroupVersion is kube-scheduler's internal configuration version, where internal args
// types live.
var SchemeGroupVersion = schedconfig.SchemeGroupVersion

var (
	// SchemeBuilder registers the internal args type.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme registers the internal args type.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion, &AvoidNodeLabelsArgs{})
	return nil
}
