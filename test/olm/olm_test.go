package olm

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
)

const (
	// sampleProfile is the sample the installed operator runs: its pluginConfig sets
	// NodeResourcesFit's scoring strategy MostAllocated.
	sampleProfile     = "config/samples/scheduling_v1alpha1_schedulerprofile_binpack.yaml"
	sampleProfileName = "binpack"
	// profileTimeout bounds the wait for a profile's scheduler Deployment to be available on kwok.
	profileTimeout = time.Minute
	// olmOwnerLabel is the label by which OLM marks the cluster-scoped objects it made for a CSV
	// (webhook configurations, ClusterRoles and their bindings).
	olmOwnerLabel = "olm.owner"
	// profileWebhookPath is the path of the SchedulerProfile webhook (the CSV's webhookdefinition).
	profileWebhookPath = "/validate-scheduling-schedops-io-v1alpha1-schedulerprofile"
	// metricsServiceName is the bundle's Service of the operator's metrics.
	metricsServiceName = "scheduler-profile-operator-controller-manager-metrics-service"
)

// bundleClusterRoles are the bundle's own ClusterRoles (not the CSV's clusterPermissions), by name.
var bundleClusterRoles = []string{"scheduler-profile-operator-metrics-reader", "scheduler-profile-operator-schedulerprofile-editor"}

// TestOLM installs the operator from the catalog as a user does, on a cluster without the
// Prometheus Operator's CRDs (most clusters), runs a profile under it, has a labelled namespace's
// pod assigned and OLM's webhook configuration refuse an invalid profile, then adds those CRDs and
// sees the operator apply its monitoring objects, and uninstalls it. The steps run in order: each
// needs the one before.
func TestOLM(t *testing.T) {
	const ns = "scheduling-olm"
	csvName := install(t, ns)
	if t.Failed() {
		return
	}
	op := startOperatorPod(t, ns)
	t.Run("SampleProfileRuns", func(t *testing.T) { testSampleProfileRuns(t, ns, op) })
	t.Run("NamespaceAssignment", testNamespaceAssignment)
	t.Run("WebhookRefusesInvalidProfile", func(t *testing.T) {
		if !op.webhook {
			t.Skipf("the operator serves no webhook here: port %d of localhost cannot be bound", webhookPort)
		}
		testWebhookRefuses(t, ns, op)
	})
	t.Run("MonitoringObjects", func(t *testing.T) { op = testMonitoringObjects(t, ns, op) })
	t.Run("Uninstall", func(t *testing.T) { testUninstall(t, ns, csvName, op) })
	t.Run("RemoveWhatStays", func(t *testing.T) { testRemoveWhatStays(t, ns, csvName) })
}

