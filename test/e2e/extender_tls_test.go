package e2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	certutil "k8s.io/client-go/util/cert"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/internal/localcluster"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
)

// testCA signs the extender's serving certificate and the scheduler's client certificates.
type testCA struct {
	localcluster.KeyPair
}

func newTestCA(t *testing.T) testCA {
	t.Helper()
	ca, err := localcluster.NewCA("e2e-extender-ca")
	if err != nil {
		t.Fatal(err)
	}
	return testCA{ca}
}

// sign returns the PEM certificate and key of a new certificate signed by the CA.
func (ca testCA) sign(t *testing.T, cfg certutil.Config) (certPEM, keyPEM []byte) {
	t.Helper()
	pair, err := ca.Sign(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if keyPEM, err = pair.KeyPEM(); err != nil {
		t.Fatal(err)
	}
	return pair.CertPEM(), keyPEM
}

// clientCertSecret is a kubernetes.io/tls Secret with a client certificate of the CA and the CA,
// which consents to extender use by users (schedulingv1alpha1.AnnotationExtenderTLSFor).
func (ca testCA) clientCertSecret(t *testing.T, name, commonName, users string) *corev1.Secret {
	t.Helper()
	certPEM, keyPEM := ca.sign(t, certutil.Config{CommonName: commonName, Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: operatorNamespace, Name: name,
			Labels:      map[string]string{schedulingv1alpha1.LabelExtenderTLS: "true"},
			Annotations: map[string]string{schedulingv1alpha1.AnnotationExtenderTLSFor: users}},
		Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{corev1.TLSCertKey: certPEM, corev1.TLSPrivateKeyKey: keyPEM, "ca.crt": ca.CertPEM()},
	}
}

// peerRecorder remembers the client certificate's common name of every call.
type peerRecorder struct {
	next http.Handler
	mu   sync.Mutex
	cns  []string
}

func (p *peerRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		http.Error(w, "no client certificate", http.StatusUnauthorized)
		return
	}
	p.mu.Lock()
	p.cns = append(p.cns, r.TLS.PeerCertificates[0].Subject.CommonName)
	p.mu.Unlock()
	p.next.ServeHTTP(w, r)
}

// callers returns the common names of the calls so far, in order.
func (p *peerRecorder) callers() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.cns...)
}

