package core

import (
	"github.com/schedops/scheduler-profile-operator/controllers/plan"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
)

// buildService exposes the scheduler pods' secure port, where kube-scheduler serves /metrics to
// callers allowed the nonResourceURL, so that one ServiceMonitor selecting the operator's
// managed-by label scrapes every managed scheduler. It is headless: a scraper reaches each pod
// (every replica has its own metrics, the leader's are the ones that schedule), and a virtual
// IP would only balance between them.
func buildService(proc *plan.Process, s plan.Settings) *corev1ac.ServiceApplyConfiguration {
	return corev1ac.Service(proc.Names.Service(), s.Namespace).
		WithLabels(proc.Labels()).
		WithSpec(corev1ac.ServiceSpec().
			WithType(corev1.ServiceTypeClusterIP).
			WithClusterIP(corev1.ClusterIPNone).
			WithSelector(proc.SelectorLabels()).
			WithPorts(corev1ac.ServicePort().
				WithName(securePortName).
				WithPort(securePort).
				WithTargetPort(intstr.FromString(securePortName)).
				WithProtocol(corev1.ProtocolTCP)))
}