// testRemoveWhatStays removes what the uninstall leaves, as uninstall.md's OLM section says: the
// bundle's ClusterRoles, the monitoring objects the operator applied, the admission policies and
// the CRDs; with the CRDs go the profiles, and with them, by their owner references, their
// scheduler Deployments. Nothing of the operator is left after it (TestOLMUpgrade starts there).
func testRemoveWhatStays(t *testing.T, ns, csvName string) {
	const policies = "mutatingadmissionpolicies,mutatingadmissionpolicybindings,validatingadmissionpolicies,validatingadmissionpolicybindings"
	for _, args := range [][]string{
		{"delete", "clusterrole", "-l", olmOwnerLabel + "=" + csvName},
		{"-n", ns, "delete", "servicemonitors,prometheusrules", "-l", "app.kubernetes.io/part-of=scheduler-profile-operator"},
		{"delete", policies, "-l", "app.kubernetes.io/component=assignment"},
		{"delete", "crd", "schedulerprofiles.scheduling.schedops.io", "schedulers.scheduling.schedops.io"},
	} {
		if out, err := kubectl(args...); err != nil {
			t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	testutil.Eventually(t, time.Minute, "nothing of the operator left", func(ctx context.Context) error {
		var left []string
		for _, what := range []struct {
			list client.ObjectList
			opts []client.ListOption
		}{
			{&appsv1.DeploymentList{}, []client.ListOption{client.InNamespace(ns)}},
			{&corev1.ConfigMapList{}, []client.ListOption{client.InNamespace(ns), client.HasLabels{schedulingv1alpha1.LabelProfile}}},
			{&rbacv1.ClusterRoleList{}, []client.ListOption{client.MatchingLabels{olmOwnerLabel: csvName}}},
			{&rbacv1.ClusterRoleBindingList{}, []client.ListOption{client.MatchingLabels{"app.kubernetes.io/managed-by": schedulingv1alpha1.FieldManager}}},
			{&admissionregistrationv1.MutatingAdmissionPolicyList{}, []client.ListOption{client.MatchingLabels{"app.kubernetes.io/managed-by": schedulingv1alpha1.FieldManager}}},
			{&apiextensionsv1.CustomResourceDefinitionList{}, []client.ListOption{client.MatchingFields{"metadata.name": "schedulerprofiles.scheduling.schedops.io"}}},
		} {
			if err := k8s.List(ctx, what.list, what.opts...); err != nil {
				return err
			}
			left = append(left, itemNames(what.list)...)
		}
		for _, kind := range []string{"ServiceMonitor", "PrometheusRule"} {
			if n, err := countMonitoring(ctx, ns, kind); err != nil || n > 0 {
				left = append(left, fmt.Sprintf("%d %ss (%v)", n, kind, err))
			}
		}
		if len(left) > 0 {
			return fmt.Errorf("left: %v", left)
		}
		return nil
	})
}

// countMonitoring counts the objects of the Prometheus Operator's kind in ns.
func countMonitoring(ctx context.Context, ns, kind string) (int, error) {
	list := &unstructured.UnstructuredList{}
	list.SetGroupVersionKind(schema.GroupVersionKind{Group: "monitoring.coreos.com", Version: "v1", Kind: kind + "List"})
	if err := k8s.List(ctx, list, client.InNamespace(ns)); err != nil {
		return 0, err
	}
	return len(list.Items), nil
}

// testMonitoringObjects: the Prometheus Operator's CRDs installed after the operator, the
// operator applies its two ServiceMonitors and its PrometheusRule into its namespace
// (--monitoring-objects, which the CSV sets): at its next start here, as it would within a minute
// on its own. It returns the operator as it runs after that start.
func testMonitoringObjects(t *testing.T, ns string, op *operatorPod) *operatorPod {
	installMonitoringCRDs(t)
	op.stop()
	op = startOperatorPod(t, ns)
	testutil.Eventually(t, time.Minute, "the operator's ServiceMonitors and PrometheusRule in "+ns, func(ctx context.Context) error {
		for kind, want := range map[string]int{"ServiceMonitor": 2, "PrometheusRule": 1} {
			n, err := countMonitoring(ctx, ns, kind)
			if err != nil {
				return err
			}
			if n != want {
				return fmt.Errorf("%d %ss, want %d; the operator logs:\n%s", n, kind, want, op.logTail(10))
			}
		}
		return nil
	})
	return op
}

// install subscribes in ns and waits for OLM's steps: an InstallPlan that completes, a CSV that
// succeeds (OLM made the Deployment, which kwok runs), the webhook configurations OLM made for
// the CSV's webhookdefinitions. It returns the CSV's name.
func install(t *testing.T, ns string) string {
	t.Helper()
	start := time.Now()
	subscribe(t, ns, "")
	plan := waitInstallPlan(t, ns, operatorsv1alpha1.InstallPlanPhaseComplete, installTimeout)
	t.Logf("InstallPlan %s Complete after %s", plan.Name, time.Since(start).Round(time.Second))
	if len(plan.Spec.ClusterServiceVersionNames) != 1 {
		t.Fatalf("InstallPlan %s installs CSVs %v, want one", plan.Name, plan.Spec.ClusterServiceVersionNames)
	}
	name := plan.Spec.ClusterServiceVersionNames[0]
	waitCSV(t, ns, name, operatorsv1alpha1.CSVPhaseSucceeded, installTimeout)
	t.Logf("CSV %s Succeeded after %s", name, time.Since(start).Round(time.Second))

	ctx := context.Background()
	vwcs := &admissionregistrationv1.ValidatingWebhookConfigurationList{}
	if err := k8s.List(ctx, vwcs, client.MatchingLabels{olmOwnerLabel: name}); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, v := range vwcs.Items {
		names = append(names, v.Name)
		for _, w := range v.Webhooks {
			if s := w.ClientConfig.Service; s == nil || s.Namespace != ns || len(w.ClientConfig.CABundle) == 0 {
				t.Errorf("OLM's webhook configuration %s calls %+v with a CA of %d bytes, want the Service of namespace %s and OLM's CA", v.Name, s, len(w.ClientConfig.CABundle), ns)
			}
		}
	}
	if len(names) != 2 {
		t.Errorf("OLM made validating webhook configurations %v for CSV %s, want 2 (SchedulerProfile, Scheduler)\nOLM says:\n%s", names, name, olmSays(ctx, ns))
	}
	t.Logf("OLM's webhook configurations: %v", names)

	// The cluster has no monitoring.coreos.com API, and the bundle no object of it: the
	// install does not need the Prometheus Operator.
	if _, err := countMonitoring(ctx, ns, "ServiceMonitor"); err == nil {
		t.Errorf("The cluster serves ServiceMonitors before the test installs their CRD")
	}
	return name
}

// testSampleProfileRuns: the operator that OLM installed runs the sample profile: it becomes
// Available with its scheduler's Deployment, in OLM's namespace, configured with the profile's
// plugin configuration.
func testSampleProfileRuns(t *testing.T, ns string, op *operatorPod) {
	if out, err := kubectl("apply", "--server-side", "-f", filepath.Join(paths.Root, sampleProfile)); err != nil {
		t.Fatalf("kubectl apply -f %s: %v\n%s", sampleProfile, err, out)
	}
	testutil.Eventually(t, profileTimeout, "the sample profile to be Available", func(ctx context.Context) error {
		p := &schedulingv1alpha1.SchedulerProfile{}
		if err := k8s.Get(ctx, client.ObjectKey{Name: sampleProfileName}, p); err != nil {
			return err
		}
		if !hasCondition(p.Status.Conditions, schedulingv1alpha1.ConditionAvailable, "True") {
			return fmt.Errorf("profile %s: conditions %+v", p.Name, p.Status.Conditions)
		}
		return nil
	})
	ctx := context.Background()
	deps := &appsv1.DeploymentList{}
	if err := k8s.List(ctx, deps, client.InNamespace(ns), client.MatchingLabels{schedulingv1alpha1.LabelProfile: sampleProfileName}); err != nil {
		t.Fatal(err)
	}
	if len(deps.Items) != 1 {
		t.Fatalf("The sample profile has %d scheduler Deployments in %s, want 1", len(deps.Items), ns)
	}
	cms := &corev1.ConfigMapList{}
	if err := k8s.List(ctx, cms, client.InNamespace(ns), client.MatchingLabels{schedulingv1alpha1.LabelProfile: sampleProfileName}); err != nil {
		t.Fatal(err)
	}
	var configured bool
	for _, cm := range cms.Items {
		for _, v := range cm.Data {
			configured = configured || strings.Contains(v, "MostAllocated")
		}
	}
	if !configured {
		t.Errorf("No ConfigMap of the sample profile in %s carries its MostAllocated scoring (%d ConfigMaps)", ns, len(cms.Items))
	}
	// The RBAC OLM made of the CSV's permissions lets the operator do what it does.
	if lines := op.logLines("forbidden"); len(lines) > 0 {
		t.Errorf("The operator, as OLM's ServiceAccount, was forbidden %d requests:\n%s", len(lines), strings.Join(lines, "\n"))
	}
}

// testWebhookRefuses: kubectl apply of an invalid profile is refused by the operator, called
// testNamespaceAssignment: under OLM, which installs no webhook on the pod path, a namespace
// labelled with the sample's scheduler name gets its new pods assigned to it by the admission
// policy that the operator keeps itself, in the apiserver.
func testNamespaceAssignment(t *testing.T) {
	ctx := context.Background()
	p := &schedulingv1alpha1.SchedulerProfile{}
	testutil.Eventually(t, profileTimeout, "the sample profile's served scheduler name", func(ctx context.Context) error {
		if err := k8s.Get(ctx, client.ObjectKey{Name: sampleProfileName}, p); err != nil {
			return err
		}
		if p.Status.ServedSchedulerName == "" {
			return fmt.Errorf("profile %s serves no name yet: conditions %+v", p.Name, p.Status.Conditions)
		}
		return nil
	})
	name := p.Status.ServedSchedulerName
	const assigned = "olm-assigned"
	labelled := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: assigned, Labels: map[string]string{schedulingv1alpha1.LabelAssignSchedulerName: name}}}
	if err := k8s.Create(ctx, labelled); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), labelled) })
	// The apiserver sees a new namespace, and the policy a new served name, a moment after they
	// are written: a dry-run pod until then.
	testutil.Eventually(t, time.Minute, "the operator's policy to assign the pods of "+assigned+" to "+name, func(ctx context.Context) error {
		pod := testutil.MakePod("probe", assigned).Obj()
		if err := k8s.Create(ctx, pod, client.DryRunAll); err != nil {
			return err
		}
		if pod.Spec.SchedulerName != name || pod.Annotations[schedulingv1alpha1.AnnotationAssignment] != "assigned" {
			return fmt.Errorf("scheduler %q, annotation %q", pod.Spec.SchedulerName, pod.Annotations[schedulingv1alpha1.AnnotationAssignment])
		}
		return nil
	})
	pod := testutil.MakePod("assigned", assigned).Obj()
	if err := k8s.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	if pod.Spec.SchedulerName != name {
		t.Errorf("A pod of namespace %s, labelled %s=%s, has schedulerName %q (annotation %q), want %q",
			assigned, schedulingv1alpha1.LabelAssignSchedulerName, name, pod.Spec.SchedulerName, pod.Annotations[schedulingv1alpha1.AnnotationAssignment], name)
	}
}

