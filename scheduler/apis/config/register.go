package config

import (
	"k8s.io/apimachinery/pkg/runtime"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
)

// SchemeGroupVersion is the internal version of the kube-scheduler configuration group,
// which our args types join so that KubeSchedulerConfiguration converts them like in-tree args.
var SchemeGroupVersion = schedconfig.SchemeGroupVersion

var (
	// SchemeBuilder registers the internal args types of this package; scheduler/registry adds
	// them to kube-scheduler's schemes for the binaries that run these plugins.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)
	// AddToScheme registers the internal args types of this package.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion,
		&NodePoolArgs{},
		&NodeLabelPreferenceArgs{},
	)
	return nil
}
