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

	"github.com/schedops/scheduler-profile-operator/internal/freeport"
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
// generated webhook configuration (config/webhook) calling an operator on a free port of
// localhost, for the objects that validating selects (every object when nil).
func InstallLocalWebhooks(ctx context.Context, c client.Client, root, certDir string, validating *metav1.LabelSelector) (*LocalWebhook, error) {
	certPEM, err := testutil.LocalServingCert(certDir)
	if err != nil {
		return nil, err
	}
	ports, err := freeport.Ports(1)
	if err != nil {
		return nil, err
	}
	port := ports[0]
	vwc, err := webhookConfiguration(filepath.Join(root, "config", "webhook", "manifests.yaml"))
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
	if err := c.Create(ctx, vwc); err != nil {
		return nil, fmt.Errorf("installing the webhook configuration %s: %w", vwc.GetName(), err)
	}
	return &LocalWebhook{Port: port, CertDir: certDir}, nil
}

// managerArgs are bin/manager's flags that serve the webhook as the configurations call it.
func (w *LocalWebhook) managerArgs() []string {
	return []string{"--webhook-host=localhost", "--webhook-port=" + strconv.Itoa(w.Port), "--webhook-cert-dir=" + w.CertDir, "--disable-cert-rotation"}
}

// webhookConfiguration reads the validating configuration of the generated manifests, a file of
// several documents.
func webhookConfiguration(path string) (*admissionregistrationv1.ValidatingWebhookConfiguration, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	decoder := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var raw json.RawMessage
		if err := decoder.Decode(&raw); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("reading %s: %w", path, err)
		}
		var doc metav1.TypeMeta
		if err := json.Unmarshal(raw, &doc); err != nil {
			return nil, fmt.Errorf("reading %s: %w", path, err)
		}
		if doc.Kind != "ValidatingWebhookConfiguration" {
			continue
		}
		if err := json.Unmarshal(raw, vwc); err != nil {
			return nil, fmt.Errorf("reading the %s of %s: %w", doc.Kind, path, err)
		}
	}
	if len(vwc.Webhooks) == 0 {
		return nil, fmt.Errorf("%s has no validating webhook", path)
	}
	return vwc, nil
}
