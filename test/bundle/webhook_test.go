package bundle

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/schedops/scheduler-profile-operator/controllers"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
)

// installOLMWebhooks does what OLM does with the CSV's webhookdefinitions: a certificate of its
// own CA, mounted at the operator's default certificate directory (here a directory of the test),
// and a ValidatingWebhookConfiguration per definition with that CA. OLM calls the operator
// through a Service; envtest has no Service network, so the configuration calls the operator's
// port on localhost by URL, at the definition's path. It returns the operator's webhook settings.
func installOLMWebhooks(t *testing.T, csv *operatorsv1alpha1.ClusterServiceVersion, namespace string, create func(client.Object)) *controllers.WebhookOptions {
	t.Helper()
	if len(csv.Spec.WebhookDefinitions) != 2 {
		t.Fatalf("The CSV has %d webhookdefinitions, want 2 (SchedulerProfile and Scheduler)", len(csv.Spec.WebhookDefinitions))
	}
	dir := t.TempDir()
	certPEM, err := testutil.LocalServingCert(dir)
	if err != nil {
		t.Fatal(err)
	}
	port := testutil.FreePort(t)
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: csv.Name + "-webhooks"}}
	for _, def := range csv.Spec.WebhookDefinitions {
		if def.Type != operatorsv1alpha1.ValidatingAdmissionWebhook || def.WebhookPath == nil {
			t.Fatalf("Webhook definition %s: type %s, path %v", def.GenerateName, def.Type, def.WebhookPath)
		}
		w := def.GetValidatingWebhook(namespace, nil, certPEM)
		w.ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: ptr.To(fmt.Sprintf("https://localhost:%d%s", port, *def.WebhookPath)), CABundle: certPEM}
		vwc.Webhooks = append(vwc.Webhooks, w)
	}
	create(vwc)
	return &controllers.WebhookOptions{Host: "localhost", Port: port, CertDir: dir}
}

// refusedByWebhook creates an invalid profile until the operator's webhook serves: it must be
// refused with the validator's field error, which only the webhook knows.
func refusedByWebhook(t *testing.T, c client.Client) {
	t.Helper()
	broken := testutil.MakeProfile("olm-broken").PluginConfig("NodeResourcesFit", `{"scoringStrategy":{"type":"Most"}}`).Obj()
	const want = `spec.pluginConfig[0].args.scoringStrategy.type: Unsupported value: "Most"`
	testutil.Eventually(t, waitTimeout, "the operator's webhook to refuse an invalid profile", func(ctx context.Context) error {
		err := c.Create(ctx, broken.DeepCopyObject().(client.Object), client.DryRunAll)
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), want) {
			return fmt.Errorf("dry-run create of an invalid profile: %v", err)
		}
		return nil
	})
}

// TestKustomizeWebhookWiring: in what `make deploy` installs, the operator's default flags name
// the webhook's objects: the validating configuration whose caBundle it sets, the Secret it
// writes and its Deployment mounts at the default certificate directory, the Service it issues
// the certificate for, which the configuration calls and which targets the webhook's port; and
// the RBAC lets the operator update exactly that Secret and that configuration.
func TestKustomizeWebhookWiring(t *testing.T) {
	objs := kustomizeBuild(t, "config/default", "registry.example/scheduler-profile-operator:v0.0.1")
	var (
		vwc        admissionregistrationv1.ValidatingWebhookConfiguration
		svc        corev1.Service
		secret     corev1.Secret
		deployment appsv1.Deployment
		role       rbacv1.ClusterRole
		nsRole     rbacv1.Role
	)
	fromUnstructured(t, findObject(t, objs, "ValidatingWebhookConfiguration"), &vwc)
	fromUnstructured(t, findNamed(t, objs, "Service", controllers.DefaultWebhookServiceName), &svc)
	fromUnstructured(t, findObject(t, objs, "Secret"), &secret)
	fromUnstructured(t, findObject(t, objs, "Deployment"), &deployment)
	fromUnstructured(t, findNamed(t, objs, "ClusterRole", "scheduler-profile-operator-manager-role"), &role)
	for _, obj := range objs {
		if obj.GetKind() == "Role" && obj.GetNamespace() == deployment.Namespace {
			fromUnstructured(t, obj, &nsRole)
		}
	}

	if vwc.Name != controllers.DefaultWebhookConfigName || svc.Name != controllers.DefaultWebhookServiceName || secret.Name != controllers.DefaultWebhookSecret {
		t.Errorf("Names: configuration %q, Service %q, Secret %q; the operator's defaults are %q, %q, %q", vwc.Name, svc.Name, secret.Name,
			controllers.DefaultWebhookConfigName, controllers.DefaultWebhookServiceName, controllers.DefaultWebhookSecret)
	}
	var clients []admissionregistrationv1.WebhookClientConfig
	for _, w := range vwc.Webhooks {
		clients = append(clients, w.ClientConfig)
	}
	for _, cc := range clients {
		if s := cc.Service; s == nil || s.Name != svc.Name || s.Namespace != deployment.Namespace {
			t.Errorf("A webhook calls %+v, want Service %s/%s", s, deployment.Namespace, svc.Name)
		}
	}
	pod := deployment.Spec.Template.Spec
	manager := pod.Containers[0]
	if !slices.ContainsFunc(manager.Ports, func(p corev1.ContainerPort) bool {
		return p.Name == svc.Spec.Ports[0].TargetPort.StrVal && p.ContainerPort == controllers.DefaultWebhookPort
	}) {
		t.Errorf("The Service targets port %q; the container's ports %+v have no such port %d", svc.Spec.Ports[0].TargetPort.StrVal, manager.Ports, controllers.DefaultWebhookPort)
	}
	// The operator copies the certificate from the Secret into the default certificate directory:
	// that must be a writable volume of the pod's own, not the Secret (which the kubelet syncs a
	// minute or more late) and not the read-only root filesystem.
	certDir := ""
	for _, m := range manager.VolumeMounts {
		i := slices.IndexFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == m.Name })
		if i < 0 {
			t.Errorf("The container mounts %q, which is no volume of the pod", m.Name)
			continue
		}
		if v := pod.Volumes[i]; v.Secret != nil && v.Secret.SecretName == secret.Name {
			t.Errorf("The Secret %s is mounted at %q; the operator copies it into an emptyDir", secret.Name, m.MountPath)
		} else if v.EmptyDir != nil && m.MountPath == "/tmp/k8s-webhook-server/serving-certs" && !m.ReadOnly {
			certDir = m.MountPath
		}
	}
	if certDir == "" {
		t.Errorf("No writable emptyDir is mounted at the default certificate directory: mounts %+v", manager.VolumeMounts)
	}
	grants := func(rules []rbacv1.PolicyRule, resource, name string) bool {
		return slices.ContainsFunc(rules, func(r rbacv1.PolicyRule) bool {
			return slices.Contains(r.Resources, resource) && slices.Contains(r.ResourceNames, name) && slices.Contains(r.Verbs, "update")
		})
	}
	if !grants(role.Rules, "validatingwebhookconfigurations", vwc.Name) {
		t.Errorf("The ClusterRole does not let the operator update %s", vwc.Name)
	}
	if !grants(nsRole.Rules, "secrets", secret.Name) {
		t.Errorf("The Role of %s does not let the operator update Secret %s", deployment.Namespace, secret.Name)
	}
}
