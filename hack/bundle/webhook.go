package main

import (
	"errors"
	"fmt"
	"slices"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// disableCertRotation is the operator's flag for a certificate that is provided: OLM creates the
// webhook's certificate, Service and configuration from the CSV's webhookdefinitions and mounts
// the certificate where the operator reads it by default.
const disableCertRotation = "--disable-cert-rotation"

// certDir is where the operator reads the webhook's certificate by default, and where OLM mounts
// the certificate it provides.
const certDir = "/tmp/k8s-webhook-server/serving-certs"

// webhookInput is what config/webhook adds for `make deploy`: the configuration, the Service the
// apiserver calls and the Secret the operator writes its certificate into. Under OLM, the first
// two become webhookdefinitions, and OLM provides the certificate.
//
// A mutating configuration (none today: namespace assignment is an admission policy the operator
// creates itself) would be left out of the bundle: a
// WebhookDescription (operator-framework/api v0.45.0) carries neither a namespaceSelector (OLM
// sets its own, from the OperatorGroup: every namespace for an AllNamespaces install) nor
// matchConditions, so under OLM every pod creation of the cluster would call the operator, and
// wait up to the timeout whenever the operator is down. Under OLM, pods are not assigned.
type webhookInput struct {
	configs  []*admissionregistrationv1.ValidatingWebhookConfiguration
	leftOut  []*admissionregistrationv1.MutatingWebhookConfiguration
	services []*corev1.Service
	secrets  []*corev1.Secret
}

// webhookDefinitions turns the input's webhook configurations into the CSV's webhookdefinitions,
// each served by the operator's Deployment through the port its Service targets.
//
// A WebhookDescription (operator-framework/api v0.45.0) has no matchConditions, and OLM builds
// the configuration from it alone, so under OLM every update reaches the webhook, including
// those that leave the spec as it is (labels, finalizers, the garbage collector's
// foregroundDeletion finalizer). The operator's validators admit those updates themselves, so
// while the operator serves they work as with the matchConditions; only while it is down they
// fail (failurePolicy Fail). The matchConditions are dropped knowingly, not refused: refusing
// would leave OLM without a webhook at all.
func webhookDefinitions(in *input) ([]operatorsv1alpha1.WebhookDescription, error) {
	var defs []operatorsv1alpha1.WebhookDescription
	for _, c := range in.webhook.configs {
		for _, w := range c.Webhooks {
			svc := w.ClientConfig.Service
			if svc == nil || svc.Path == nil {
				return nil, fmt.Errorf("ValidatingWebhookConfiguration %q: webhook %q is not called through a Service path", c.Name, w.Name)
			}
			i := slices.IndexFunc(in.webhook.services, func(s *corev1.Service) bool { return s.Name == svc.Name })
			if i < 0 {
				return nil, fmt.Errorf("ValidatingWebhookConfiguration %q: webhook %q calls Service %q, which is not in the input", c.Name, w.Name, svc.Name)
			}
			target, err := webhookPort(in, in.webhook.services[i])
			if err != nil {
				return nil, err
			}
			defs = append(defs, operatorsv1alpha1.WebhookDescription{
				GenerateName:            w.Name,
				Type:                    operatorsv1alpha1.ValidatingAdmissionWebhook,
				DeploymentName:          in.deployment.Name,
				ContainerPort:           443,
				TargetPort:              &target,
				Rules:                   w.Rules,
				FailurePolicy:           w.FailurePolicy,
				MatchPolicy:             w.MatchPolicy,
				ObjectSelector:          w.ObjectSelector,
				SideEffects:             w.SideEffects,
				TimeoutSeconds:          w.TimeoutSeconds,
				AdmissionReviewVersions: w.AdmissionReviewVersions,
				WebhookPath:             svc.Path,
			})
		}
	}
	if len(in.webhook.configs) == 0 && len(in.webhook.secrets) > 0 {
		return nil, fmt.Errorf("webhook Secret %q: no place in the bundle: only a webhook's certificate, which OLM provides", in.webhook.secrets[0].Name)
	}
	return defs, nil
}

// webhookPort is the container port the Service targets, as a number: OLM creates a Service of
// its own for the Deployment.
func webhookPort(in *input, svc *corev1.Service) (intstr.IntOrString, error) {
	if len(svc.Spec.Ports) != 1 {
		return intstr.IntOrString{}, fmt.Errorf("webhook Service %q: want one port, got %d", svc.Name, len(svc.Spec.Ports))
	}
	target := svc.Spec.Ports[0].TargetPort
	if target.Type == intstr.Int {
		return target, nil
	}
	for _, c := range in.deployment.Spec.Template.Spec.Containers {
		for _, p := range c.Ports {
			if p.Name == target.StrVal {
				return intstr.FromInt32(p.ContainerPort), nil
			}
		}
	}
	return intstr.IntOrString{}, fmt.Errorf("webhook Service %q targets port %q, which the Deployment's containers do not name", svc.Name, target.StrVal)
}

// withProvidedCertificate is the operator's Deployment as OLM runs it: without the volume at the
// certificate directory (the operator copies its rotated certificate there; OLM mounts its own
// certificate at the same path) and with rotation off.
func withProvidedCertificate(in *input) error {
	if len(in.webhook.configs) == 0 {
		return nil
	}
	if len(in.webhook.secrets) != 1 {
		return fmt.Errorf("want the webhook's certificate Secret in the input, got %d Secrets", len(in.webhook.secrets))
	}
	pod := &in.deployment.Spec.Template.Spec
	if len(pod.Containers) == 0 {
		return errors.New("the Deployment has no container")
	}
	var dropped []string
	for _, c := range pod.Containers {
		for _, m := range c.VolumeMounts {
			if m.MountPath == certDir {
				dropped = append(dropped, m.Name)
			}
		}
	}
	if len(dropped) == 0 {
		return fmt.Errorf("the Deployment mounts no volume at the webhook's certificate directory %s", certDir)
	}
	pod.Volumes = slices.DeleteFunc(pod.Volumes, func(v corev1.Volume) bool { return slices.Contains(dropped, v.Name) })
	for i := range pod.Containers {
		c := &pod.Containers[i]
		c.VolumeMounts = slices.DeleteFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return slices.Contains(dropped, m.Name) })
	}
	if len(pod.Volumes) == 0 {
		pod.Volumes = nil
	}
	manager := &pod.Containers[0]
	if len(manager.VolumeMounts) == 0 {
		manager.VolumeMounts = nil
	}
	manager.Args = append(manager.Args, disableCertRotation)
	return nil
}
