package bundle

import (
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/google/go-cmp/cmp"

	"github.com/schedops/scheduler-profile-operator/controllers/monitoring"
)

// serviceMonitor is the part of a monitoring.coreos.com/v1 ServiceMonitor that finds its targets.
type serviceMonitor struct {
	Spec struct {
		Selector  metav1.LabelSelector `json:"selector"`
		Endpoints []struct {
			Port   string `json:"port"`
			Scheme string `json:"scheme"`
			Path   string `json:"path"`
		} `json:"endpoints"`
	} `json:"spec"`
}

// TestOperatorMetricsAreReachable follows a scrape of the operator through the kustomize output:
// config/prometheus's ServiceMonitor selects config/default's metrics Service and scrapes one of
// its ports over HTTPS; the Service selects the operator's pods and targets the container port
// the operator serves its metrics on, securely.
func TestOperatorMetricsAreReachable(t *testing.T) {
	objs := kustomizeBuild(t, "config/default", "registry.example/scheduler-profile-operator:v0.0.1")
	svc := &corev1.Service{}
	fromUnstructured(t, findNamed(t, objs, "Service", "scheduler-profile-operator-controller-manager-metrics-service"), svc)
	d := &appsv1.Deployment{}
	fromUnstructured(t, findObject(t, objs, "Deployment"), d)
	c := d.Spec.Template.Spec.Containers[0]

	if len(svc.Spec.Selector) == 0 || !labels.SelectorFromSet(svc.Spec.Selector).Matches(labels.Set(d.Spec.Template.Labels)) {
		t.Errorf("Service %s selects %v, not the operator's pods %v", svc.Name, svc.Spec.Selector, d.Spec.Template.Labels)
	}
	if len(svc.Spec.Ports) != 1 {
		t.Fatalf("Service %s has ports %+v, want one", svc.Name, svc.Spec.Ports)
	}
	port := svc.Spec.Ports[0]
	i := slices.IndexFunc(c.Ports, func(p corev1.ContainerPort) bool { return p.Name == port.TargetPort.StrVal })
	if i < 0 {
		t.Fatalf("Service %s targets port %v, which the container does not declare (%+v)", svc.Name, port.TargetPort, c.Ports)
	}
	if !slices.Contains(c.Args, "--metrics-bind-address=:"+strconv.Itoa(int(c.Ports[i].ContainerPort))) || !slices.Contains(c.Args, "--metrics-secure") {
		t.Errorf("The operator's args %q do not serve metrics securely on the container port %d that the Service targets", c.Args, c.Ports[i].ContainerPort)
	}

	var monitors []serviceMonitor
	for _, obj := range kustomizeBuild(t, "config/prometheus", "registry.example/scheduler-profile-operator:v0.0.1") {
		if obj.GetKind() == "PrometheusRule" {
			continue
		}
		if obj.GetKind() != "ServiceMonitor" {
			t.Errorf("config/prometheus holds a %s", obj.GetKind())
			continue
		}
		var m serviceMonitor
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, &m); err != nil {
			t.Fatalf("Decoding ServiceMonitor %s: %v", obj.GetName(), err)
		}
		if strings.HasSuffix(obj.GetName(), "controller-manager-metrics-monitor") {
			monitors = append(monitors, m)
		}
	}
	if len(monitors) != 1 {
		t.Fatalf("config/prometheus has %d ServiceMonitors of the operator, want 1", len(monitors))
	}
	m := monitors[0]
	selector, err := metav1.LabelSelectorAsSelector(&m.Spec.Selector)
	if err != nil || selector.Empty() || !selector.Matches(labels.Set(svc.Labels)) {
		t.Errorf("The operator's ServiceMonitor (selector %v, %v) does not select Service %s %v", selector, err, svc.Name, svc.Labels)
	}
	if len(m.Spec.Endpoints) != 1 || m.Spec.Endpoints[0].Port != port.Name || m.Spec.Endpoints[0].Scheme != "https" || m.Spec.Endpoints[0].Path != "/metrics" {
		t.Errorf("The operator's ServiceMonitor scrapes %+v, want /metrics on port %q over https", m.Spec.Endpoints, port.Name)
	}
}

// TestBundleShipsMonitoring: the bundle holds no monitoring.coreos.com object (OLM fails the
// InstallPlan of a bundle whose objects have no API on the cluster); the operator it runs applies
// config/prometheus itself (monitoring.Manifests, with --monitoring-objects in the CSV's
// Deployment), named as config/default names it once its ../prometheus line is uncommented; and
// config/grafana builds the dashboard's ConfigMap for Grafana's sidecar from the one JSON file.
func TestBundleShipsMonitoring(t *testing.T) {
	const image = "registry.example/scheduler-profile-operator:v0.0.1"
	files, err := filepath.Glob(path(bundleDir + "/manifests/*_monitoring.coreos.com_v1_*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) > 0 {
		t.Errorf("The bundle ships monitoring objects %v; the operator applies them itself", files)
	}
	csv := readCSV(t)
	var args []string
	for _, d := range csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs {
		for _, c := range d.Spec.Template.Spec.Containers {
			args = append(args, c.Args...)
		}
	}
	if !slices.Contains(args, "--monitoring-objects") {
		t.Errorf("The CSV's operator runs with %v, without --monitoring-objects", args)
	}
	applied := map[string]*unstructured.Unstructured{}
	objs, err := monitoring.Manifests("ns")
	if err != nil {
		t.Fatal(err)
	}
	for _, obj := range objs {
		applied[obj.GetKind()+" "+obj.GetName()] = obj
	}
	want := map[string]*unstructured.Unstructured{}
	for _, obj := range kustomizeBuild(t, "config/prometheus", image) {
		// config/default prefixes the names; the operator sets its namespace.
		obj.SetName("scheduler-profile-operator-" + obj.GetName())
		want[obj.GetKind()+" "+obj.GetName()] = obj
	}
	if diff := cmp.Diff(slices.Sorted(maps.Keys(want)), slices.Sorted(maps.Keys(applied))); diff != "" {
		t.Fatalf("Monitoring objects the operator applies (-config/prometheus +operator); run `make bundle`:\n%s", diff)
	}
	for key, obj := range want {
		if diff := cmp.Diff(obj.Object["spec"], applied[key].Object["spec"]); diff != "" {
			t.Errorf("%s differs from config/prometheus; run `make bundle` (-config +operator):\n%s", key, diff)
		}
		if ns := applied[key].GetNamespace(); ns != "ns" {
			t.Errorf("%s is applied in namespace %q, want the operator's", key, ns)
		}
	}
	if rule := want["PrometheusRule scheduler-profile-operator-alerts"]; rule == nil {
		t.Error("config/prometheus has no PrometheusRule alerts")
	}

	cm := &corev1.ConfigMap{}
	fromUnstructured(t, findObject(t, kustomizeBuild(t, "config/grafana", image), "ConfigMap"), cm)
	dashboard := readFile(t, "config/grafana/scheduler-profile-operator.json")
	if cm.Labels["grafana_dashboard"] != "1" || cm.Data["scheduler-profile-operator.json"] != string(dashboard) {
		t.Errorf("config/grafana's ConfigMap %s (labels %v) does not hold the dashboard under the sidecar's label grafana_dashboard: \"1\"", cm.Name, cm.Labels)
	}
}
