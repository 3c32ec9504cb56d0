package controllers

import (
	"errors"
	"net/http"
	"strings"
	"testing"
)

// TestWebhookReadiness: the readiness check fails until the webhook is registered on a started
// server, then is the server's own check; a failed registration keeps it failing.
func TestWebhookReadiness(t *testing.T) {
	req, _ := http.NewRequest(http.MethodGet, "/readyz", nil)
	r := &webhookReadiness{}
	if err := r.check(req); err == nil || !strings.Contains(err.Error(), "certificate is not ready") {
		t.Errorf("Before the certificate: %v, want not ready", err)
	}
	notStarted := errors.New("webhook server has not been started yet")
	r.serving(func(*http.Request) error { return notStarted })
	if err := r.check(req); !errors.Is(err, notStarted) {
		t.Errorf("Registered, server not started: %v, want the server's check", err)
	}
	r.serving(func(*http.Request) error { return nil })
	if err := r.check(req); err != nil {
		t.Errorf("Serving: %v", err)
	}
	failed := errors.New("setting up the SchedulerProfile webhook: boom")
	r.fail(failed)
	if err := r.check(req); !errors.Is(err, failed) {
		t.Errorf("After a failed registration: %v", err)
	}
}

func TestWebhookCertificateName(t *testing.T) {
	w := &WebhookOptions{ServiceName: DefaultWebhookServiceName}
	if got, want := w.dnsName("ops"), "scheduler-profile-operator-webhook-service.ops.svc"; got != want {
		t.Errorf("dnsName: %q, want %q", got, want)
	}
	w.CertDNSName = "localhost"
	if got := w.dnsName("ops"); got != "localhost" {
		t.Errorf("dnsName with CertDNSName: %q", got)
	}
}
