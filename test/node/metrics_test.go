package node

import (
	"crypto/tls"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const (
	operatorMetricsService = "scheduler-profile-operator-controller-manager-metrics-service"
	// metricsReaderRole is config/rbac's ClusterRole for /metrics.
	metricsReaderRole = "scheduler-profile-operator-metrics-reader"
)

// metricsToken returns a token of a ServiceAccount bound to the metrics-reader ClusterRole, as a
// Prometheus in the cluster would have.
func metricsToken(t *testing.T) string {
	t.Helper()
	ctx := t.Context()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "node-metrics", Namespace: metav1.NamespaceDefault}}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "node-metrics"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: metricsReaderRole},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: sa.Name, Namespace: sa.Namespace}},
	}
	for _, obj := range []client.Object{sa, binding} {
		if err := k8s.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		_ = k8s.Delete(t.Context(), binding)
		_ = k8s.Delete(t.Context(), sa)
	})
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	tr, err := cs.CoreV1().ServiceAccounts(sa.Namespace).CreateToken(ctx, sa.Name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return tr.Status.Token
}

// scrape GETs https://addr/metrics with the token (none when empty) and returns the status and body.
// The operator and kube-scheduler serve /metrics with self-signed certificates, so the scraper
// authenticates them by nothing but the address, as a ServiceMonitor with insecureSkipVerify does.
func scrape(t *testing.T, addr, token string) (int, string) {
	t.Helper()
	httpClient := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // self-signed serving certificates, see above
	}}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "https://"+addr+"/metrics", nil)
	if err != nil {
		t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		t.Fatalf("GET https://%s/metrics: %v", addr, err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(body)
}

// TestMetricsThroughServices: the operator's metrics Service (a virtual IP that kube-proxy
// programs) and every scheduler's headless metrics Service (its endpoints, the pods' addresses on
// the real node's bridge) serve /metrics to a ServiceAccount token allowed it, and refuse a caller
// without one.
func TestMetricsThroughServices(t *testing.T) {
	token := metricsToken(t)

	svc := &corev1.Service{}
	if err := k8s.Get(t.Context(), types.NamespacedName{Namespace: namespace, Name: operatorMetricsService}, svc); err != nil {
		t.Fatal(err)
	}
	addr := net.JoinHostPort(svc.Spec.ClusterIP, strconv.Itoa(int(svc.Spec.Ports[0].Port)))
	if code, _ := scrape(t, addr, ""); code != http.StatusUnauthorized && code != http.StatusForbidden {
		t.Errorf("The operator's /metrics without a token: %d, want 401 or 403", code)
	}
	code, body := scrape(t, addr, token)
	if code != http.StatusOK || !strings.Contains(body, "schedops_") {
		t.Errorf("The operator's /metrics through %s: %d, want 200 with schedops_ series:\n%.500s", addr, code, body)
	}

	var slices discoveryv1.EndpointSliceList
	if err := k8s.List(t.Context(), &slices, client.InNamespace(namespace), client.HasLabels{"app.kubernetes.io/managed-by"}); err != nil {
		t.Fatal(err)
	}
	scraped := 0
	for _, s := range slices.Items {
		if s.Labels[discoveryv1.LabelServiceName] == operatorMetricsService || len(s.Ports) == 0 {
			continue
		}
		for _, ep := range s.Endpoints {
			for _, ip := range ep.Addresses {
				addr := net.JoinHostPort(ip, strconv.Itoa(int(*s.Ports[0].Port)))
				code, body := scrape(t, addr, token)
				if code != http.StatusOK || !strings.Contains(body, "scheduler_schedule_attempts_total") {
					t.Errorf("Scheduler /metrics of Service %s at %s: %d, want 200 with scheduler_schedule_attempts_total:\n%.300s",
						s.Labels[discoveryv1.LabelServiceName], addr, code, body)
				}
				scraped++
			}
		}
	}
	if scraped == 0 {
		t.Fatal("No scheduler endpoint to scrape")
	}
	t.Logf("scraped the operator through %s and %d scheduler pods through their Services' endpoints", addr, scraped)
}
