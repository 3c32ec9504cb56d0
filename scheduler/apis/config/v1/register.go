package v1

import (
	"k8s.io/apimachinery/pkg/runtime"
	schedconfigv1 "k8s.io/kube-scheduler/config/v1"
)

// SchemeGroupVersion is kubescheduler.config.k8s.io/v1: args kinds must live in the group and
// version of KubeSchedulerConfiguration to be decoded strictly and defaulted.
var SchemeGroupVersion = schedconfigv1.SchemeGroupVersion

var (
	// localSchemeBuilder is kube-scheduler's own v1 builder (the generated conversions register
	// into it too): the scheduler builds its plugin args scheme from it, so that defaults and
	// conversions of our args run exactly like those of in-tree args.
	localSchemeBuilder = &schedconfigv1.SchemeBuilder
	// AddToScheme registers the v1 kube-scheduler configuration types, ours included.
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
