package integration

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/controllers"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
	"github.com/schedops/scheduler-profile-operator/test/framework"
)

// exportedMetrics lists the metrics the alerts and the dashboard name, with what exports them;
// hack/tools/promtool checks the queries against it, this file checks it against real scrapes.
const exportedMetrics = "../../config/prometheus/tests/metrics.txt"

// profileWebhookPath is the SchedulerProfile webhook's path, as config/webhook names it.
const profileWebhookPath = "/validate-scheduling-schedops-io-v1alpha1-schedulerprofile"

// readExportedMetrics returns the metric names of exportedMetrics by source.
func readExportedMetrics(t *testing.T) map[string][]string {
	t.Helper()
	data, err := os.ReadFile(exportedMetrics)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]string{}
	for _, line := range strings.Split(string(data), "\n") {
		if line = strings.TrimSpace(line); line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Fields(line)
		if len(fields) != 2 {
			t.Fatalf("%s: %q is not a source and a metric name", exportedMetrics, line)
		}
		out[fields[0]] = append(out[fields[0]], fields[1])
	}
	for _, source := range []string{"operator", "operator-registered", "scheduler"} {
		if len(out[source]) == 0 {
			t.Fatalf("%s lists no metric of %s", exportedMetrics, source)
		}
	}
	return out
}

// seriesNameRE is the metric name of a sample line of the text exposition format.
var seriesNameRE = regexp.MustCompile(`(?m)^([a-zA-Z_:][a-zA-Z0-9_:]*)[{ ]`)

// missingSeries returns the names of want that no sample of the exposition body has.
func missingSeries(body string, want []string) []string {
	have := map[string]bool{}
	for _, m := range seriesNameRE.FindAllStringSubmatch(body, -1) {
		have[m[1]] = true
	}
	return slices.DeleteFunc(slices.Clone(want), func(name string) bool { return have[name] })
}

