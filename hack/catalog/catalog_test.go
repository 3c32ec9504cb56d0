package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/yaml"
)

const (
	testAnnotations = `annotations:
  operators.operatorframework.io.bundle.channel.default.v1: stable
  operators.operatorframework.io.bundle.channels.v1: stable,fast
  operators.operatorframework.io.bundle.package.v1: op
`
	testCSV = `apiVersion: operators.coreos.com/v1alpha1
kind: ClusterServiceVersion
metadata:
  name: op.v1.2.3
  annotations:
    olm.skipRange: '>=1.0.0 <1.2.3'
spec:
  version: 1.2.3
  replaces: op.v1.2.2
`
	testCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  names:
    kind: Widget
  versions:
  - name: v1
    served: true
  - name: v1beta1
    served: false
`
)

// writeBundle writes a bundle directory of the annotations and the manifests, by file name.
func writeBundle(t *testing.T, annotations string, manifests map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	files := map[string]string{"metadata/annotations.yaml": annotations}
	for name, m := range manifests {
		files["manifests/"+name] = m
	}
	for name, content := range files {
		path := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// decodeDocs splits a catalog into its JSON documents.
func decodeDocs(t *testing.T, data []byte) []map[string]any {
	t.Helper()
	var docs []map[string]any
	dec := json.NewDecoder(bytes.NewReader(data))
	for {
		var d map[string]any
		if err := dec.Decode(&d); err == io.EOF {
			return docs
		} else if err != nil {
			t.Fatalf("The catalog is not a stream of JSON documents: %v", err)
		}
		docs = append(docs, d)
	}
}

func jsonOf(t *testing.T, y string) any {
	t.Helper()
	j, err := yaml.YAMLToJSON([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := json.Unmarshal(j, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestRender(t *testing.T) {
	dir := writeBundle(t, testAnnotations, map[string]string{"b_csv.yaml": testCSV, "a_crd.yaml": testCRD})
	b, err := readBundle(dir)
	if err != nil {
		t.Fatalf("readBundle: %v", err)
	}
	data, err := render(b)
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	docs := decodeDocs(t, data)
	if len(docs) != 4 {
		t.Fatalf("The catalog has %d documents, want 4 (package, 2 channels, bundle):\n%s", len(docs), data)
	}
	entry := []any{map[string]any{"name": "op.v1.2.3", "replaces": "op.v1.2.2", "skipRange": ">=1.0.0 <1.2.3"}}
	wantHead := []map[string]any{
		{"schema": "olm.package", "name": "op", "defaultChannel": "stable"},
		{"schema": "olm.channel", "name": "fast", "package": "op", "entries": entry},
		{"schema": "olm.channel", "name": "stable", "package": "op", "entries": entry},
	}
	if diff := cmp.Diff(wantHead, docs[:3]); diff != "" {
		t.Errorf("Package and channels (-want +got):\n%s", diff)
	}

	// The bundle: no image, its package and version, the served kinds of its CRD, and every
	// manifest inline as JSON, base64-encoded, in the order of the file names.
	bundleDoc := docs[3]
	props, _ := bundleDoc["properties"].([]any)
	delete(bundleDoc, "properties")
	if diff := cmp.Diff(map[string]any{"schema": "olm.bundle", "name": "op.v1.2.3", "package": "op", "image": ""}, bundleDoc); diff != "" {
		t.Errorf("Bundle (-want +got):\n%s", diff)
	}
	var objects []any
	var rest []any
	for _, p := range props {
		prop := p.(map[string]any)
		if prop["type"] != "olm.bundle.object" {
			rest = append(rest, prop)
			continue
		}
		var obj any
		raw, err := base64Decode(prop["value"].(map[string]any)["data"].(string))
		if err != nil {
			t.Fatalf("olm.bundle.object: %v", err)
		}
		if err := json.Unmarshal(raw, &obj); err != nil {
			t.Fatalf("olm.bundle.object is not JSON: %v", err)
		}
		objects = append(objects, obj)
	}
	wantRest := []any{
		map[string]any{"type": "olm.package", "value": map[string]any{"packageName": "op", "version": "1.2.3"}},
		map[string]any{"type": "olm.gvk", "value": map[string]any{"group": "example.com", "kind": "Widget", "version": "v1"}},
	}
	if diff := cmp.Diff(wantRest, rest); diff != "" {
		t.Errorf("Bundle properties (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]any{jsonOf(t, testCRD), jsonOf(t, testCSV)}, objects); diff != "" {
		t.Errorf("Bundle objects (-want +got):\n%s", diff)
	}
}

// TestRunIsDeterministic: two runs write the same bytes.
func TestRunIsDeterministic(t *testing.T) {
	dir := writeBundle(t, testAnnotations, map[string]string{"csv.yaml": testCSV, "crd.yaml": testCRD})
	out := t.TempDir()
	var runs [][]byte
	for _, name := range []string{"a/catalog.json", "b/catalog.json"} {
		path := filepath.Join(out, name)
		if err := run([]string{"--bundle-dir", dir, "--out", path}); err != nil {
			t.Fatalf("run: %v", err)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, data)
	}
	if !bytes.Equal(runs[0], runs[1]) {
		t.Errorf("Two runs on the same bundle wrote different catalogs")
	}
}

func TestReadBundleRefuses(t *testing.T) {
	tests := []struct {
		name        string
		annotations string
		manifests   map[string]string
	}{
		{name: "no package annotation", annotations: "annotations: {}\n", manifests: map[string]string{"csv.yaml": testCSV}},
		{name: "no CSV", annotations: testAnnotations, manifests: map[string]string{"crd.yaml": testCRD}},
		{name: "two CSVs", annotations: testAnnotations, manifests: map[string]string{"a.yaml": testCSV, "b.yaml": testCSV}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := readBundle(writeBundle(t, tc.annotations, tc.manifests)); err == nil {
				t.Errorf("readBundle accepted a bundle with %s", tc.name)
			}
		})
	}
}

func TestRenderRefusesUnknownDefaultChannel(t *testing.T) {
	annotations := "annotations:\n  operators.operatorframework.io.bundle.channel.default.v1: beta\n" +
		"  operators.operatorframework.io.bundle.channels.v1: stable\n  operators.operatorframework.io.bundle.package.v1: op\n"
	b, err := readBundle(writeBundle(t, annotations, map[string]string{"csv.yaml": testCSV}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := render(b); err == nil {
		t.Errorf("render accepted a default channel that is not one of the bundle's")
	}
}

func base64Decode(s string) ([]byte, error) { return base64.StdEncoding.DecodeString(s) }

// TestRenderTwoVersions: the previous release's bundle and this one make one package whose
// channels list both, oldest first, the newer one replacing the older, and two bundles.
func TestRenderTwoVersions(t *testing.T) {
	const previousCSV = `apiVersion: operators.coreos.com/v1alpha1
kind: ClusterServiceVersion
metadata:
  name: op.v1.2.2
spec:
  version: 1.2.2
`
	previousAnnotations := "annotations:\n  operators.operatorframework.io.bundle.channel.default.v1: stable\n" +
		"  operators.operatorframework.io.bundle.channels.v1: stable\n  operators.operatorframework.io.bundle.package.v1: op\n"
	previous := writeBundle(t, previousAnnotations, map[string]string{"csv.yaml": previousCSV})
	current := writeBundle(t, testAnnotations, map[string]string{"csv.yaml": testCSV, "crd.yaml": testCRD})
	out := filepath.Join(t.TempDir(), "catalog.json")
	if err := run([]string{"--bundle-dir", previous, "--bundle-dir", current, "--out", out}); err != nil {
		t.Fatalf("run: %v", err)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	docs := decodeDocs(t, data)
	if len(docs) != 5 {
		t.Fatalf("The catalog has %d documents, want 5 (package, 2 channels, 2 bundles):\n%s", len(docs), data)
	}
	newest := map[string]any{"name": "op.v1.2.3", "replaces": "op.v1.2.2", "skipRange": ">=1.0.0 <1.2.3"}
	wantHead := []map[string]any{
		{"schema": "olm.package", "name": "op", "defaultChannel": "stable"},
		// fast is the newer bundle's channel only.
		{"schema": "olm.channel", "name": "fast", "package": "op", "entries": []any{newest}},
		{"schema": "olm.channel", "name": "stable", "package": "op", "entries": []any{map[string]any{"name": "op.v1.2.2"}, newest}},
	}
	if diff := cmp.Diff(wantHead, docs[:3]); diff != "" {
		t.Errorf("Package and channels (-want +got):\n%s", diff)
	}
	for i, want := range []string{"op.v1.2.2", "op.v1.2.3"} {
		if d := docs[3+i]; d["schema"] != "olm.bundle" || d["name"] != want {
			t.Errorf("Document %d is %v %v, want bundle %s", 3+i, d["schema"], d["name"], want)
		}
	}
	// The same bundle twice, or bundles of two packages, are refused.
	other := writeBundle(t, strings.ReplaceAll(testAnnotations, "package.v1: op", "package.v1: other"), map[string]string{"csv.yaml": previousCSV})
	for name, dirs := range map[string][]string{"twice": {current, current}, "two packages": {other, current}} {
		args := []string{"--out", out}
		for _, d := range dirs {
			args = append(args, "--bundle-dir", d)
		}
		if err := run(args); err == nil {
			t.Errorf("run accepted bundles %s", name)
		}
	}
}
