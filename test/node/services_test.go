package node

import (
	"context"
	"crypto/tls"
	"fmt"
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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
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
	name := strings.ToLower(t.Name())
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceDefault}}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: name},
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

// operatorMetricsAddr is the virtual IP and port of the operator's metrics Service.
func operatorMetricsAddr(t *testing.T) string {
	t.Helper()
	svc := &corev1.Service{}
	if err := k8s.Get(t.Context(), types.NamespacedName{Namespace: namespace, Name: operatorMetricsService}, svc); err != nil {
		t.Fatal(err)
	}
	return net.JoinHostPort(svc.Spec.ClusterIP, strconv.Itoa(int(svc.Spec.Ports[0].Port)))
}

// operatorMetrics scrapes the operator through its metrics Service; kube-proxy programs a new
// endpoint within a second or so of the pod becoming ready, so it retries until it answers 200.
func operatorMetrics(t *testing.T, token string) string {
	t.Helper()
	addr := operatorMetricsAddr(t)
	var body string
	testutil.Eventually(t, 30*time.Second, "the operator's /metrics through "+addr, func(context.Context) error {
		code, b, err := get(t, addr, token)
		if err != nil {
			return err
		}
		if code != http.StatusOK {
			return fmt.Errorf("status %d", code)
		}
		body = b
		return nil
	})
	return body
}

// seriesSum adds up the values of every series of a metric in a Prometheus text exposition.
func seriesSum(body, metric string) float64 {
	var sum float64
	for _, line := range strings.Split(body, "\n") {
		rest, ok := strings.CutPrefix(line, metric)
		if !ok || rest == "" || (rest[0] != '{' && rest[0] != ' ') {
			continue
		}
		f := strings.Fields(line)
		if v, err := strconv.ParseFloat(f[len(f)-1], 64); err == nil {
			sum += v
		}
	}
	return sum
}

// scrape GETs https://addr/metrics with the token (none when empty) and returns the status and body.
// The operator and kube-scheduler serve /metrics with self-signed certificates, so the scraper
// authenticates them by nothing but the address, as a ServiceMonitor with insecureSkipVerify does.
func scrape(t *testing.T, addr, token string) (int, string) {
	t.Helper()
	code, body, err := get(t, addr, token)
	if err != nil {
		t.Fatal(err)
	}
	return code, body
}

