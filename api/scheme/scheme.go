// Package scheme builds the runtime scheme of the operator's clients: Kubernetes' own types (the
// registrations of k8s.io/client-go/kubernetes/scheme, which import only k8s.io/api and
// apimachinery) and scheduling.schedops.io/v1alpha1. The operator, its commands, the test
// environment and the benchmarks use it, so none of them imports the controllers for it.
package scheme

import (
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
)

// New returns a scheme with Kubernetes' types and the operator's API.
func New() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(schedulingv1alpha1.AddToScheme(s))
	return s
}