// TestHTTPSExtenderWithClientCertificateFromSecret: an extender served over HTTPS that requires a
// client certificate signed by its CA is called by a profile whose certificate, key and CA come
// from a Secret; a new certificate in the Secret rolls the scheduler, which then calls with it;
// a profile with the key inline is refused at creation.
func TestHTTPSExtenderWithClientCertificateFromSecret(t *testing.T) {
	nodes := makeNodes(t, "mtls", nodeSpec{name: "big", cpus: 32}, nodeSpec{name: "small", cpus: 2})
	ca := newTestCA(t)
	serverCert, serverKey := ca.sign(t, certutil.Config{
		CommonName: "e2e-extender", AltNames: certutil.AltNames{IPs: []net.IP{net.ParseIP("127.0.0.1")}},
		Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	pair, err := tls.X509KeyPair(serverCert, serverKey)
	if err != nil {
		t.Fatal(err)
	}
	clientCAs := x509.NewCertPool()
	if !clientCAs.AppendCertsFromPEM(ca.CertPEM()) {
		t.Fatal("The CA's certificate does not parse")
	}
	ext := &peerRecorder{next: http.StripPrefix("/scheduler", &filterExtender{allowed: "mtls-small"})}
	addr := serveExtender(t, ext, &tls.Config{
		Certificates: []tls.Certificate{pair}, ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: clientCAs, MinVersion: tls.VersionTLS12,
	})

	// The extender refuses a caller without a certificate of its CA.
	plain := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: clientCAs, MinVersion: tls.VersionTLS12}}}
	if resp, err := plain.Post("https://"+addr.String()+"/scheduler/filter", "application/json", strings.NewReader("{}")); err == nil {
		_ = resp.Body.Close()
		t.Fatalf("the extender answered %s to a caller without a client certificate", resp.Status)
	}

	secret := ca.clientCertSecret(t, "e2e-mtls-client", "scheduler-client-1", "e2e-mtls")
	if err := k8s.Create(t.Context(), secret); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), secret) })

	p := applyProfile(t, fmt.Sprintf(`
metadata: {name: e2e-mtls}
spec:
  extenders:
  - urlPrefix: https://%s/scheduler
    filterVerb: filter
    nodeCacheCapable: true
    enableHTTPS: true
    httpTimeout: 5s
    tlsConfig:
      secretRef: {name: %s}`, addr, secret.Name))
	p = waitCondition(t, p.Name, schedulingv1alpha1.ConditionConfigValid, metav1.ConditionTrue, "", 30*time.Second)
	waitScheduler(t, p.Name, p.Status.ConfigHash)

	cm := &corev1.ConfigMap{}
	if err := k8s.Get(t.Context(), client.ObjectKey{Namespace: operatorNamespace, Name: p.Status.ConfigMapName}, cm); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(cm.Data["config.yaml"], "PRIVATE KEY") {
		t.Errorf("ConfigMap %s holds a private key", cm.Name)
	}

	// Without the extender, LeastAllocated would prefer the big node.
	if n := schedule(t, nodes.pod("mtls-0", "e2e-mtls", 100))[0]; n.Name != "mtls-small" {
		t.Errorf("pod mtls-0 landed on %s; the extender allows only mtls-small", n.Name)
	}
	if got := ext.callers(); len(got) == 0 || got[len(got)-1] != "scheduler-client-1" {
		t.Fatalf("the extender was called by %v, want scheduler-client-1", got)
	}

	// Rotation: a new client certificate of the same CA.
	deployment := p.Status.DeploymentName
	revision, err := deploymentRevision(t.Context(), deployment)
	if err != nil {
		t.Fatal(err)
	}
	rotated := ca.clientCertSecret(t, secret.Name, "scheduler-client-2", "e2e-mtls")
	if err := k8s.Get(t.Context(), client.ObjectKeyFromObject(secret), secret); err != nil {
		t.Fatal(err)
	}
	secret.Data = rotated.Data
	if err := k8s.Update(t.Context(), secret); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, 90*time.Second, "the scheduler of "+p.Name+" to roll to the new certificate", func(ctx context.Context) error {
		now, err := deploymentRevision(ctx, deployment)
		if err != nil {
			return err
		}
		if now == revision {
			return fmt.Errorf("the Deployment still has revision %s", revision)
		}
		reps := runner.Replicas(deployment)
		if len(reps) != 1 || reps[0].Revision != now || !reps[0].Ready {
			return fmt.Errorf("%d scheduler processes, want one ready with revision %s", len(reps), now)
		}
		return nil
	})
	after := waitCondition(t, p.Name, schedulingv1alpha1.ConditionConfigValid, metav1.ConditionTrue, "", 30*time.Second)
	if after.Status.ConfigHash != p.Status.ConfigHash {
		t.Errorf("the rotation changed the config hash from %s to %s", p.Status.ConfigHash, after.Status.ConfigHash)
	}
	callsBefore := len(ext.callers())
	if n := schedule(t, nodes.pod("mtls-1", "e2e-mtls", 100))[0]; n.Name != "mtls-small" {
		t.Errorf("pod mtls-1 landed on %s; the extender allows only mtls-small", n.Name)
	}
	if got := ext.callers()[callsBefore:]; len(got) == 0 || got[len(got)-1] != "scheduler-client-2" {
		t.Errorf("after the rotation the extender was called by %v, want scheduler-client-2", got)
	}

	// A certificate with another certificate's key: refused before rollout, and the running
	// scheduler keeps its configuration and its certificate.
	revision, err = deploymentRevision(t.Context(), deployment)
	if err != nil {
		t.Fatal(err)
	}
	other := ca.clientCertSecret(t, secret.Name, "scheduler-client-3", "e2e-mtls")
	if err := k8s.Get(t.Context(), client.ObjectKeyFromObject(secret), secret); err != nil {
		t.Fatal(err)
	}
	secret.Data[corev1.TLSPrivateKeyKey] = other.Data[corev1.TLSPrivateKeyKey]
	if err := k8s.Update(t.Context(), secret); err != nil {
		t.Fatal(err)
	}
	refused := waitCondition(t, p.Name, schedulingv1alpha1.ConditionConfigValid, metav1.ConditionFalse, schedulingv1alpha1.ReasonSecretInvalid, 30*time.Second)
	if c := meta.FindStatusCondition(refused.Status.Conditions, schedulingv1alpha1.ConditionConfigValid); !strings.Contains(c.Message, "tls.crt and tls.key are not a certificate and its key: tls: private key does not match public key") {
		t.Errorf("ConfigValid says %q, want the mismatched pair named", c.Message)
	}
	testutil.Consistently(t, 3*time.Second, "the scheduler of "+p.Name+" to keep its revision", func(ctx context.Context) error {
		now, err := deploymentRevision(ctx, deployment)
		if err != nil {
			return err
		}
		if now != revision {
			return fmt.Errorf("the Deployment moved from revision %s to %s", revision, now)
		}
		return nil
	})
	callsBefore = len(ext.callers())
	if n := schedule(t, nodes.pod("mtls-2", "e2e-mtls", 100))[0]; n.Name != "mtls-small" {
		t.Errorf("pod mtls-2 landed on %s; the extender allows only mtls-small", n.Name)
	}
	if got := ext.callers()[callsBefore:]; len(got) == 0 || got[len(got)-1] != "scheduler-client-2" {
		t.Errorf("with the mismatched Secret the extender was called by %v, want scheduler-client-2 (the running scheduler)", got)
	}

	// A private key inline is refused by the apiserver.
	inline := &schedulingv1alpha1.SchedulerProfile{}
	certPEM, keyPEM := ca.sign(t, certutil.Config{CommonName: "inline", Usages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}})
	inlineSpec, err := yaml.Marshal(map[string]any{"metadata": map[string]any{"name": "e2e-mtls-inline"}, "spec": map[string]any{"extenders": []any{map[string]any{
		"urlPrefix": "https://" + addr.String() + "/scheduler", "filterVerb": "filter", "enableHTTPS": true,
		"tlsConfig": map[string]any{"certData": certPEM, "keyData": keyPEM},
	}}}})
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(inlineSpec, inline); err != nil {
		t.Fatal(err)
	}
	err = k8s.Create(t.Context(), inline)
	if err == nil {
		_ = k8s.Delete(context.Background(), inline)
		t.Fatal("a profile with keyData was created")
	}
	if !strings.Contains(err.Error(), "keyData is not accepted: put the client certificate and key in a Secret") {
		t.Errorf("creating a profile with keyData: %v, want the refusal that names the Secret", err)
	}
}

// deploymentRevision is the pod template revision of a scheduler Deployment.
func deploymentRevision(ctx context.Context, name string) (string, error) {
	d := &appsv1.Deployment{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: name}, d); err != nil {
		return "", err
	}
	return d.Spec.Template.Annotations[schedulingv1alpha1.AnnotationRevision], nil
}
