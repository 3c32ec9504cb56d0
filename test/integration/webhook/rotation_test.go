package webhook

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/schedops/scheduler-profile-operator/controllers"
	"github.com/schedops/scheduler-profile-operator/internal/operatorenv"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
	"github.com/schedops/scheduler-profile-operator/test/framework"
)

// TestCertRotation runs a second operator with certificate rotation on, as `make deploy` runs
// it, in a namespace of its own with an empty certificate Secret and a webhook configuration of
// its own without a caBundle (only for profiles labelled for this test). The operator creates the
// certificate in the Secret, injects its CA into the configuration and copies the certificate into
// its empty certificate directory (an emptyDir in config/default): nothing else writes there, as
// no kubelet mounts the Secret. The webhook is served within seconds; then the apiserver calls it
// with the injected CA: a labelled valid profile is admitted (with failurePolicy Fail, an
// untrusted certificate would refuse it) and an invalid one is refused with the validator's
// message.
func TestCertRotation(t *testing.T) {
	ctx := t.Context()
	const (
		ns         = "rotation"
		secretName = "rotation-webhook-cert"
		configName = "rotation-webhook"
		label      = "test.schedops.io/rotation"
	)
	port := testutil.FreePort(t)
	create := func(obj client.Object) {
		t.Helper()
		if err := k8sClient.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = k8sClient.Delete(context.Background(), obj) })
	}
	create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: secretName, Namespace: ns}})
	create(rotationWebhookConfig(t, configName, label, fmt.Sprintf("https://localhost:%d%s", port, profilePath)))

	certDir := filepath.Join(t.TempDir(), "serving-certs")
	began := time.Now()
	op := framework.StartOperator(t, cfg, controllers.ManagerOptions{
		Namespace:      ns,
		SchedulerImage: operatorenv.SchedulerImage,
		Webhook: &controllers.WebhookOptions{
			Host: "localhost", Port: port, CertDir: certDir, CertRotation: true,
			SecretName: secretName, ConfigName: configName, CertDNSName: "localhost",
		},
	})

	secret := &corev1.Secret{}
	testutil.Eventually(t, waitTimeout, "the operator to write the certificate", func(ctx context.Context) error {
		if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: secretName}, secret); err != nil {
			return err
		}
		for _, key := range []string{"ca.crt", "tls.crt", "tls.key"} {
			if len(secret.Data[key]) == 0 {
				return fmt.Errorf("the Secret has no %s", key)
			}
		}
		return nil
	})
	testutil.Eventually(t, waitTimeout, "the CA in the webhook configuration", func(ctx context.Context) error {
		vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		if err := k8sClient.Get(ctx, client.ObjectKey{Name: configName}, vwc); err != nil {
			return err
		}
		if got := vwc.Webhooks[0].ClientConfig.CABundle; !bytes.Equal(got, secret.Data["ca.crt"]) {
			return fmt.Errorf("caBundle is %d bytes, not the Secret's ca.crt", len(got))
		}
		return nil
	})
	for _, key := range []string{"tls.crt", "tls.key"} {
		testutil.Eventually(t, waitTimeout, "the operator to copy "+key+" into its certificate directory", func(context.Context) error {
			data, err := os.ReadFile(filepath.Join(certDir, key))
			if err != nil || !bytes.Equal(data, secret.Data[key]) {
				return fmt.Errorf("%s: %d bytes (%v), want the Secret's %d", key, len(data), err, len(secret.Data[key]))
			}
			return nil
		})
	}
	// The rotator looks for the files 1, 2, 4 ... seconds (with jitter) after it starts: copied
	// at once, they are found within its first few looks.
	if err := waitServing("localhost", port, 20*time.Second); err != nil {
		t.Fatalf("%v\n%s", err, op.Log)
	}
	t.Logf("the webhook is served %s after the operator's start", time.Since(began).Round(100*time.Millisecond))

	good := testutil.MakeProfile("rotation-good").Obj()
	good.Labels = map[string]string{label: "true"}
	// The apiserver calls with the injected CA once its informer has seen the new caBundle.
	testutil.Eventually(t, waitTimeout, "the apiserver to trust the rotated certificate", func(ctx context.Context) error {
		return k8sClient.Create(ctx, good.DeepCopy(), client.DryRunAll)
	})
	before := webhookCalls(t, profilePath)
	if err := k8sClient.Create(ctx, good); err != nil {
		t.Fatalf("A valid profile through the rotated certificate: %v", err)
	}
	t.Cleanup(func() { _ = k8sClient.Delete(context.Background(), good) })
	// Both configurations review a labelled profile: the suite's and this test's.
	testutil.Eventually(t, 5*time.Second, "2 reviews of a labelled profile (the suite's webhook and the rotated one)", func(context.Context) error {
		if calls := webhookCalls(t, profilePath) - before; calls != 2 {
			return fmt.Errorf("%v reviews", calls)
		}
		return nil
	})
	bad := testutil.MakeProfile("rotation-bad").PluginConfig("NodeResourcesFit", invalidScoring).Obj()
	bad.Labels = map[string]string{label: "true"}
	err := k8sClient.Create(ctx, bad)
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), `spec.pluginConfig[0].args.scoringStrategy.type: Unsupported value: "Most"`) {
		t.Errorf("An invalid profile: %v, want the validator's refusal", err)
	}
}

// rotationWebhookConfig is the generated configuration's profile webhook, renamed, called at url
// without a caBundle, for the objects with label only.
func rotationWebhookConfig(t *testing.T, name, label, url string) *admissionregistrationv1.ValidatingWebhookConfiguration {
	t.Helper()
	for _, vwc := range env.WebhookInstallOptions.ValidatingWebhooks {
		for _, w := range vwc.Webhooks {
			if w.ClientConfig.URL == nil || !strings.HasSuffix(*w.ClientConfig.URL, profilePath) {
				continue
			}
			w = *w.DeepCopy()
			w.ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: ptr.To(url)}
			w.ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{label: "true"}}
			return &admissionregistrationv1.ValidatingWebhookConfiguration{
				ObjectMeta: metav1.ObjectMeta{Name: name},
				Webhooks:   []admissionregistrationv1.ValidatingWebhook{w},
			}
		}
	}
	t.Fatal("The installed configuration has no webhook for SchedulerProfiles")
	return nil
}
