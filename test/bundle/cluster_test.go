package bundle

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/internal/operatorenv"
)

// warnings collects the API server's warnings (Pod Security among them).
type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnings) HandleWarningHeaderWithContext(_ context.Context, _ int, _ string, msg string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, msg)
}

func (w *warnings) all() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.msgs)
}

// newClient is a client of rc that knows SchedulerProfiles and CRDs.
func newClient(t *testing.T, rc *rest.Config) client.Client {
	t.Helper()
	c, err := client.New(rc, client.Options{Scheme: operatorenv.NewScheme()})
	if err != nil {
		t.Fatalf("Creating a client: %v", err)
	}
	return c
}

// boolRank is 1 for true: sorting by it puts what is true first.
func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}

// installCRDs creates the bundle's CRDs and waits until they are served.
func installCRDs(t *testing.T, c client.Client, create func(client.Object)) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(path(bundleDir), "manifests", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, obj := range decodeYAML(t, data) {
			if obj.GetKind() != "CustomResourceDefinition" {
				continue
			}
			crd := &apiextensionsv1.CustomResourceDefinition{}
			fromUnstructured(t, obj, crd)
			create(crd)
			names = append(names, crd.Name)
		}
	}
	if len(names) == 0 {
		t.Fatal("The bundle has no CRD")
	}
	if err := operatorenv.WaitEstablished(t.Context(), c, names...); err != nil {
		t.Fatal(err)
	}
}

// sampleProfile is the profile name of the CSV's alm-examples.
func sampleProfile(t *testing.T, csv *operatorsv1alpha1.ClusterServiceVersion, name string) *schedulingv1alpha1.SchedulerProfile {
	t.Helper()
	var examples []schedulingv1alpha1.SchedulerProfile
	if err := json.Unmarshal([]byte(csv.Annotations["alm-examples"]), &examples); err != nil {
		t.Fatalf("Decoding alm-examples: %v", err)
	}
	for i := range examples {
		if examples[i].Name == name {
			return &examples[i]
		}
	}
	t.Fatalf("alm-examples has no profile %q", name)
	return nil
}
