package operatorenv

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/schedops/scheduler-profile-operator/internal/localcluster"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
)

// LocalWebhook is an operator's webhook server on localhost, which the local cluster, having no
// Service network, calls by URL.
type LocalWebhook struct {
	// Port is where the operator serves; CertDir holds its tls.crt and tls.key, of the
	// certificate's own CA.
	Port    int
	CertDir string
}

// InstallLocalWebhooks writes a serving certificate for localhost into certDir and installs the
// generated webhook configurations (config/webhook) calling an operator on a free port of
// localhost: the validating webhook only for objects that validating selects (every object when
// nil), the pod assignment webhook for the namespaces it selects, those with the assignment label.
func InstallLocalWebhooks(ctx context.Context, c client.Client, root, certDir string, validating *metav1.LabelSelector) (*LocalWebhook, error) {
	certPEM, err := testutil.LocalServingCert(certDir)
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
	byURL := func(cc *admissionregistrationv1.WebhookClientConfig) {
		url := fmt.Sprintf("https://localhost:%d%s", port, *cc.Service.Path)
		*cc = admissionregistrationv1.WebhookClientConfig{URL: ptr.To(url), CABundle: certPEM}
	}
	for i := range vwc.Webhooks {
		byURL(&vwc.Webhooks[i].ClientConfig)
		vwc.Webhooks[i].ObjectSelector = validating
	}
	for i := range mwc.Webhooks {
		byURL(&mwc.Webhooks[i].ClientConfig)
	}
	for _, obj := range []client.Object{vwc, mwc} {
		if err := c.Create(ctx, obj); err != nil {
			return nil, fmt.Errorf("installing the webhook configuration %s: %w", obj.GetName(), err)
		}
	}
	return &LocalWebhook{Port: port, CertDir: certDir}, nil
}

// managerArgs are bin/manager's flags that serve the webhook as the configurations call it.
func (w *LocalWebhook) managerArgs() []string {
	return []string{"--webhook-host=localhost", "--webhook-port=" + strconv.Itoa(w.Port), "--webhook-cert-dir=" + w.CertDir, "--disable-cert-rotation"}
}

// webhookConfigurations reads the validating and the mutating configuration of the generated
// manifests, a file of several documents.
func webhookConfigurations(path string) (*admissionregistrationv1.ValidatingWebhookConfiguration, *admissionregistrationv1.MutatingWebhookConfiguration, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, err
	}
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	mwc := &admissionregistrationv1.MutatingWebhookConfiguration{}
	decoder := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var raw json.RawMessage
		if err := decoder.Decode(&raw); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, nil, fmt.Errorf("reading %s: %w", path, err)
		}
		var doc metav1.TypeMeta
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