// get is scrape returning its error.
func get(t *testing.T, addr, token string) (int, string, error) {
	httpClient := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // self-signed serving certificates, see above
	}}
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, "https://"+addr+"/metrics", nil)
	if err != nil {
		return 0, "", err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// TestMetricsThroughServices: the operator's metrics Service (a virtual IP that kube-proxy
// programs) and every scheduler's headless metrics Service (its endpoints, the pods' addresses on
// the real node's bridge) serve /metrics to a ServiceAccount token allowed it, and refuse a caller
// without one.
func TestMetricsThroughServices(t *testing.T) {
	token := metricsToken(t)

	addr := operatorMetricsAddr(t)
	if code, _ := scrape(t, addr, ""); code != http.StatusUnauthorized && code != http.StatusForbidden {
		t.Errorf("The operator's /metrics without a token: %d, want 401 or 403", code)
	}
	if body := operatorMetrics(t, token); !strings.Contains(body, "schedops_") {
		t.Errorf("The operator's /metrics through %s has no schedops_ series:\n%.500s", addr, body)
	}

	endpoints, skipped := readySchedulerEndpoints(t)
	scraped, attempts := 0, 0
	for ep, service := range endpoints {
		body, left := scrapeEndpoint(t, ep, service, token)
		if left {
			skipped++
			continue
		}
		// Every replica serves the component's metrics; only a leader that has scheduled pods
		// has scheduling attempts.
		if seriesSum(body, "scheduler_schedule_attempts_total") > 0 {
			attempts++
		}
		scraped++
	}
	if scraped == 0 || attempts == 0 {
		t.Fatalf("%d scheduler endpoints scraped, %d with scheduling attempts: want some of each (TestSamples scheduled pods)", scraped, attempts)
	}
	t.Logf("scraped the operator through %s and %d ready scheduler pods through their Services' endpoints, %d with scheduling attempts (%d endpoints not ready, left out)", addr, scraped, attempts, skipped)
}

// readySchedulerEndpoints returns the address (IP:port) of every ready endpoint of the schedulers'
// metrics Services, with its Service's name, and how many endpoints were not ready. An endpoint
// that is not ready is a pod that is starting or stopping (a standby after a rollout, say), whose
// port may not be open; readiness is the probe on the same port.
func readySchedulerEndpoints(t *testing.T) (map[string]string, int) {
	t.Helper()
	var slices discoveryv1.EndpointSliceList
	if err := k8s.List(t.Context(), &slices, client.InNamespace(namespace), client.HasLabels{"app.kubernetes.io/managed-by"}); err != nil {
		t.Fatal(err)
	}
	ready, notReady := map[string]string{}, 0
	for _, s := range slices.Items {
		if s.Labels[discoveryv1.LabelServiceName] == operatorMetricsService || len(s.Ports) == 0 {
			continue
		}
		for _, ep := range s.Endpoints {
			if !ptr.Deref(ep.Conditions.Ready, false) {
				notReady++
				continue
			}
			for _, ip := range ep.Addresses {
				ready[net.JoinHostPort(ip, strconv.Itoa(int(*s.Ports[0].Port)))] = s.Labels[discoveryv1.LabelServiceName]
			}
		}
	}
	return ready, notReady
}

// scrapeEndpoint scrapes a scheduler's endpoint and fails the test unless it answers 200 with
// kube-scheduler's metrics. An endpoint that refuses the connection or the token is scraped again
// until it answers 200 or is no longer a ready endpoint of its Service; then left is true. Such
// a pod was stopping while the EndpointSlice still said ready: the test before this one rolls a
// scheduler and deletes its profile, whose ServiceAccount and grant to review tokens can be gone
// before its pod is (401).
func scrapeEndpoint(t *testing.T, addr, service, token string) (body string, left bool) {
	t.Helper()
	var code int
	var err error
	deadline := time.Now().Add(30 * time.Second)
	for {
		code, body, err = get(t, addr, token)
		if (err == nil && code == http.StatusOK) || time.Now().After(deadline) {
			break
		}
		if ready, _ := readySchedulerEndpoints(t); ready[addr] == "" {
			t.Logf("Scheduler endpoint %s of Service %s left its ready endpoints after: %d, %v", addr, service, code, err)
			return "", true
		}
		time.Sleep(500 * time.Millisecond)
	}
	if err != nil || code != http.StatusOK || !strings.Contains(body, "kubernetes_build_info") {
		t.Errorf("Scheduler /metrics of Service %s at %s: %d, %v, want 200 with kubernetes_build_info:\n%.300s", service, addr, code, err, body)
	}
	return body, false
}

// TestWebhookRefusesThroughService: kubectl apply of a profile with an unknown plugin is refused by
// the operator's webhook, which the apiserver reaches through its Service on the pod network with
// the certificate the operator rotates (the operator counts the review); nothing is stored.
func TestWebhookRefusesThroughService(t *testing.T) {
	token := metricsToken(t)
	const reviews = "controller_runtime_webhook_requests_total"
	before := seriesSum(operatorMetrics(t, token), reviews)
	out, err := runKubectl(t, `apiVersion: scheduling.schedops.io/v1alpha1
kind: SchedulerProfile
metadata: {name: node-invalid}
spec:
  plugins:
    multiPoint:
      enabled: [{name: NoSuchPlugin}]
`, "apply", "-f", "-")
	const fieldError = `spec.plugins.multiPoint.enabled[0].name: Not found: "NoSuchPlugin"`
	if err == nil || !strings.Contains(out, `The SchedulerProfile "node-invalid" is invalid: `) || !strings.Contains(out, fieldError) {
		t.Fatalf("kubectl apply of an unknown plugin: %v\n%s\nwant refused with %s", err, out, fieldError)
	}
	t.Logf("kubectl apply was refused: %s", strings.TrimSpace(out))
	if after := seriesSum(operatorMetrics(t, token), reviews); after <= before {
		t.Errorf("The operator's %s went from %v to %v: the refusal did not come from its webhook", reviews, before, after)
	}
	err = k8s.Get(t.Context(), types.NamespacedName{Name: "node-invalid"}, &schedulingv1alpha1.SchedulerProfile{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("The refused profile: %v, want not found", err)
	}
}

// TestNamespaceAssignmentThroughPolicy: a pod that names no scheduler, created in a namespace
// labelled with the batch-pool sample's scheduler name, gets that name from the admission policy
// that the operator of make deploy keeps in the apiserver; the batch-pool scheduler binds it in
// its pool (kwok-0, kwok-1). Runs after TestSamples, which applies the samples.
func TestNamespaceAssignmentThroughPolicy(t *testing.T) {
	waitAvailable(t, "batch-pool", 3*time.Minute)
	pod := assignsThroughPolicy(t, "node-assigned", "batch-pool")
	if pod.Spec.NodeName != "kwok-0" && pod.Spec.NodeName != "kwok-1" {
		t.Errorf("The assigned pod landed on %s, outside pool batch (kwok-0, kwok-1)", pod.Spec.NodeName)
	}
}

// assignsThroughPolicy creates a namespace labelled with schedulerName, deleted when the test
// ends, and in it a pod that names no scheduler; the operator's MutatingAdmissionPolicy must
// assign it to schedulerName, whose scheduler binds it onto a kwok node. It returns the bound pod.
func assignsThroughPolicy(t *testing.T, namespace, schedulerName string) *corev1.Pod {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace, Labels: map[string]string{schedulingv1alpha1.LabelAssignSchedulerName: schedulerName}}}
	if err := k8s.Create(t.Context(), ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), ns) })
	pod := workloadPod("assigned", "assigned", "")
	pod.Namespace = ns.Name
	// The apiserver sees a new namespace, and the operator's served names, a moment after they
	// are written: a pod created before is left as it is, so dry-run creates are tried until one
	// is assigned.
	testutil.Eventually(t, time.Minute, "the policy to assign a dry-run pod of "+ns.Name, func(ctx context.Context) error {
		probe := pod.DeepCopy()
		if err := k8s.Create(ctx, probe, client.DryRunAll); err != nil {
			return err
		}
		if probe.Spec.SchedulerName != schedulerName {
			return fmt.Errorf("scheduler name %q, annotation %q", probe.Spec.SchedulerName, probe.Annotations[schedulingv1alpha1.AnnotationAssignment])
		}
		return nil
	})
	if err := k8s.Create(t.Context(), pod); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), pod, client.GracePeriodSeconds(0)) })
	testutil.Eventually(t, time.Minute, "pod "+pod.Name+" to be bound", func(ctx context.Context) error {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
			return err
		}
		if pod.Spec.NodeName == "" {
			return fmt.Errorf("not bound; scheduler name %q", pod.Spec.SchedulerName)
		}
		return nil
	})
	t.Logf("pod %s/%s: scheduler %s, node %s, %s", pod.Namespace, pod.Name, pod.Spec.SchedulerName, pod.Spec.NodeName, pod.Annotations[schedulingv1alpha1.AnnotationAssignment])
	if pod.Spec.SchedulerName != schedulerName || pod.Annotations[schedulingv1alpha1.AnnotationAssignment] != "assigned" {
		t.Errorf("pod %s has scheduler name %q and annotation %q, want %s, assigned", pod.Name, pod.Spec.SchedulerName, pod.Annotations[schedulingv1alpha1.AnnotationAssignment], schedulerName)
	}
	if !strings.HasPrefix(pod.Spec.NodeName, "kwok-") {
		t.Errorf("The assigned pod landed on %s, not a kwok node", pod.Spec.NodeName)
	}
	return pod
}
