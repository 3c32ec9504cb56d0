package main

import (
	"bytes"
	"encoding/json"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/operator-framework/api/pkg/lib/version"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

var testOptions = options{Version: "1.2.3", Package: "op", Channels: []string{"stable", "fast"}, DefaultChannel: "stable"}

// readInput is testdata/input.yaml, a small stand-in for `kustomize build config/manifests`.
func readInput(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile("testdata/input.yaml")
	if err != nil {
		t.Fatal(err)
	}
	objs, err := decodeObjects(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("decodeObjects: %v", err)
	}
	return objs
}

// find is the object of the input with this kind and namespace.
func find(t *testing.T, objs []*unstructured.Unstructured, kind, namespace string) *unstructured.Unstructured {
	t.Helper()
	for _, obj := range objs {
		if obj.GetKind() == kind && obj.GetNamespace() == namespace {
			return obj
		}
	}
	t.Fatalf("No %s in namespace %q in the input", kind, namespace)
	return nil
}

// findNamed is the object of the input with this kind and name.
func findNamed(t *testing.T, objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	t.Helper()
	for _, obj := range objs {
		if obj.GetKind() == kind && obj.GetName() == name {
			return obj
		}
	}
	t.Fatalf("No %s %q in the input", kind, name)
	return nil
}

func without(objs []*unstructured.Unstructured, kind, namespace string) []*unstructured.Unstructured {
	return slices.DeleteFunc(objs, func(obj *unstructured.Unstructured) bool {
		return obj.GetKind() == kind && obj.GetNamespace() == namespace
	})
}

func mustParse(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	objs, err := decodeObjects(strings.NewReader(doc))
	if err != nil || len(objs) != 1 {
		t.Fatalf("decodeObjects(%q): %d objects, %v", doc, len(objs), err)
	}
	return objs[0]
}

func operatorVersion(t *testing.T, s string) version.OperatorVersion {
	t.Helper()
	var v version.OperatorVersion
	if err := json.Unmarshal([]byte(`"`+s+`"`), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// wantCSV is the ClusterServiceVersion that testdata/input.yaml makes with testOptions.
func wantCSV(t *testing.T) *operatorsv1alpha1.ClusterServiceVersion {
	const image = "registry.example/op:v1.2.3"
	return &operatorsv1alpha1.ClusterServiceVersion{
		TypeMeta: metav1.TypeMeta{APIVersion: operatorsv1alpha1.ClusterServiceVersionAPIVersion, Kind: operatorsv1alpha1.ClusterServiceVersionKind},
		ObjectMeta: metav1.ObjectMeta{
			Name: "op.v1.2.3",
			Annotations: map[string]string{
				"capabilities":   "Basic Install",
				"containerImage": image,
				"alm-examples": `[
  {
    "apiVersion": "example.com/v1",
    "kind": "Widget",
    "metadata": {
      "name": "sample"
    },
    "spec": {
      "size": 3
    }
  }
]`,
			},
		},
		Spec: operatorsv1alpha1.ClusterServiceVersionSpec{
			DisplayName: "Op",
			Version:     operatorVersion(t, "1.2.3"),
			CustomResourceDefinitions: operatorsv1alpha1.CustomResourceDefinitions{Owned: []operatorsv1alpha1.CRDDescription{
				{Name: "widgets.example.com", Version: "v1", Kind: "Widget", DisplayName: "Widget", Description: "A widget."},
			}},
			InstallStrategy: operatorsv1alpha1.NamedInstallStrategy{
				StrategyName: operatorsv1alpha1.InstallStrategyNameDeployment,
				StrategySpec: operatorsv1alpha1.StrategyDetailsDeployment{
					DeploymentSpecs: []operatorsv1alpha1.StrategyDeploymentSpec{{
						Name:  "op-manager",
						Label: map[string]string{"app": "op"},
						Spec:  wantDeploymentSpec(image),
					}},
					// The operator's namespace keeps its Role as permissions; the ClusterRole and
					// the Role of kube-system (which a CSV cannot grant in kube-system) become
					// clusterPermissions.
					Permissions: []operatorsv1alpha1.StrategyDeploymentPermissions{{
						ServiceAccountName: "op-manager",
						Rules:              []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get"}}},
					}},
					ClusterPermissions: []operatorsv1alpha1.StrategyDeploymentPermissions{{
						ServiceAccountName: "op-manager",
						Rules: []rbacv1.PolicyRule{
							{APIGroups: []string{"example.com"}, Resources: []string{"widgets"}, Verbs: []string{"get", "list", "watch"}},
							{APIGroups: []string{rbacv1.GroupName}, Resources: []string{"rolebindings"}, Verbs: []string{"create"}},
						},
					}},
				},
			},
			RelatedImages: []operatorsv1alpha1.RelatedImage{
				{Name: "manager", Image: image},
				{Name: "scheduler", Image: image},
				{Name: "helper", Image: "registry.example/helper:v1"},
			},
		},
	}
}

// wantDeploymentSpec is the spec of the input's Deployment, which the CSV installs as it is.
func wantDeploymentSpec(image string) appsv1.DeploymentSpec {
	labels := map[string]string{"app": "op"}
	return appsv1.DeploymentSpec{
		Replicas: ptr.To[int32](1),
		Selector: &metav1.LabelSelector{MatchLabels: labels},
		Template: corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{
				ServiceAccountName: "op-manager",
				Containers: []corev1.Container{{
					Name:  "manager",
					Image: image,
					Env: []corev1.EnvVar{
						{Name: "RELATED_IMAGE_SCHEDULER", Value: image},
						{Name: "RELATED_IMAGE_HELPER", Value: "registry.example/helper:v1"},
					},
					Ports: []corev1.ContainerPort{{ContainerPort: 8081}},
				}},
			},
		},
	}
}

func TestBuildCSV(t *testing.T) {
	cases := []struct {
		name    string
		mutate  func(t *testing.T, objs []*unstructured.Unstructured) []*unstructured.Unstructured
		options func(o *options)
		want    func(csv *operatorsv1alpha1.ClusterServiceVersion)
	}{
		{
			name: "the test input",
		},
		{
			name:    "a pre-release version",
			options: func(o *options) { o.Version = "1.2.3-rc.1" },
			want: func(csv *operatorsv1alpha1.ClusterServiceVersion) {
				csv.Name = "op.v1.2.3-rc.1"
				csv.Spec.Version = operatorVersion(t, "1.2.3-rc.1")
			},
		},
		{
			name:    "the previous release it replaces",
			options: func(o *options) { o.Replaces = "1.2.2" },
			want:    func(csv *operatorsv1alpha1.ClusterServiceVersion) { csv.Spec.Replaces = "op.v1.2.2" },
		},
		{
			name: "what the base says of the version, install strategy and images is replaced",
			mutate: func(t *testing.T, objs []*unstructured.Unstructured) []*unstructured.Unstructured {
				base := find(t, objs, "ClusterServiceVersion", "placeholder")
				base.Object["spec"].(map[string]any)["version"] = "9.9.9"
				base.Object["spec"].(map[string]any)["relatedImages"] = []any{map[string]any{"name": "old", "image": "old:v0"}}
				base.Object["spec"].(map[string]any)["install"] = map[string]any{"strategy": "deployment"}
				return objs
			},
		},
		{
			name: "samples lose their namespace and status in alm-examples",
			mutate: func(t *testing.T, objs []*unstructured.Unstructured) []*unstructured.Unstructured {
				sample := find(t, objs, "Widget", "")
				sample.SetNamespace("op-system")
				sample.Object["status"] = map[string]any{"ready": true}
				return objs
			},
		},
		{
			name: "an image named twice is related once",
			mutate: func(t *testing.T, objs []*unstructured.Unstructured) []*unstructured.Unstructured {
				container := find(t, objs, "Deployment", "op-system").Object["spec"].(map[string]any)["template"].(map[string]any)["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
				container["env"] = append(container["env"].([]any), map[string]any{"name": "RELATED_IMAGE_MANAGER", "value": "registry.example/op:v1.2.3"})
				return objs
			},
			want: func(csv *operatorsv1alpha1.ClusterServiceVersion) {
				c := &csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs[0].Spec.Template.Spec.Containers[0]
				c.Env = append(c.Env, corev1.EnvVar{Name: "RELATED_IMAGE_MANAGER", Value: "registry.example/op:v1.2.3"})
			},
		},
		{
			name: "a ClusterRole bound in the operator's namespace is granted there",
			mutate: func(t *testing.T, objs []*unstructured.Unstructured) []*unstructured.Unstructured {
				return append(objs,
					mustParse(t, `{apiVersion: rbac.authorization.k8s.io/v1, kind: ClusterRole, metadata: {name: pod-reader}, rules: [{apiGroups: [""], resources: [pods], verbs: [get]}]}`),
					mustParse(t, `{apiVersion: rbac.authorization.k8s.io/v1, kind: RoleBinding, metadata: {name: pod-reader, namespace: op-system},
						roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: pod-reader},
						subjects: [{kind: ServiceAccount, name: op-manager, namespace: op-system}]}`))
			},
			want: func(csv *operatorsv1alpha1.ClusterServiceVersion) {
				p := &csv.Spec.InstallStrategy.StrategySpec.Permissions[0]
				p.Rules = append(p.Rules, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get"}})
			},
		},
		{
			name: "a Deployment without labels",
			mutate: func(t *testing.T, objs []*unstructured.Unstructured) []*unstructured.Unstructured {
				find(t, objs, "Deployment", "op-system").SetLabels(nil)
				return objs
			},
			want: func(csv *operatorsv1alpha1.ClusterServiceVersion) {
				csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs[0].Label = nil
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			objs := readInput(t)
			if tc.mutate != nil {
				objs = tc.mutate(t, objs)
			}
			o := testOptions
			if tc.options != nil {
				tc.options(&o)
			}
			want := wantCSV(t)
			if tc.want != nil {
				tc.want(want)
			}
			in, err := classify(objs)
			if err != nil {
				t.Fatalf("classify: %v", err)
			}
			got, err := buildCSV(in, o)
			if err != nil {
				t.Fatalf("buildCSV: %v", err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("buildCSV (-want +got):\n%s", diff)
			}
		})
	}
}

// TestGenerate checks the files: the CSV as buildCSV built it, without status; the CRD as the
// input has it; the bundle's labels in annotations.yaml and the Dockerfile.
func TestGenerate(t *testing.T) {
	out, err := generate(readInput(t), testOptions)
	if err != nil {
		t.Fatalf("generate: %v", err)
	}
	names := slices.Sorted(maps.Keys(out.files))
	wantFiles := []string{
		"manifests/example.com_widgets.yaml", "manifests/op-alerts_monitoring.coreos.com_v1_prometheusrule.yaml",
		"manifests/op-metrics-reader_rbac.authorization.k8s.io_v1_clusterrole.yaml", "manifests/op-metrics_v1_service.yaml",
		"manifests/op-monitor_monitoring.coreos.com_v1_servicemonitor.yaml", "manifests/op.clusterserviceversion.yaml",
		"metadata/annotations.yaml",
	}
	if diff := cmp.Diff(wantFiles, names); diff != "" {
		t.Fatalf("Files (-want +got):\n%s", diff)
	}

	csvFile := out.files["manifests/op.clusterserviceversion.yaml"]
	got := &operatorsv1alpha1.ClusterServiceVersion{}
	if err := yaml.UnmarshalStrict(csvFile, got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantCSV(t), got); diff != "" {
		t.Errorf("The CSV file (-want +got):\n%s", diff)
	}
	var fields map[string]any
	if err := yaml.Unmarshal(csvFile, &fields); err != nil || fields["status"] != nil {
		t.Errorf("The CSV file has a status or is not YAML (%v):\n%s", err, csvFile)
	}

	var crd map[string]any
	if err := yaml.Unmarshal(out.files["manifests/example.com_widgets.yaml"], &crd); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(find(t, readInput(t), "CustomResourceDefinition", "").Object, crd); diff != "" {
		t.Errorf("The CRD file is not the input's CRD (-want +got):\n%s", diff)
	}

	// The Service, the ClusterRole bound to nothing, the ServiceMonitor and the PrometheusRule
	// are files as the input has them, but for the namespace, which OLM chooses.
	for file, obj := range map[string]*unstructured.Unstructured{
		"manifests/op-metrics_v1_service.yaml":                                      find(t, readInput(t), "Service", "op-system"),
		"manifests/op-metrics-reader_rbac.authorization.k8s.io_v1_clusterrole.yaml": findNamed(t, readInput(t), "ClusterRole", "op-metrics-reader"),
		"manifests/op-monitor_monitoring.coreos.com_v1_servicemonitor.yaml":         findNamed(t, readInput(t), "ServiceMonitor", "op-monitor"),
		"manifests/op-alerts_monitoring.coreos.com_v1_prometheusrule.yaml":          findNamed(t, readInput(t), "PrometheusRule", "op-alerts"),
	} {
		got := mustParse(t, string(out.files[file]))
		want := obj.DeepCopy()
		want.SetNamespace("")
		if diff := cmp.Diff(want.Object, got.Object); diff != "" {
			t.Errorf("%s (-want +got):\n%s", file, diff)
		}
	}

	wantAnnotations := generatedHeader + `annotations:
  operators.operatorframework.io.bundle.channel.default.v1: stable
  operators.operatorframework.io.bundle.channels.v1: stable,fast
  operators.operatorframework.io.bundle.manifests.v1: manifests/
  operators.operatorframework.io.bundle.mediatype.v1: registry+v1
  operators.operatorframework.io.bundle.metadata.v1: metadata/
  operators.operatorframework.io.bundle.package.v1: op
`
	if diff := cmp.Diff(wantAnnotations, string(out.files["metadata/annotations.yaml"])); diff != "" {
		t.Errorf("annotations.yaml (-want +got):\n%s", diff)
	}
	wantDockerfile := generatedHeader + "# The OLM bundle image: `make bundle-build BUNDLE_IMG=...`." + `
FROM scratch

LABEL operators.operatorframework.io.bundle.channel.default.v1=stable
LABEL operators.operatorframework.io.bundle.channels.v1=stable,fast
LABEL operators.operatorframework.io.bundle.manifests.v1=manifests/
LABEL operators.operatorframework.io.bundle.mediatype.v1=registry+v1
LABEL operators.operatorframework.io.bundle.metadata.v1=metadata/
LABEL operators.operatorframework.io.bundle.package.v1=op

COPY bundle/manifests /manifests/
COPY bundle/metadata /metadata/
`
	if diff := cmp.Diff(wantDockerfile, string(out.dockerfile)); diff != "" {
		t.Errorf("bundle.Dockerfile (-want +got):\n%s", diff)
	}
}

func TestGenerateIsDeterministic(t *testing.T) {
	first, err := generate(readInput(t), testOptions)
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		again, err := generate(readInput(t), testOptions)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(first, again, cmp.AllowUnexported(output{})); diff != "" {
			t.Fatalf("A second run differs (-first +again):\n%s", diff)
		}
	}
}

func TestGenerateRefuses(t *testing.T) {
	cases := []struct {
		name    string
		mutate  func(t *testing.T, objs []*unstructured.Unstructured) []*unstructured.Unstructured
		options func(o *options)
		wantErr string
	}{
		{
			name:    "a replaced version that is not older",
			options: func(o *options) { o.Replaces = "1.2.3" },
			wantErr: "replaces: version 1.2.3 is not older than 1.2.3",
		},
		{
			name:    "a replaced version that is not semver",
			options: func(o *options) { o.Replaces = "v1.2" },
			wantErr: `replaces: version "v1.2"`,
		},
		{
			name: "an object with no place in the bundle",
			mutate: func(t *testing.T, objs []*unstructured.Unstructured) []*unstructured.Unstructured {
				return append(objs, mustParse(t, `{apiVersion: apps/v1, kind: StatefulSet, metadata: {name: store}}`))
			},
			wantErr: `StatefulSet "store": no place in the bundle`,
		},
		{
			name: "a Prometheus Operator kind the bundle does not ship",
			mutate: func(t *testing.T, objs []*unstructured.Unstructured) []*unstructured.Unstructured {
				return append(objs, mustParse(t, `{apiVersion: monitoring.coreos.com/v1, kind: PodMonitor, metadata: {name: pods}, spec: {}}`))
			},
			wantErr: `PodMonitor "pods": no place in the bundle`,
		},
		{
			name: "a PrometheusRule without a spec",
			mutate: func(t *testing.T, objs []*unstructured.Unstructured) []*unstructured.Unstructured {
				delete(findNamed(t, objs, "PrometheusRule", "op-alerts").Object, "spec")
				return objs
			},
			wantErr: `PrometheusRule "op-alerts": no spec`,
		},
		{
			name: "a misspelt field in the CSV base",
			mutate: func(t *testing.T, objs []*unstructured.Unstructured) []*unstructured.Unstructured {
				find(t, objs, "ClusterServiceVersion", "placeholder").Object["spec"].(map[string]any)["minKubeversion"] = "1.37.0"
				return objs
			},
			wantErr: `unknown field "spec.minKubeversion"`,
		},
		{
			name: "a second Deployment",
			mutate: func(t *testing.T, objs []*unstructured.Unstructured) []*unstructured.Unstructured {
				return append(objs, mustParse(t, `{apiVersion: apps/v1, kind: Deployment, metadata: {name: other, namespace: op-system}}`))
			},
			wantErr: `Deployment "other": a second one in the input`,
		},
		{
			// A namespaced Role has no place in the bundle but through a binding to the operator.
			name: "a Role bound to nothing",
			mutate: func(t *testing.T, objs []*unstructured.Unstructured) []*unstructured.Unstructured {
				return without(objs, "RoleBinding", "op-system")
			},
			wantErr: "Role op-system/op-role is bound to nothing",
		},
		{
			name: "a binding of a role that is not in the input",
			mutate: func(t *testing.T, objs []*unstructured.Unstructured) []*unstructured.Unstructured {
				return without(objs, "Role", "kube-system")
			},
			wantErr: "binds Role kube-system/op-role, which is not in the input",
		},
		{
			name: "a binding to someone else",
			mutate: func(t *testing.T, objs []*unstructured.Unstructured) []*unstructured.Unstructured {
				binding := find(t, objs, "RoleBinding", "kube-system")
				binding.Object["subjects"] = []any{map[string]any{"kind": "User", "name": "alice"}}
				return objs
			},
			wantErr: "the bundle can only grant to the operator's ServiceAccount",
		},
		{
			name: "a ServiceAccount other than the operator's",
			mutate: func(t *testing.T, objs []*unstructured.Unstructured) []*unstructured.Unstructured {
				return append(objs, mustParse(t, `{apiVersion: v1, kind: ServiceAccount, metadata: {name: other, namespace: op-system}}`))
			},
			wantErr: "ServiceAccount op-system/other: the bundle has no place for any but the operator's",
		},
		{
			name: "no CSV base",
			mutate: func(t *testing.T, objs []*unstructured.Unstructured) []*unstructured.Unstructured {
				return without(objs, "ClusterServiceVersion", "placeholder")
			},
			wantErr: "no ClusterServiceVersion base",
		},
		{
			name: "no examples",
			mutate: func(t *testing.T, objs []*unstructured.Unstructured) []*unstructured.Unstructured {
				return without(objs, "Widget", "")
			},
			wantErr: "no examples",
		},
		{
			name: "an owned CRD the base does not describe",
			mutate: func(t *testing.T, objs []*unstructured.Unstructured) []*unstructured.Unstructured {
				delete(find(t, objs, "ClusterServiceVersion", "placeholder").Object["spec"].(map[string]any), "customresourcedefinitions")
				return objs
			},
			wantErr: "the CSV base describes 0 owned CRDs, the input has 1",
		},
		{
			name: "an owned CRD described with a version it does not serve",
			mutate: func(t *testing.T, objs []*unstructured.Unstructured) []*unstructured.Unstructured {
				base := find(t, objs, "ClusterServiceVersion", "placeholder")
				owned, _, _ := unstructured.NestedSlice(base.Object, "spec", "customresourcedefinitions", "owned")
				owned[0].(map[string]any)["version"] = "v2"
				_ = unstructured.SetNestedSlice(base.Object, owned, "spec", "customresourcedefinitions", "owned")
				return objs
			},
			wantErr: `describes CRD "widgets.example.com" as Widget v2`,
		},
		{
			name:    "a version with a leading v",
			options: func(o *options) { o.Version = "v1.2.3" },
			wantErr: `version "v1.2.3"`,
		},
		{
			name:    "a version without a patch number",
			options: func(o *options) { o.Version = "1.2" },
			wantErr: `version "1.2"`,
		},
		{
			name:    "a default channel not among the channels",
			options: func(o *options) { o.DefaultChannel = "alpha" },
			wantErr: "default channel",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			objs := readInput(t)
			if tc.mutate != nil {
				objs = tc.mutate(t, objs)
			}
			o := testOptions
			if tc.options != nil {
				tc.options(&o)
			}
			_, err := generate(objs, o)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("generate: got error %v, want one containing %q", err, tc.wantErr)
			}
		})
	}
}
