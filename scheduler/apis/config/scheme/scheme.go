// Package scheme registers the args types of this repository's plugins, NodePoolArgs and
// NodeLabelPreferenceArgs, internal and v1 with their defaults and conversions. Added to
// kube-scheduler's configuration schemes (scheduler/registry does it for the plugins in use), a
// KubeSchedulerConfiguration decodes them strictly, defaults and converts them exactly like
// in-tree args.
package scheme

import (
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/schedops/scheduler-profile-operator/scheduler/apis/config"
	configv1 "github.com/schedops/scheduler-profile-operator/scheduler/apis/config/v1"
)

// AddToScheme registers the args types of this repository's plugins, internal and v1, into s.
func AddToScheme(s *runtime.Scheme) error {
	if err := config.AddToScheme(s); err != nil {
		return err
	}
	return configv1.AddToScheme(s)
}
