package integration

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/discovery"

	"github.com/schedops/scheduler-profile-operator/internal/testutil"
)

// TestCRDFieldDocsPublished reads the OpenAPI v3 schema that the apiserver publishes for the CRD
// (what `kubectl explain schedulerprofile.spec.plugins` shows) and checks that the field docs are there.
func TestCRDFieldDocsPublished(t *testing.T) {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	type schema struct {
		Description string            `json:"description"`
		Properties  map[string]schema `json:"properties"`
	}
	var doc struct {
		Components struct {
			Schemas map[string]schema `json:"schemas"`
		} `json:"components"`
	}
	// The apiserver publishes a new CRD's schema asynchronously.
	testutil.Eventually(t, 30*time.Second, "the OpenAPI v3 schema of scheduling.schedops.io/v1alpha1", func(context.Context) error {
		paths, err := dc.OpenAPIV3().Paths()
		if err != nil {
			return err
		}
		gv, ok := paths["apis/scheduling.schedops.io/v1alpha1"]
		if !ok {
			return errors.New("not published")
		}
		raw, err := gv.Schema("application/json")
		if err != nil {
			return err
		}
		return json.Unmarshal(raw, &doc)
	})

	profile, ok := doc.Components.Schemas["io.schedops.scheduling.v1alpha1.SchedulerProfile"]
	if !ok {
		t.Fatalf("no SchedulerProfile schema among %d published schemas", len(doc.Components.Schemas))
	}
	spec := profile.Properties["spec"]
	plugins := spec.Properties["plugins"]
	for path, want := range map[string]struct{ got, contains string }{
		"spec.plugins":                        {plugins.Description, "enables and disables plugins per extension point"},
		"spec.plugins.multiPoint":             {plugins.Properties["multiPoint"].Description, "at every extension point it implements"},
		"spec.plugins.score.enabled":          {plugins.Properties["score"].Properties["enabled"].Description, "run in addition to the default ones"},
		"spec.schedulerName":                  {spec.Properties["schedulerName"].Description, "must not be \"default-scheduler\""},
		"spec.scheduler.replicas":             {spec.Properties["scheduler"].Properties["replicas"].Description, "Leader election is always on"},
		"status.configHash":                   {profile.Properties["status"].Properties["configHash"].Description, "content hash"},
		"SchedulerProfile (the name's limit)": {profile.Description, "at most 40 characters"},
	} {
		if !strings.Contains(want.got, want.contains) {
			t.Errorf("description of %s = %q, want it to mention %q", path, want.got, want.contains)
		}
	}
}
