package main

import (
	"bytes"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

var testOptions = options{Version: "1.2.3", Package: "op", Channels: []string{"stable", "fast"}, DefaultChannel: "stable"}

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

// csvOf decodes the generated CSV into the parts the tests look at.
type csvOf struct {
	Metadata struct {
		Name        string            `json:"name"`
		Namespace   string            `json:"namespace"`
		Annotations map[string]string `json:"annotations"`
	} `json:"metadata"`
	Spec struct {
		Version string `json:"version"`
		Install struct {
			Strategy string `json:"strategy"`
			Spec     struct {
				Deployments []struct {
					Name  string            `json:"name"`
					Label map[string]string `json:"label"`
					Spec  map[string]any    `json:"spec"`
				} `json:"deployments"`
				Permissions        []permissions `json:"permissions"`
				ClusterPermissions []permissions `json:"clusterPermissions"`
			} `json:"spec"`
		} `json:"install"`
		RelatedImages []relatedImage `json:"relatedImages"`
	} `json:"spec"`
}

type permissions struct {
	ServiceAccountName string `json:"serviceAccountName"`
	Rules              []struct {
		Resources []string `json:"resources"`
	} `json:"rules"`
}

func (p permissions) resources() []string {
	var out []string
	for _, r := range p.Rules {
		out = append(out, r.Resources...)
	}
	return out
}

func TestGenerate(t *testing.T) {
	out, err := generate(readInput(t), testOptions)
	if err != nil {
		t.Fatalf("generate: %v", err)
	}
	var names []string
	for name := range out.files {
		names = append(names, name)
	}
	slices.Sort(names)
	wantFiles := []string{"manifests/example.com_widgets.yaml", "manifests/op.clusterserviceversion.yaml", "metadata/annotations.yaml"}
	if diff := cmp.Diff(wantFiles, names); diff != "" {
		t.Fatalf("Files (-want +got):\n%s", diff)
	}

	var csv csvOf
	if err := yaml.Unmarshal(out.files["manifests/op.clusterserviceversion.yaml"], &csv); err != nil {
		t.Fatal(err)
	}
	if csv.Metadata.Name != "op.v1.2.3" || csv.Spec.Version != "1.2.3" || csv.Metadata.Namespace != "" {
		t.Errorf("CSV name %q, version %q, namespace %q; want op.v1.2.3, 1.2.3 and none", csv.Metadata.Name, csv.Spec.Version, csv.Metadata.Namespace)
	}
	install := csv.Spec.Install.Spec
	if len(install.Deployments) != 1 || install.Deployments[0].Name != "op-manager" || install.Deployments[0].Label["app"] != "op" {
		t.Errorf("Deployments: %+v", install.Deployments)
	} else if got := install.Deployments[0].Spec["replicas"]; got != float64(1) {
		t.Errorf("The Deployment spec is not kustomize's: replicas %v", got)
	}
	// The operator's namespace keeps its Role as permissions; the ClusterRole and the Role of
	// kube-system (which a CSV cannot grant in kube-system) become clusterPermissions.
	if len(install.Permissions) != 1 || install.Permissions[0].ServiceAccountName != "op-manager" {
		t.Fatalf("permissions: %+v", install.Permissions)
	}
	if diff := cmp.Diff([]string{"configmaps"}, install.Permissions[0].resources()); diff != "" {
		t.Errorf("permissions (-want +got):\n%s", diff)
	}
	if len(install.ClusterPermissions) != 1 || install.ClusterPermissions[0].ServiceAccountName != "op-manager" {
		t.Fatalf("clusterPermissions: %+v", install.ClusterPermissions)
	}
	if diff := cmp.Diff([]string{"widgets", "rolebindings"}, install.ClusterPermissions[0].resources()); diff != "" {
		t.Errorf("clusterPermissions (-want +got):\n%s", diff)
	}
	wantImages := []relatedImage{
		{Name: "manager", Image: "registry.example/op:v1.2.3"},
		{Name: "scheduler", Image: "registry.example/op:v1.2.3"},
		{Name: "helper", Image: "registry.example/helper:v1"},
	}
	if diff := cmp.Diff(wantImages, csv.Spec.RelatedImages); diff != "" {
		t.Errorf("relatedImages (-want +got):\n%s", diff)
	}
	if got := csv.Metadata.Annotations["containerImage"]; got != "registry.example/op:v1.2.3" {
		t.Errorf("containerImage %q", got)
	}
	var examples []map[string]any
	if err := json.Unmarshal([]byte(csv.Metadata.Annotations["alm-examples"]), &examples); err != nil || len(examples) != 1 || examples[0]["kind"] != "Widget" {
		t.Errorf("alm-examples %q (%v)", csv.Metadata.Annotations["alm-examples"], err)
	}

	wantDockerfile := []string{
		"FROM scratch",
		"LABEL operators.operatorframework.io.bundle.channel.default.v1=stable",
		"LABEL operators.operatorframework.io.bundle.channels.v1=stable,fast",
		"LABEL operators.operatorframework.io.bundle.package.v1=op",
		"COPY bundle/manifests /manifests/",
		"COPY bundle/metadata /metadata/",
	}
	for _, line := range wantDockerfile {
		if !strings.Contains(string(out.dockerfile), line+"\n") {
			t.Errorf("bundle.Dockerfile lacks %q:\n%s", line, out.dockerfile)
		}
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
		mutate  func(objs []*unstructured.Unstructured) []*unstructured.Unstructured
		options func(o *options)
		wantErr string
	}{
		{
			name: "an object with no place in the bundle",
			mutate: func(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
				svc := &unstructured.Unstructured{}
				svc.SetAPIVersion("v1")
				svc.SetKind("Service")
				svc.SetName("metrics")
				return append(objs, svc)
			},
			wantErr: `Service "metrics": no place in the bundle`,
		},
		{
			name: "a role bound to nothing",
			mutate: func(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
				return without(objs, "ClusterRoleBinding", "")
			},
			wantErr: "ClusterRole op-role is bound to nothing",
		},
		{
			name: "a binding to someone else",
			mutate: func(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
				for _, obj := range objs {
					if obj.GetKind() == "RoleBinding" && obj.GetNamespace() == "kube-system" {
						_ = unstructured.SetNestedSlice(obj.Object, []any{map[string]any{"kind": "User", "name": "alice"}}, "subjects")
					}
				}
				return objs
			},
			wantErr: "the bundle can only grant to the operator's ServiceAccount",
		},
		{
			name: "no CSV base",
			mutate: func(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
				return without(objs, "ClusterServiceVersion", "placeholder")
			},
			wantErr: "no ClusterServiceVersion base",
		},
		{
			name: "no examples",
			mutate: func(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
				return without(objs, "Widget", "")
			},
			wantErr: "no examples",
		},
		{
			name: "an owned CRD the base does not describe",
			mutate: func(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
				for _, obj := range objs {
					if obj.GetKind() == "ClusterServiceVersion" {
						unstructured.RemoveNestedField(obj.Object, "spec", "customresourcedefinitions")
					}
				}
				return objs
			},
			wantErr: "owned CRDs",
		},
		{
			name:    "a version that is not semver",
			options: func(o *options) { o.Version = "v1.2" },
			wantErr: `version "v1.2"`,
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
				objs = tc.mutate(objs)
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

func without(objs []*unstructured.Unstructured, kind, namespace string) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, obj := range objs {
		if obj.GetKind() != kind || obj.GetNamespace() != namespace {
			out = append(out, obj)
		}
	}
	return out
}
