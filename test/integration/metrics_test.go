package integration

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/internal/operatorenv"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
	"github.com/schedops/scheduler-profile-operator/test/framework"
)

// Roles of config/rbac for the metrics endpoint.
const (
	metricsAuthRole   = "../../config/rbac/metrics_auth_role.yaml"
	metricsReaderRole = "../../config/rbac/metrics_reader_role.yaml"
)

// TestOperatorMetricsEndpointAuthorizes runs the operator as main does (HTTPS, controller-runtime's
// authentication and authorization filters) with the permissions of config/rbac only: the
// generated roles and metrics_auth_role. Its endpoint must refuse a request without a token (401)
// or with a token the apiserver did not issue, refuse a ServiceAccount not bound to
// metrics_reader_role (403), and serve one that is (200, with controller-runtime's metrics).
func TestOperatorMetricsEndpointAuthorizes(t *testing.T) {
	k := suiteCluster()
	k.ensureOperatorNamespace(t)
	operator := uniqueName("metrics-operator")
	k.bindGeneratedRoles(t, operatorNamespace, operator)
	k.bindClusterRole(t, metricsAuthRole, operator)
	reader, stranger := uniqueName("metrics-reader"), uniqueName("metrics-stranger")
	k.bindClusterRole(t, metricsReaderRole, reader)
	readerToken, strangerToken := k.serviceAccountToken(t, reader), k.serviceAccountToken(t, stranger)

	opts := operatorOptions
	opts.MetricsBindAddress, opts.MetricsSecure = fmt.Sprintf("127.0.0.1:%d", testutil.FreePort(t)), true
	operatorCfg := framework.AsServiceAccount(k.cfg, operatorNamespace, operator)
	testutil.Eventually(t, rbacTimeout, "the bindings to reach the RBAC authorizer", func(ctx context.Context) error {
		c, err := client.New(operatorCfg, client.Options{Scheme: operatorenv.NewScheme()})
		if err != nil {
			return err
		}
		if err := c.List(ctx, &schedulingv1alpha1.SchedulerProfileList{}); err != nil {
			return err
		}
		review := &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: readerToken}}
		if err := c.Create(ctx, review); err != nil {
			return err
		}
		// The endpoint caches a denial for a while: the reader's binding must be in force
		// before its first scrape.
		access := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User:                  "system:serviceaccount:" + operatorNamespace + ":" + reader,
			NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/metrics", Verb: "get"},
		}}
		if err := k.admin.Create(ctx, access); err != nil {
			return err
		}
		if !access.Status.Allowed {
			return fmt.Errorf("%s may not get /metrics yet", reader)
		}
		return nil
	})
	op := framework.StartOperator(t, operatorCfg, opts)

	url := fmt.Sprintf("https://%s/metrics", opts.MetricsBindAddress)
	// The server is up once it answers at all.
	testutil.Eventually(t, reconcileTimeout, "the metrics endpoint to answer", func(ctx context.Context) error {
		_, _, err := scrape(ctx, url, "")
		return err
	})
	cases := []struct {
		name  string
		token string
		// wantStatus is the answer; 0 is any refusal (4xx or 5xx).
		wantStatus int
	}{
		{"no token", "", http.StatusUnauthorized},
		// The apiserver's TokenReview of a token it cannot parse carries an error, which
		// controller-runtime's filter answers with 500 rather than 401: refused all the same.
		{"a token the apiserver did not issue", "not-a-token", 0},
		{"a ServiceAccount without the metrics-reader role", strangerToken, http.StatusForbidden},
		{"a ServiceAccount bound to the metrics-reader role", readerToken, http.StatusOK},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			op.LogOnFailure(t)
			// An authorization just granted may take a moment to reach the RBAC authorizer.
			var status int
			var body string
			testutil.Eventually(t, rbacTimeout, fmt.Sprintf("HTTP %d (0: refused)", tc.wantStatus), func(ctx context.Context) error {
				var err error
				if status, body, err = scrape(ctx, url, tc.token); err != nil {
					return err
				}
				if status != tc.wantStatus && (tc.wantStatus != 0 || status < http.StatusBadRequest) {
					return fmt.Errorf("HTTP %d: %.200s", status, body)
				}
				return nil
			})
			if tc.wantStatus == http.StatusOK && !strings.Contains(body, "\ncontroller_runtime_reconcile_total{") {
				t.Errorf("The metrics have no controller_runtime_reconcile_total:\n%.2000s", body)
			}
			if tc.wantStatus != http.StatusOK && strings.Contains(body, "controller_runtime_") {
				t.Errorf("HTTP %d served metrics:\n%.500s", status, body)
			}
		})
	}
}

// scrape gets url with the bearer token (none if empty), trusting any certificate: the operator's
// is self-signed.
func scrape(ctx context.Context, url, token string) (int, string, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, "", err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // the endpoint's certificate is self-signed.
	resp, err := c.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(data), err
}

