package core

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/schedops/scheduler-profile-operator/controllers/plan"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
)

func TestBuildService(t *testing.T) {
	https := []corev1.ServicePort{{Name: "https", Port: 10259, TargetPort: intstr.FromString("https"), Protocol: corev1.ProtocolTCP}}
	tests := []struct {
		name       string
		proc       *plan.Process
		wantName   string
		wantLabels map[string]string
		wantPorts  []corev1.ServicePort
	}{
		{
			name:     "a profile's own scheduler",
			proc:     dedicated(testutil.MakeProfile("binpack").Obj()),
			wantName: "metrics-binpack-scheduler",
			wantLabels: map[string]string{
				"app.kubernetes.io/name": "kube-scheduler", "app.kubernetes.io/instance": "binpack",
				"app.kubernetes.io/managed-by": "scheduler-profile-operator", "app.kubernetes.io/component": "scheduler",
				"scheduling.schedops.io/profile": "binpack",
			},
			wantPorts: https,
		},
		{
			name:     "a shared Scheduler, named without the dot its Deployment has",
			proc:     plan.SharedProcess(testutil.MakeScheduler("batch").Replicas(2).Obj()),
			wantName: "metrics-batch--scheduler",
			wantLabels: map[string]string{
				"app.kubernetes.io/name": "kube-scheduler", "app.kubernetes.io/instance": "batch",
				"app.kubernetes.io/managed-by": "scheduler-profile-operator", "app.kubernetes.io/component": "scheduler",
				"scheduling.schedops.io/scheduler": "batch",
			},
			wantPorts: https,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			svc := typed[corev1.Service](t, buildService(tc.proc, testSettings))
			if svc.Name != tc.wantName || svc.Namespace != testSettings.Namespace {
				t.Errorf("Service %s/%s, want %s/%s", svc.Namespace, svc.Name, testSettings.Namespace, tc.wantName)
			}
			if errs := validation.IsDNS1123Label(svc.Name); len(errs) > 0 {
				t.Errorf("Service name %q is not a DNS-1123 label: %v", svc.Name, errs)
			}
			if diff := cmp.Diff(tc.wantLabels, svc.Labels); diff != "" {
				t.Errorf("labels (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantPorts, svc.Spec.Ports); diff != "" {
				t.Errorf("ports (-want +got):\n%s", diff)
			}
			if svc.Spec.ClusterIP != corev1.ClusterIPNone {
				t.Errorf("clusterIP %q, want a headless Service", svc.Spec.ClusterIP)
			}
			// The Service selects exactly the scheduler pods, and its target port is a port
			// their container declares.
			d := typed[appsv1.Deployment](t, buildDeployment(tc.proc, testSettings, testConfig(t, testutil.MakeProfile("p").Obj())))
			if diff := cmp.Diff(d.Spec.Selector.MatchLabels, svc.Spec.Selector); diff != "" {
				t.Errorf("selector (-Deployment's +Service's):\n%s", diff)
			}
			for k, v := range svc.Spec.Selector {
				if d.Spec.Template.Labels[k] != v {
					t.Errorf("the selector %s=%s does not select the scheduler pods %v", k, v, d.Spec.Template.Labels)
				}
			}
			var declared []string
			for _, p := range d.Spec.Template.Spec.Containers[0].Ports {
				if p.Name == svc.Spec.Ports[0].TargetPort.StrVal && p.ContainerPort == svc.Spec.Ports[0].Port {
					declared = append(declared, p.Name)
				}
			}
			if len(declared) != 1 {
				t.Errorf("target port %v is not the container's port %+v", svc.Spec.Ports[0].TargetPort, d.Spec.Template.Spec.Containers[0].Ports)
			}
		})
	}
}
