package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/controllers"
	"github.com/schedops/scheduler-profile-operator/internal/localcluster"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
)

// webhookLabel selects the profiles the webhook reviews on the local cluster: the other tests
// apply invalid profiles on purpose, to see what the reconciler makes of them.
const webhookLabel = "e2e.schedops.io/webhook"

// setUpWebhook installs the generated webhook configurations (config/webhook) for the operator
// that runs in this process. The local cluster has no Service network, so they call the operator
// by URL on localhost, with a certificate of the test's own CA; the validating webhook only for
// profiles labelled webhookLabel, the pod assignment webhook for the namespaces it selects (those
// with the assignment label). It returns the operator's webhook settings.
func setUpWebhook(ctx context.Context, root, dir string) (*controllers.WebhookOptions, error) {
	certPEM, err := testutil.LocalServingCert(dir)
	if err != nil {
		return nil, err
	}
	ports, err := localcluster.FreePorts(1)
	if err != nil {
		return nil, err
	}
	port := ports[0]
	vwc, mwc, err := webhookConfigurations(filepath.Join(root, "config", "webhook", "manifests.yaml"))
	if err != nil {
		return nil, err
	}
	byURL := func(c *admissionregistrationv1.WebhookClientConfig) {
		url := fmt.Sprintf("https://localhost:%d%s", port, *c.Service.Path)
		*c = admissionregistrationv1.WebhookClientConfig{URL: ptr.To(url), CABundle: certPEM}
	}
	for i := range vwc.Webhooks {
		byURL(&vwc.Webhooks[i].ClientConfig)
		vwc.Webhooks[i].ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{webhookLabel: "true"}}
	}
	for i := range mwc.Webhooks {
		byURL(&mwc.Webhooks[i].ClientConfig)
	}
	for _, obj := range []client.Object{vwc, mwc} {
		if err := k8s.Create(ctx, obj); err != nil {
			return nil, fmt.Errorf("installing the webhook configuration %s: %w", obj.GetName(), err)
		}
	}
	return &controllers.WebhookOptions{Host: "localhost", Port: port, CertDir: dir}, nil
}

// webhookConfigurations reads the validating and the mutating configuration of the generated
// manifests, a file of several documents.
func webhookConfigurations(path string) (*admissionregistrationv1.ValidatingWebhookConfiguration, *admissionregistrationv1.MutatingWebhookConfiguration, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	mwc := &admissionregistrationv1.MutatingWebhookConfiguration{}
	decoder := yaml.NewYAMLOrJSONDecoder(f, 4096)
	for {
		var doc struct {
			Kind string `json:"kind"`
		}
		var raw json.RawMessage
		if err := decoder.Decode(&raw); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, nil, fmt.Errorf("reading %s: %w", path, err)
		}
		if err := json.Unmarshal(raw, &doc); err != nil {
			return nil, nil, fmt.Errorf("reading %s: %w", path, err)
		}
		var into any
		switch doc.Kind {
		case "ValidatingWebhookConfiguration":
			into = vwc
		case "MutatingWebhookConfiguration":
			into = mwc
		default:
			continue
		}
		if err := json.Unmarshal(raw, into); err != nil {
			return nil, nil, fmt.Errorf("reading the %s of %s: %w", doc.Kind, path, err)
		}
	}
	if len(vwc.Webhooks) == 0 || len(mwc.Webhooks) == 0 {
		return nil, nil, fmt.Errorf("%s has no validating or no mutating webhook", path)
	}
	return vwc, mwc, nil
}

// TestKubectlApplyRefused: `kubectl apply -f` of a broken profile exits non-zero and prints the
// field error, and stores nothing; `--dry-run=server` does the same; a valid profile applies.
func TestKubectlApplyRefused(t *testing.T) {
	dir := t.TempDir()
	write := func(name, doc string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	const header = "apiVersion: scheduling.schedops.io/v1alpha1\nkind: SchedulerProfile\nmetadata:\n  labels: {" + webhookLabel + ": \"true\"}\n"
	broken := write("broken.yaml", header+`  name: e2e-broken
spec:
  pluginConfig:
  - name: NodeResourcesFit
    args: {scoringStrategy: {type: Most}}
`)
	valid := write("valid.yaml", header+`  name: e2e-admitted
spec:
  pluginConfig:
  - name: NodeResourcesFit
    args: {scoringStrategy: {type: MostAllocated}}
`)
	const fieldError = `spec.pluginConfig[0].args.scoringStrategy.type: Unsupported value: "Most"`

	// The apiserver calls the webhook once it has seen its configuration and the operator serves.
	testutil.Eventually(t, 30*time.Second, "the webhook to review a dry-run apply", func(context.Context) error {
		if out, _ := kubectl(t, "apply", "--dry-run=server", "-f", broken); !strings.Contains(out, fieldError) {
			return fmt.Errorf("kubectl apply --dry-run=server printed %q", out)
		}
		return nil
	})
	for _, args := range [][]string{{"apply", "--dry-run=server", "-f", broken}, {"apply", "-f", broken}} {
		out, err := kubectl(t, args...)
		t.Logf("kubectl %s:\n%s", strings.Join(args, " "), out)
		if err == nil {
			t.Errorf("kubectl %s exited 0", strings.Join(args, " "))
		}
		if !strings.Contains(out, fieldError) || !strings.Contains(out, `The SchedulerProfile "e2e-broken" is invalid: `) {
			t.Errorf("kubectl %s printed no field error %q", strings.Join(args, " "), fieldError)
		}
	}
	if err := k8s.Get(t.Context(), client.ObjectKey{Name: "e2e-broken"}, &schedulingv1alpha1.SchedulerProfile{}); !apierrors.IsNotFound(err) {
		t.Errorf("The broken profile after the refused applies: %v, want NotFound", err)
	}

	if out, err := kubectl(t, "apply", "-f", valid); err != nil {
		t.Fatalf("kubectl apply of a valid profile: %v\n%s", err, out)
	}
	t.Cleanup(func() { _, _ = kubectl(t, "delete", "--ignore-not-found", "-f", valid) })
	waitCondition(t, "e2e-admitted", schedulingv1alpha1.ConditionConfigValid, metav1.ConditionTrue, schedulingv1alpha1.ReasonConfigAccepted, 30*time.Second)
}

// kubectl runs kubectl on the local cluster and returns its combined output.
func kubectl(t *testing.T, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	// The kubectl of the operator's Kubernetes version, which make builds into bin/k8s.
	binDir, err := localcluster.DefaultBinDir()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, filepath.Join(binDir, "kubectl"), append([]string{"--kubeconfig", cluster.Kubeconfig()}, args...)...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}
