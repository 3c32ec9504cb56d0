package config

import (
	"k8s.io/apimachinery/pkg/runtime"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
)

// SchemeGroupVersion is the internal version of the kube-scheduler configuration group,
// which our args types join so that KubeSchedulerConfiguration converts them like in-tree args.
var SchemeGroupVersion = schedconfig.SchemeGroupVersion

var (
	// localSchemeBuilder is kube-scheduler's own builder: the scheduler builds a private scheme
	// for plugin args (GetPluginArgConversionScheme) from it, so our types must be in it too.
	localSchemeBuilder = &schedconfig.SchemeBuilder
	// AddToScheme registers the internal kube-scheduler configuration types, ours included.
	AddToScheme = localSchemeBuilder.AddToScheme
)

func init() {
	localSchemeBuilder.Register(addKnownTypes)
}

func addKnownTypes(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion,
		&NodePoolArgs{},
		&NodeLabelPreferenceArgs{},
	)
	return nil
}
