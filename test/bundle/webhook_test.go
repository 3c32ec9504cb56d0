package bundle

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	certutil "k8s.io/client-go/util/cert"
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
	certPEM, keyPEM, err := certutil.GenerateSelfSignedCertKey("localhost", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for name, data := range map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	port := freePort(t)
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

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "localhost:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().(*net.TCPAddr).Port
}