// through the webhook configuration OLM made, with OLM's certificate.
func testWebhookRefuses(t *testing.T, ns string, op *operatorPod) {
	const broken = `apiVersion: scheduling.schedops.io/v1alpha1
kind: SchedulerProfile
metadata:
  name: olm-broken
spec:
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: Most
`
	const want = `spec.pluginConfig[0].args.scoringStrategy.type: Unsupported value: "Most"`
	ctx := context.Background()
	before, err := op.webhookRequests(ctx, profileWebhookPath)
	if err != nil {
		t.Fatalf("Reading the operator's metrics: %v", err)
	}
	out, err := kubectlStdin(broken, "apply", "--server-side", "-f", "-")
	if err == nil || !strings.Contains(out, want) {
		t.Errorf("kubectl apply of an invalid profile: %v\n%s\nwant it refused with %q\n%s", err, out, want, op.logTail(20))
	}
	// The CRD's schema leaves a plugin's args to the webhook: the refusal is the webhook's
	// when the operator answered a review of it.
	after, err := op.webhookRequests(ctx, profileWebhookPath)
	if err != nil {
		t.Fatalf("Reading the operator's metrics: %v", err)
	}
	if after <= before {
		t.Errorf("The operator's webhook %s answered %v reviews before kubectl apply and %v after: the apiserver did not call it through OLM's configuration", profileWebhookPath, before, after)
	}
	t.Logf("Refused through OLM's webhook configuration (reviews of %s: %v, then %v): %s", profileWebhookPath, before, after, strings.TrimSpace(out))
}

