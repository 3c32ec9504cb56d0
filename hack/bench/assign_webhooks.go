package main

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/webhooks"
)

const (
	// floorLabel on a namespace has its pods reviewed by the floor webhook.
	floorLabel = "bench.schedops.io/floor"
	// floorConfig is the floor webhook's MutatingWebhookConfiguration.
	floorConfig = "bench-floor"
)

// podAssignerWebhook reads the MutatingWebhookConfiguration of the pod assignment webhook, as
// the cluster installed it (called by URL), and the index of that webhook in it.
func podAssignerWebhook(ctx context.Context, admin client.Client) (*admissionregistrationv1.MutatingWebhookConfiguration, int, error) {
	var list admissionregistrationv1.MutatingWebhookConfigurationList
	if err := admin.List(ctx, &list); err != nil {
		return nil, 0, err
	}
	for i := range list.Items {
		for j, w := range list.Items[i].Webhooks {
			if w.ClientConfig.URL != nil && strings.HasSuffix(*w.ClientConfig.URL, webhooks.PodAssignerPath) {
				return &list.Items[i], j, nil
			}
		}
	}
	return nil, 0, fmt.Errorf("no webhook of path %s called by URL among the MutatingWebhookConfigurations", webhooks.PodAssignerPath)
}

// callThrough points the webhook that find finds at proxy, waits until the apiserver calls it
// there for the pods of ns, and forgets the reviews of that wait.
func callThrough(ctx context.Context, admin client.Client, find func(context.Context, client.Client) (*admissionregistrationv1.MutatingWebhookConfiguration, int, error), ns string, proxy *timingProxy) error {
	cfg, i, err := find(ctx, admin)
	if err != nil {
		return err
	}
	w := &cfg.Webhooks[i]
	u, err := url.Parse(*w.ClientConfig.URL)
	if err != nil {
		return err
	}
	u.Host = proxy.addr
	w.ClientConfig.URL = ptr.To(u.String())
	if err := admin.Update(ctx, cfg); err != nil {
		return err
	}
	if err := waitAssigned(ctx, admin, ns, func() bool { return len(proxy.take()) > 0 }); err != nil {
		return fmt.Errorf("waiting for the apiserver to call webhook %s through a timing proxy: %w", w.Name, err)
	}
	_ = proxy.take()
	return nil
}

// floorWebhookConfig reads the floor webhook's configuration.
func floorWebhookConfig(ctx context.Context, admin client.Client) (*admissionregistrationv1.MutatingWebhookConfiguration, int, error) {
	cfg := &admissionregistrationv1.MutatingWebhookConfiguration{}
	return cfg, 0, admin.Get(ctx, client.ObjectKey{Name: floorConfig}, cfg)
}

// floorWebhook is the least a webhook that assigns pods can do: it reads the review and answers
// with the patch the operator's webhook answers for an assigned pod, deciding nothing. It runs
// in the operator's process and is configured as the operator's webhook is (rules,
// matchConditions, timeout), for the namespaces with floorLabel: pods created there cost what
// calling any such webhook costs.
type floorWebhook struct {
	server *http.Server
	patch  []byte
}

// serveFloorWebhook serves the floor webhook at addr with the certificate of certDir; its patch
// assigns schedulerName.
func serveFloorWebhook(addr, certDir, schedulerName string) (*floorWebhook, error) {
	patch, err := json.Marshal([]map[string]any{
		{"op": "add", "path": "/spec/schedulerName", "value": schedulerName},
		{"op": "add", "path": "/metadata/annotations", "value": map[string]string{v1alpha1.AnnotationAssignment: "assigned"}},
	})
	if err != nil {
		return nil, err
	}
	f := &floorWebhook{patch: patch}
	if _, f.server, err = serveTLS(addr, certDir, f); err != nil {
		return nil, err
	}
	return f, nil
}

// installFloorWebhook installs the floor webhook's configuration, served at addr with a
// certificate that ca signed: a copy of the pod assignment webhook's.
func installFloorWebhook(ctx context.Context, admin client.Client, addr string, ca []byte) error {
	assigner, i, err := podAssignerWebhook(ctx, admin)
	if err != nil {
		return err
	}
	w := assigner.Webhooks[i].DeepCopy()
	w.Name = "floor.bench.schedops.io"
	w.ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://" + addr + "/floor"), CABundle: ca}
	w.NamespaceSelector = &metav1.LabelSelector{MatchLabels: map[string]string{floorLabel: "true"}}
	return admin.Create(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: floorConfig}, Webhooks: []admissionregistrationv1.MutatingWebhook{*w}})
}

// ServeHTTP answers a review with the patch.
func (f *floorWebhook) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var review admissionv1.AdmissionReview
	if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
		http.Error(w, "not an admission review", http.StatusBadRequest)
		return
	}
	review.Response = &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: true, PatchType: ptr.To(admissionv1.PatchTypeJSONPatch), Patch: f.patch}
	review.Request = nil
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(&review)
}

func (f *floorWebhook) stop() { _ = f.server.Close() }

// serveTLS serves handler with TLS at addr (a port of 0: a free one), with the certificate of
// certDir, and returns the address it serves at.
func serveTLS(addr, certDir string, handler http.Handler) (string, *http.Server, error) {
	cert, err := tls.LoadX509KeyPair(filepath.Join(certDir, "tls.crt"), filepath.Join(certDir, "tls.key"))
	if err != nil {
		return "", nil, err
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return "", nil, err
	}
	server := &http.Server{Handler: handler, TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = server.ServeTLS(l, "", "") }()
	return l.Addr().String(), server, nil
}

// timingProxy serves TLS where the apiserver calls a webhook, forwards each request to the
// webhook's server, and times the round trip there: the webhook as the apiserver sees it, less
// the apiserver's side of the call.
type timingProxy struct {
	addr     string
	upstream string
	client   *http.Client
	server   *http.Server

	mu   sync.Mutex
	took []time.Duration
}

// startTimingProxy serves on a free port of host with the certificate of certDir, forwarding to
// upstream, whose certificate ca signed.
func startTimingProxy(host, upstream, certDir string, ca []byte) (*timingProxy, error) {
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(ca) {
		return nil, errors.New("no CA certificate for the webhook")
	}
	p := &timingProxy{upstream: upstream,
		// HTTP/2 with kept-alive connections, as the apiserver calls a webhook.
		client: &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}, ForceAttemptHTTP2: true, MaxIdleConnsPerHost: 64}}}
	var err error
	if p.addr, p.server, err = serveTLS(net.JoinHostPort(host, "0"), certDir, p); err != nil {
		return nil, err
	}
	return p, nil
}

// ServeHTTP forwards one review and records how long the webhook server took to answer it whole.
func (p *timingProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req, err := http.NewRequestWithContext(r.Context(), r.Method, p.upstream+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	req.Header = r.Header.Clone()
	start := time.Now()
	resp, err := p.client.Do(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	answer, err := io.ReadAll(resp.Body)
	took := time.Since(start)
	_ = resp.Body.Close()
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	p.mu.Lock()
	p.took = append(p.took, took)
	p.mu.Unlock()
	w.Header().Set("Content-Type", resp.Header.Get("Content-Type"))
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(answer)
}

// take returns the durations recorded since the last take.
func (p *timingProxy) take() []time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	took := p.took
	p.took = nil
	return took
}

func (p *timingProxy) stop() { _ = p.server.Close() }
