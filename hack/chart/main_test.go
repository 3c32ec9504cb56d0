package main

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const input = `apiVersion: v1
kind: Namespace
metadata:
  name: scheduler-profile-operator-system
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: scheduler-profile-operator-manager-rolebinding
subjects:
- kind: ServiceAccount
  name: scheduler-profile-operator-controller-manager
  namespace: scheduler-profile-operator-system
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata:
  name: scheduler-profile-operator-manager-role
  namespace: kube-system
---
apiVersion: v1
kind: Service
metadata:
  name: scheduler-profile-operator-webhook-service
  namespace: scheduler-profile-operator-system
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: scheduler-profile-operator-controller-manager
  namespace: scheduler-profile-operator-system
spec:
  replicas: 1
  template:
    spec:
      containers:
      - name: manager
        image: scheduler-profile-operator:dev
        args:
        - --leader-elect
        env:
        - name: RELATED_IMAGE_SCHEDULER
          value: scheduler-profile-operator:dev
        resources:
          requests:
            cpu: 10m
`

// TestRender: the Namespace is left to Helm; the release's namespace replaces config/default's;
// the Deployment takes the image, replicas, resources, webhook switch and flags from the values,
// whose defaults are config/default's; the webhook's objects are installed with webhook.enabled.
func TestRender(t *testing.T) {
	objs, err := readObjects(strings.NewReader(input))
	if err != nil {
		t.Fatal(err)
	}
	files, err := render(objs, chartInfo{version: "1.2.0-dev", image: "ghcr.io/x/op:v1.2.0-dev", kubeVersion: "1.37"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{".helmignore", "Chart.yaml", "templates/NOTES.txt", "templates/_helpers.tpl",
		"templates/clusterrolebinding-manager-rolebinding.yaml", "templates/deployment-controller-manager.yaml",
		"templates/role-manager-role-kube-system.yaml", "templates/service-webhook-service.yaml", "values.yaml"}
	if diff := cmp.Diff(want, sortedKeys(files)); diff != "" {
		t.Errorf("Files (-want +got):\n%s", diff)
	}
	for _, tc := range []struct {
		file     string
		contains []string
	}{
		{"templates/clusterrolebinding-manager-rolebinding.yaml", []string{
			`namespace: '{{ .Release.Namespace }}'`,
			`{{- include "scheduler-profile-operator.labels" . | nindent 4 }}`,
		}},
		{"templates/role-manager-role-kube-system.yaml", []string{"namespace: kube-system"}},
		{"templates/service-webhook-service.yaml", []string{"{{- if .Values.webhook.enabled }}\napiVersion: v1\n", "{{- end }}\n"}},
		{"templates/deployment-controller-manager.yaml", []string{
			"replicas: {{ .Values.replicas }}\n",
			"        - --leader-elect\n        {{- if not .Values.webhook.enabled }}\n        - --enable-webhook=false\n        {{- end }}\n",
			`        - {{ printf "--%s=%v" $flag $value | quote }}`,
			`          value: {{ include "scheduler-profile-operator.image" . | quote }}`,
			`        image: {{ include "scheduler-profile-operator.image" . | quote }}`,
			"        resources:\n          {{- toYaml .Values.resources | nindent 10 }}\n",
			"        {{- with .Values.image.pullPolicy }}\n        imagePullPolicy: {{ . }}\n        {{- end }}\n",
		}},
		{"values.yaml", []string{
			"  repository: ghcr.io/x/op\n  tag: v1.2.0-dev\n  digest: \"\"\n",
			"resources:\n  requests:\n    cpu: 10m\n",
		}},
		{"Chart.yaml", []string{"version: 1.2.0-dev\nappVersion: v1.2.0-dev\nkubeVersion: \">= 1.37.0-0\"\n"}},
	} {
		got := string(files[tc.file])
		for _, s := range tc.contains {
			if !strings.Contains(got, s) {
				t.Errorf("%s does not contain %q:\n%s", tc.file, s, got)
			}
		}
		if strings.Contains(got, "scheduler-profile-operator-system") || strings.Contains(got, "zzhelm_") || strings.Contains(got, "__helm_") {
			t.Errorf("%s names config/default's namespace or a sentinel:\n%s", tc.file, got)
		}
	}
}

func TestRenderNeedsTheDeployment(t *testing.T) {
	objs, err := readObjects(strings.NewReader("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: ns\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := render(objs, chartInfo{version: "1.0.0", image: "op:v1.0.0", kubeVersion: "1.37"}); err == nil {
		t.Error("render of manifests without the operator's Deployment: no error")
	}
}

func TestSplitImage(t *testing.T) {
	for _, tc := range []struct{ image, repo, tag, digest string }{
		{"op", "op", "", ""},
		{"op:v1", "op", "v1", ""},
		{"localhost:5000/op:v1", "localhost:5000/op", "v1", ""},
		{"localhost:5000/op", "localhost:5000/op", "", ""},
		{"registry.example/op:v1@sha256:abc", "registry.example/op", "v1", "sha256:abc"},
		{"registry.example/op@sha256:abc", "registry.example/op", "", "sha256:abc"},
	} {
		repo, tag, digest := splitImage(tc.image)
		if repo != tc.repo || tag != tc.tag || digest != tc.digest {
			t.Errorf("splitImage(%q) = %q, %q, %q, want %q, %q, %q", tc.image, repo, tag, digest, tc.repo, tc.tag, tc.digest)
		}
	}
}

func sortedKeys(m map[string][]byte) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