// testUninstall deletes the Subscription and the CSV, as OLM's documentation says to uninstall,
// and checks what goes: what OLM made for the CSV (its Deployment, the webhook Service and
// configurations, the ServiceAccount and the RBAC of the CSV's permissions) and the bundle's
// namespaced objects, which the CSV owns. And what stays: the CRDs, the profiles and their
// schedulers (the profile owns them, and nothing stops them), and the bundle's ClusterRoles,
// which OLM labels with the CSV's name only (olm.owner), so that the CSV's finalizer, which
// deletes by the CSV's name, kind and namespace, leaves them.
func testUninstall(t *testing.T, ns, csvName string, op *operatorPod) {
	ctx := context.Background()
	sub := &operatorsv1alpha1.Subscription{}
	sub.Namespace, sub.Name = ns, subscriptionName
	csv := &operatorsv1alpha1.ClusterServiceVersion{}
	csv.Namespace, csv.Name = ns, csvName
	for _, obj := range []client.Object{sub, csv} {
		if err := k8s.Delete(ctx, obj); err != nil {
			t.Fatalf("Deleting %T %s: %v", obj, obj.GetName(), err)
		}
	}
	gone := map[string]client.Object{
		"Deployment " + deploymentName:           &appsv1.Deployment{},
		"Service " + deploymentName + "-service": &corev1.Service{},
		"Service " + metricsServiceName:          &corev1.Service{},
		"ServiceAccount " + deploymentName:       &corev1.ServiceAccount{},
	}
	ownedByCSV := client.MatchingLabels{olmOwnerLabel: csvName, olmOwnerLabel + ".kind": "ClusterServiceVersion", olmOwnerLabel + ".namespace": ns}
	waitOLM(t, ns, time.Minute, "OLM's objects of the CSV to be gone", func(ctx context.Context) error {
		for what, obj := range gone {
			name := what[strings.Index(what, " ")+1:]
			if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, obj); !apierrors.IsNotFound(err) {
				return fmt.Errorf("%s is still there (%v)", what, err)
			}
		}
		for _, list := range []client.ObjectList{&admissionregistrationv1.ValidatingWebhookConfigurationList{}, &rbacv1.ClusterRoleList{}, &rbacv1.ClusterRoleBindingList{}} {
			if err := k8s.List(ctx, list, ownedByCSV); err != nil {
				return err
			}
			if names := itemNames(list); len(names) > 0 {
				return fmt.Errorf("%T of CSV %s left: %v", list, csvName, names)
			}
		}
		return nil
	})
	op.stop()

	// What stays: the CRDs, the profile and its scheduler, the bundle's ClusterRoles.
	for _, name := range []string{"schedulerprofiles.scheduling.schedops.io", "schedulers.scheduling.schedops.io"} {
		if err := k8s.Get(ctx, client.ObjectKey{Name: name}, &apiextensionsv1.CustomResourceDefinition{}); err != nil {
			t.Errorf("CRD %s after the uninstall: %v", name, err)
		}
	}
	if err := k8s.Get(ctx, client.ObjectKey{Name: sampleProfileName}, &schedulingv1alpha1.SchedulerProfile{}); err != nil {
		t.Errorf("The sample profile after the uninstall: %v", err)
	}
	deps := &appsv1.DeploymentList{}
	if err := k8s.List(ctx, deps, client.InNamespace(ns), client.MatchingLabels{schedulingv1alpha1.LabelProfile: sampleProfileName}); err != nil {
		t.Fatal(err)
	}
	if len(deps.Items) != 1 {
		t.Errorf("The sample profile has %d scheduler Deployments after the uninstall, want 1 (its owner, the profile, stays)", len(deps.Items))
	}
	left := &rbacv1.ClusterRoleList{}
	if err := k8s.List(ctx, left, client.MatchingLabels{olmOwnerLabel: csvName}); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, cr := range left.Items {
		names = append(names, cr.Name)
	}
	if want := bundleClusterRoles; !slices.Equal(names, want) {
		t.Errorf("ClusterRoles labelled %s=%s after the uninstall: %v, want the bundle's %v", olmOwnerLabel, csvName, names, want)
	}
}

// itemNames are the names of the items of a list.
func itemNames(list client.ObjectList) []string {
	var names []string
	_ = meta.EachListItem(list, func(obj runtime.Object) error {
		if o, ok := obj.(client.Object); ok {
			var managers []string
			for _, m := range o.GetManagedFields() {
				managers = append(managers, fmt.Sprintf("%s %s at %s", m.Manager, m.Operation, m.Time.Format(time.TimeOnly)))
			}
			names = append(names, fmt.Sprintf("%s (created %s, labels %v, written by %v)", o.GetName(), o.GetCreationTimestamp().Format(time.TimeOnly), o.GetLabels(), managers))
		}
		return nil
	})
	return names
}

// kubectl runs bin/k8s/kubectl as the cluster's admin.
func kubectl(args ...string) (string, error) {
	return kubectlStdin("", args...)
}

func kubectlStdin(stdin string, args ...string) (string, error) {
	cmd := exec.Command(filepath.Join(paths.BinDir, "kubectl"), append([]string{"--kubeconfig", cluster.Kubeconfig()}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	return string(out), err
}