// bindClusterRole creates the ClusterRole of file (config/rbac), under a name of its own, and
// binds it to the ServiceAccount name of the operator's namespace, until the test ends.
func (k *cluster) bindClusterRole(t *testing.T, file, serviceAccount string) {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	obj, _, err := serializer.NewCodecFactory(operatorenv.NewScheme()).UniversalDeserializer().Decode(data, nil, nil)
	if err != nil {
		t.Fatalf("Decoding %s: %v", file, err)
	}
	role, ok := obj.(*rbacv1.ClusterRole)
	if !ok {
		t.Fatalf("%s holds a %T, want a ClusterRole", file, obj)
	}
	role.Name = uniqueName(role.Name)
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: serviceAccount, Namespace: operatorNamespace}},
	}
	for _, obj := range []client.Object{role, binding} {
		if err := k.admin.Create(t.Context(), obj); err != nil {
			t.Fatalf("Creating %T %s: %v", obj, obj.GetName(), err)
		}
		t.Cleanup(func() { _ = k.admin.Delete(context.Background(), obj) })
	}
}

// serviceAccountToken creates the ServiceAccount name in the operator's namespace and returns a
// token of it that the apiserver issued, as a pod of it would mount.
func (k *cluster) serviceAccountToken(t *testing.T, name string) string {
	t.Helper()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: operatorNamespace, Name: name}}
	if err := k.admin.Create(t.Context(), sa); err != nil {
		t.Fatalf("Creating ServiceAccount %s: %v", name, err)
	}
	t.Cleanup(func() { _ = k.admin.Delete(context.Background(), sa) })
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}
	if err := k.admin.SubResource("token").Create(t.Context(), sa, tr); err != nil {
		t.Fatalf("Requesting a token of ServiceAccount %s: %v", name, err)
	}
	return tr.Status.Token
}

// schedulerMonitor is the ServiceMonitor that scrapes every managed scheduler.
const schedulerMonitor = "../../config/prometheus/scheduler_monitor.yaml"

// checkMetricsService checks the metrics Service of the scheduler Deployment d: it selects the
// scheduler pods, and only them, on the secure port of their container, without a virtual IP;
// and the ServiceMonitor of config/prometheus selects it and scrapes a port it has.
func checkMetricsService(t *testing.T, svc *corev1.Service, d *appsv1.Deployment) {
	t.Helper()
	if diff := cmp.Diff(d.Spec.Selector.MatchLabels, svc.Spec.Selector); diff != "" {
		t.Errorf("The selector of Service %s is not that of Deployment %s (-Deployment +Service):\n%s", svc.Name, d.Name, diff)
	}
	if !labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(d.Spec.Template.Labels)) {
		t.Errorf("Service %s selects %v, not the scheduler pods %v", svc.Name, svc.Spec.Selector, d.Spec.Template.Labels)
	}
	if svc.Spec.ClusterIP != corev1.ClusterIPNone {
		t.Errorf("Service %s has clusterIP %q, want a headless Service", svc.Name, svc.Spec.ClusterIP)
	}
	container := d.Spec.Template.Spec.Containers[0]
	if len(svc.Spec.Ports) != 1 {
		t.Fatalf("Service %s has ports %+v, want one", svc.Name, svc.Spec.Ports)
	}
	port := svc.Spec.Ports[0]
	if port.Name != "https" || port.Port != 10259 || !slices.ContainsFunc(container.Ports, func(p corev1.ContainerPort) bool {
		return p.Name == port.TargetPort.StrVal && p.ContainerPort == 10259
	}) {
		t.Errorf("Service %s port %+v is not kube-scheduler's secure port 10259, named https, of the container's ports %+v", svc.Name, port, container.Ports)
	}
	if !slices.Contains(container.Args, "--secure-port=10259") {
		t.Errorf("The scheduler does not serve on 10259: args %q", container.Args)
	}

	data, err := os.ReadFile(schedulerMonitor)
	if err != nil {
		t.Fatal(err)
	}
	var monitor struct {
		Spec struct {
			Selector  metav1.LabelSelector `json:"selector"`
			Endpoints []struct {
				Port   string `json:"port"`
				Scheme string `json:"scheme"`
			} `json:"endpoints"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &monitor); err != nil {
		t.Fatalf("Decoding %s: %v", schedulerMonitor, err)
	}
	selector, err := metav1.LabelSelectorAsSelector(&monitor.Spec.Selector)
	if err != nil || selector.Empty() || !selector.Matches(labels.Set(svc.Labels)) {
		t.Errorf("The ServiceMonitor of %s (selector %v, %v) does not select Service %s %v", schedulerMonitor, selector, err, svc.Name, svc.Labels)
	}
	if len(monitor.Spec.Endpoints) == 0 {
		t.Errorf("The ServiceMonitor of %s has no endpoints", schedulerMonitor)
	}
	for _, e := range monitor.Spec.Endpoints {
		if e.Port != port.Name || e.Scheme != "https" {
			t.Errorf("The ServiceMonitor scrapes port %q with %q, want %q with https", e.Port, e.Scheme, port.Name)
		}
	}
}
