// Package bundle tests the install paths: the OLM bundle under bundle/ (validated with
// github.com/operator-framework/api, which only hack/bundle and these tests import), the kustomize
// configuration under config/ (applied to a real kube-apiserver), an OLM install simulated on
// envtest, and the image build. `make test-bundle` runs it with KUSTOMIZE (bin/kustomize-*) and
// KUBEBUILDER_ASSETS (bin/k8s) set.
package bundle

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/schedops/scheduler-profile-operator/controllers"
)

// repoRoot is the module root, relative to this package.
const repoRoot = "../.."

// Paths relative to repoRoot.
const (
	bundleDir        = "bundle"
	bundleDockerfile = "bundle.Dockerfile"
	csvFile          = "bundle/manifests/scheduler-profile-operator.clusterserviceversion.yaml"
	crdBasesDir      = "config/crd/bases"
)

var (
	envOnce sync.Once
	env     *envtest.Environment
	// adminCfg reaches the envtest apiserver as an administrator; set by startEnv.
	adminCfg *rest.Config
	envErr   error
)

func TestMain(m *testing.M) {
	// The operator's previews start this binary as their worker (os.Executable).
	if len(os.Args) > 1 && os.Args[1] == controllers.PreviewWorkerCommand {
		os.Exit(controllers.RunPreviewWorker(os.Stdin, os.Stdout, os.Stderr))
	}
	code := m.Run()
	if env != nil {
		if err := env.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "stopping envtest: %v\n", err)
		}
	}
	os.Exit(code)
}

// startEnv starts one envtest apiserver for the tests that need one, the first time one asks:
// the file-only tests run without control-plane binaries.
func startEnv(t *testing.T) *rest.Config {
	t.Helper()
	envOnce.Do(func() {
		if os.Getenv("KUBEBUILDER_ASSETS") == "" {
			envErr = errors.New("KUBEBUILDER_ASSETS is not set: run these tests with `make test-bundle`, which builds bin/k8s")
			return
		}
		env = &envtest.Environment{}
		adminCfg, envErr = env.Start()
	})
	if envErr != nil {
		t.Fatalf("Starting envtest: %v", envErr)
	}
	return adminCfg
}

// path joins a path relative to the module root.
func path(rel string) string { return filepath.Join(repoRoot, filepath.FromSlash(rel)) }

func readFile(t *testing.T, rel string) []byte {
	t.Helper()
	data, err := os.ReadFile(path(rel))
	if err != nil {
		t.Fatalf("Reading %s: %v", rel, err)
	}
	return data
}

// kustomizeBuild builds the kustomization dir (relative to the module root) with the operator
// image set to image, the way `make deploy` and `make bundle` do: through an overlay that sets
// the image, so no tracked file changes.
func kustomizeBuild(t *testing.T, dir, image string) []*unstructured.Unstructured {
	t.Helper()
	kustomize := os.Getenv("KUSTOMIZE")
	if kustomize == "" {
		t.Fatal("KUSTOMIZE is not set: run these tests with `make test-bundle`, which builds bin/kustomize-*")
	}
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	// kustomize refuses absolute resource paths, so the overlay lives in the tree (bin/ is
	// ignored by git) and names its base relatively.
	if err := os.MkdirAll(filepath.Join(root, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	overlay, err := os.MkdirTemp(filepath.Join(root, "bin"), "test-overlay.")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(overlay) })
	run := func(dir string, args ...string) []byte {
		t.Helper()
		cmd := exec.Command(kustomize, args...)
		cmd.Dir = dir
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("kustomize %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
		}
		return out
	}
	run(overlay, "create", "--resources", filepath.ToSlash(filepath.Join("..", "..", dir)))
	run(overlay, "edit", "set", "image", "scheduler-profile-operator="+image)
	return decodeYAML(t, run(root, "build", overlay))
}

// decodeYAML decodes a multi-document YAML stream.
func decodeYAML(t *testing.T, data []byte) []*unstructured.Unstructured {
	t.Helper()
	reader := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var objs []*unstructured.Unstructured
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			return objs
		}
		if err != nil {
			t.Fatalf("Reading YAML: %v", err)
		}
		jsonDoc, err := yaml.YAMLToJSON(doc)
		if err != nil {
			t.Fatalf("Decoding YAML: %v", err)
		}
		if s := strings.TrimSpace(string(jsonDoc)); s == "null" || s == "" {
			continue
		}
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(jsonDoc); err != nil {
			t.Fatalf("Decoding YAML: %v\n%s", err, doc)
		}
		objs = append(objs, obj)
	}
}

// findObject returns the one object of kind in objs, or fails.
func findObject(t *testing.T, objs []*unstructured.Unstructured, kind string) *unstructured.Unstructured {
	t.Helper()
	return findNamed(t, objs, kind, "")
}

// findNamed is the one object of the kind with the name (any name when name is "") in objs.
func findNamed(t *testing.T, objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	t.Helper()
	var found []*unstructured.Unstructured
	for _, obj := range objs {
		if obj.GetKind() == kind && (name == "" || obj.GetName() == name) {
			found = append(found, obj)
		}
	}
	if len(found) != 1 {
		t.Fatalf("Found %d objects of kind %s named %q, want 1", len(found), kind, name)
	}
	return found[0]
}