// TestMonitoringMetricsAreExported holds config/prometheus/tests/metrics.txt, which the alerts
// and the dashboard are checked against, to what the binaries export: it runs the operator with
// its webhook and scrapes it after it reconciled a valid and an invalid profile and reviewed one;
// it runs bin/kube-scheduler with leader election and scrapes it after it scheduled one pod and
// found another unschedulable. Each listed metric must have a series in its scrape, with the label
// values the queries select on; the rollback counter, which has none before a rollback, must be
// registered in the registry the operator serves.
func TestMonitoringMetricsAreExported(t *testing.T) {
	want := readExportedMetrics(t)
	ctx := t.Context()

	t.Run("operator", func(t *testing.T) {
		k := suiteCluster()
		k.ensureOperatorNamespace(t)
		certDir := t.TempDir()
		if _, err := testutil.LocalServingCert(certDir); err != nil {
			t.Fatal(err)
		}
		opts := operatorOptions
		opts.MetricsBindAddress = fmt.Sprintf("127.0.0.1:%d", testutil.FreePort(t))
		opts.Webhook = &controllers.WebhookOptions{Host: "127.0.0.1", Port: testutil.FreePort(t), CertDir: certDir}
		op := framework.StartOperator(t, k.cfg, opts)
		op.LogOnFailure(t)

		valid := testutil.MakeProfile(uniqueName("monitoring")).Obj()
		k.createProfile(t, valid)
		k.waitForRollout(t, valid.Name)
		invalid := testutil.MakeProfile(uniqueName("monitoring-invalid")).PluginConfig("NodeResourcesFit", `{"scoringStrategy":{"type":"Most"}}`).Obj()
		k.createProfile(t, invalid)
		testutil.Eventually(t, reconcileTimeout, "SchedulerProfile "+invalid.Name+" to be ConfigValid=False", func(ctx context.Context) error {
			p, err := k.getProfile(ctx, invalid.Name)
			if err != nil {
				return err
			}
			if !meta.IsStatusConditionFalse(p.Status.Conditions, schedulingv1alpha1.ConditionConfigValid) {
				return fmt.Errorf("conditions %s", formatConditions(p))
			}
			return nil
		})
		webhookURL := fmt.Sprintf("https://127.0.0.1:%d%s", opts.Webhook.Port, profileWebhookPath)
		testutil.Eventually(t, reconcileTimeout, "the webhook to review a profile", func(ctx context.Context) error {
			return reviewProfile(ctx, webhookURL, invalid)
		})

		metricsURL := fmt.Sprintf("http://%s/metrics", opts.MetricsBindAddress)
		var body string
		testutil.Eventually(t, reconcileTimeout, "the operator's metrics to have every listed series", func(ctx context.Context) error {
			status, b, err := scrape(ctx, metricsURL, "")
			if err != nil || status != http.StatusOK {
				return fmt.Errorf("HTTP %d: %v", status, err)
			}
			body = b
			if missing := missingSeries(body, want["operator"]); len(missing) > 0 {
				return fmt.Errorf("no series of %v", missing)
			}
			return nil
		})
		// The label values the alerts and the dashboard select on.
		for _, re := range []string{
			`schedops_schedulerprofile_condition\{condition="ConfigValid",profile="` + invalid.Name + `",status="False"\} 1`,
			`controller_runtime_reconcile_total\{controller="schedulerprofile",result="success"\} `,
			`controller_runtime_reconcile_errors_total\{controller="scheduler"\} `,
			`controller_runtime_webhook_requests_total\{code="200",webhook="` + profileWebhookPath + `"\} `,
			// 1s, the threshold of SchedOpsWebhookSlow, is a bucket boundary.
			`controller_runtime_webhook_latency_seconds_bucket\{webhook="` + profileWebhookPath + `",le="1"\} `,
			`workqueue_depth\{[^}]*name="schedulerprofile"[^}]*\} `,
		} {
			if !regexp.MustCompile(`(?m)^` + re).MatchString(body) {
				t.Errorf("The operator's scrape has no line matching %s", re)
			}
		}
		for _, name := range want["operator-registered"] {
			// Registering a second collector of a name fails when the registry has one.
			probe := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: "probe"})
			if err := ctrlmetrics.Registry.Register(probe); err == nil {
				ctrlmetrics.Registry.Unregister(probe)
				t.Errorf("The operator's registry has no metric %s", name)
			}
		}
		t.Logf("The operator exports %d listed metrics and registers %v", len(want["operator"]), want["operator-registered"])
	})

	t.Run("scheduler", func(t *testing.T) {
		binary := schedulerBinary(t)
		run := utilrand.String(5)
		schedulerName := "monitoring-" + run
		createReadyNode(t, ctx, k8sClient, "monitoring-"+run, nil)
		dir := t.TempDir()
		kubeconfig := writeKubeconfig(t, cfg, dir)
		config := writeFile(t, dir, "config.yaml", fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
leaderElection:
  leaderElect: true
  resourceName: %s
  resourceNamespace: default
clientConnection:
  kubeconfig: %q
profiles:
- schedulerName: %s
`, schedulerName, kubeconfig, schedulerName))
		// /metrics without a token, as /readyz: the test scrapes what a Prometheus would.
		proc := startScheduler(t, binary, config, "--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics")

		placed := createPod(t, ctx, k8sClient, "default", "monitoring-"+run, schedulerName, nil)
		waitForBinding(t, types.NamespacedName{Namespace: placed.Namespace, Name: placed.Name})
		stuck := createPod(t, ctx, k8sClient, "default", "monitoring-"+run+"-stuck", schedulerName, map[string]string{"no-such-label": "x"})
		testutil.Eventually(t, schedulingTimeout, "pod "+stuck.Name+" to be reported unschedulable", func(ctx context.Context) error {
			pod := &corev1.Pod{}
			if err := k8sClient.Get(ctx, types.NamespacedName{Namespace: stuck.Namespace, Name: stuck.Name}, pod); err != nil {
				return err
			}
			if c := testutil.PodScheduled(pod); c == nil || c.Reason != corev1.PodReasonUnschedulable {
				return fmt.Errorf("PodScheduled condition %+v", c)
			}
			return nil
		})

		metricsURL := fmt.Sprintf("https://127.0.0.1:%d/metrics", proc.port)
		var body string
		testutil.Eventually(t, schedulingTimeout, "the scheduler's metrics to have every listed series", func(ctx context.Context) error {
			status, b, err := scrape(ctx, metricsURL, "")
			if err != nil || status != http.StatusOK {
				return fmt.Errorf("HTTP %d: %v", status, err)
			}
			body = b
			if missing := missingSeries(body, want["scheduler"]); len(missing) > 0 {
				return fmt.Errorf("no series of %v", missing)
			}
			return nil
		})
		// The labels the alerts and the dashboard select on: the leader's lease, the queue,
		// kube-scheduler's profile (the schedulerName) and result, the rejecting plugin.
		for _, line := range []string{
			`leader_election_master_status{name="kube-scheduler"} 1`,
			`scheduler_pending_pods{queue="unschedulable"} `,
			`scheduler_schedule_attempts_total{profile="` + schedulerName + `",result="scheduled"} `,
			`scheduler_unschedulable_pods{plugin="NodeAffinity",profile="` + schedulerName + `"} `,
		} {
			if !strings.Contains(body, line) {
				t.Errorf("The scheduler's scrape has no line starting %s", line)
			}
		}
		t.Logf("bin/kube-scheduler exports the %d listed metrics", len(want["scheduler"]))
	})
}

// reviewProfile posts an AdmissionReview of creating p to the webhook at url, as the apiserver
// would, and checks that an answer for it came back.
func reviewProfile(ctx context.Context, url string, p *schedulingv1alpha1.SchedulerProfile) error {
	raw, err := json.Marshal(p)
	if err != nil {
		return err
	}
	review := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{
			UID:       types.UID("review-" + p.Name),
			Kind:      metav1.GroupVersionKind{Group: schedulingv1alpha1.GroupVersion.Group, Version: schedulingv1alpha1.GroupVersion.Version, Kind: "SchedulerProfile"},
			Resource:  metav1.GroupVersionResource{Group: schedulingv1alpha1.GroupVersion.Group, Version: schedulingv1alpha1.GroupVersion.Version, Resource: "schedulerprofiles"},
			Name:      p.Name,
			Operation: admissionv1.Create,
			Object:    runtime.RawExtension{Raw: raw},
		},
	}
	body, err := json.Marshal(review)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	c := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // the test's own self-signed certificate.
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer func() { _ = resp.Body.Close() }()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	var answer admissionv1.AdmissionReview
	if err := json.Unmarshal(data, &answer); err != nil || answer.Response == nil || answer.Response.UID != review.Request.UID {
		return fmt.Errorf("HTTP %d, not an answer to the review (%v): %.300s", resp.StatusCode, err, data)
	}
	return nil
}
