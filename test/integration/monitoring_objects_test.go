package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/google/go-cmp/cmp"

	"github.com/schedops/scheduler-profile-operator/controllers"
	"github.com/schedops/scheduler-profile-operator/controllers/monitoring"
	"github.com/schedops/scheduler-profile-operator/internal/operatorenv"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
)

// TestMonitoringObjectsOnceTheAPIIsServed: with --monitoring-objects (the OLM bundle's), an
// operator started on a cluster without the Prometheus Operator's API runs without them and
// without an error, and applies its two ServiceMonitors and its PrometheusRule into its namespace,
// as config/prometheus has them, once the API is served, with no restart.
func TestMonitoringObjectsOnceTheAPIIsServed(t *testing.T) {
	k := suiteCluster()
	ctx := t.Context()
	op := k.startOperatorWith(t, func(o *controllers.ManagerOptions) {
		o.MonitoringObjects, o.MonitoringRecheck = true, 200*time.Millisecond
	})
	// A few rechecks without the API: nothing applied, nothing failed.
	time.Sleep(time.Second)
	if log := op.Log.String(); strings.Contains(log, "Applying the monitoring objects") || strings.Contains(log, "Applied the ServiceMonitors") {
		t.Errorf("Without the API the operator applied or tried to apply its monitoring objects:\n%s", log)
	}
	var names []string
	for _, crd := range testutil.MonitoringCRDs() {
		if err := k.admin.Create(ctx, crd); err != nil {
			t.Fatalf("Creating CRD %s: %v", crd.Name, err)
		}
		names = append(names, crd.Name)
		t.Cleanup(func() { _ = k.admin.Delete(context.Background(), crd) })
	}
	if err := operatorenv.WaitEstablished(ctx, k.admin, names...); err != nil {
		t.Fatal(err)
	}
	want, err := monitoring.Manifests(operatorNamespace)
	if err != nil {
		t.Fatal(err)
	}
	if len(want) != 3 {
		t.Fatalf("The operator has %d monitoring objects, want config/prometheus's 3 (two ServiceMonitors, a PrometheusRule)", len(want))
	}
	testutil.Eventually(t, 30*time.Second, "the operator's monitoring objects in "+operatorNamespace, func(ctx context.Context) error {
		for _, w := range want {
			got := &unstructured.Unstructured{}
			got.SetGroupVersionKind(w.GroupVersionKind())
			if err := k.admin.Get(ctx, client.ObjectKeyFromObject(w), got); err != nil {
				return err
			}
			if diff := cmp.Diff(w.Object["spec"], got.Object["spec"]); diff != "" {
				return fmt.Errorf("%s %s differs from config/prometheus (-want +got):\n%s", w.GetKind(), w.GetName(), diff)
			}
		}
		return nil
	})
	for _, w := range want {
		t.Cleanup(func() { _ = k.admin.Delete(context.Background(), w) })
	}
}
