// Package scheme registers the args types of the out-of-tree plugins into kube-scheduler's
// configuration scheme. Importing it (the registry does) is what makes a
// KubeSchedulerConfiguration decode NodePoolArgs and NodeLabelPreferenceArgs strictly, apply
// their defaults and convert them, exactly like in-tree args.
package scheme

import (
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	kubeschedulerscheme "k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"

	"github.com/schedops/scheduler-profile-operator/scheduler/apis/config"
	configv1 "github.com/schedops/scheduler-profile-operator/scheduler/apis/config/v1"
)

var (
	// Scheme is kube-scheduler's own configuration scheme, the one its config loader decodes
	// with, with our args types added.
	Scheme = kubeschedulerscheme.Scheme

	// Codecs are kube-scheduler's strict codecs over Scheme.
	Codecs = kubeschedulerscheme.Codecs
)

func init() {
	// kube-scheduler filled Scheme in its own init, before our types joined its scheme
	// builders, so add them now.
	AddToScheme(Scheme)
}

// AddToScheme registers the kube-scheduler configuration types, in-tree and ours, internal and
// v1, into s.
func AddToScheme(s *runtime.Scheme) {
	utilruntime.Must(config.AddToScheme(s))
	utilruntime.Must(configv1.AddToScheme(s))
}
