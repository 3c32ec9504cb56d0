package e2e

import (
	"context"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/scheduler/profile"
)

// TestForeignLeaseUntouched: another component's expired lock in the operator's namespace,
// named like a profile's scheduler, is not taken by that profile's scheduler, which leads on its
// own prefixed lease and schedules pods; the foreign Lease keeps its holder and renew time.
func TestForeignLeaseUntouched(t *testing.T) {
	const name = "e2e-other-operator-lock"
	// Expired long ago: a scheduler allowed to update it would take it at its first try.
	renewed := metav1.NewMicroTime(time.Now().Add(-time.Hour).Truncate(time.Microsecond))
	foreign := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: operatorNamespace},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:       ptr.To("other-operator-7d9f"),
			LeaseDurationSeconds: ptr.To[int32](15),
			AcquireTime:          &renewed,
			RenewTime:            &renewed,
		},
	}
	if err := k8s.Create(t.Context(), foreign); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), foreign) })
	before := foreign.ResourceVersion

	nodes := makeNodes(t, "foreignlease", nodeSpec{name: "a", cpus: 4})
	p := applyProfile(t, `{metadata: {name: `+name+`, labels: {e2e.schedops.io/webhook: "true"}}}`)
	p = waitCondition(t, p.Name, schedulingv1alpha1.ConditionConfigValid, metav1.ConditionTrue, "", 30*time.Second)
	waitScheduler(t, p.Name, p.Status.ConfigHash)
	schedule(t, nodes.pod("bound", name, 100))
	own := leaseHolder(t, profile.LeaseName(name))
	if own == "" {
		t.Errorf("the scheduler's own lease %s has no holder", profile.LeaseName(name))
	}
	// The scheduler retries every second: a few seconds more would show a take-over.
	time.Sleep(5 * time.Second)

	got := &coordinationv1.Lease{}
	if err := k8s.Get(t.Context(), client.ObjectKeyFromObject(foreign), got); err != nil {
		t.Fatal(err)
	}
	if got.ResourceVersion != before || ptr.Deref(got.Spec.HolderIdentity, "") != "other-operator-7d9f" || !got.Spec.RenewTime.Equal(&renewed) {
		t.Errorf("the foreign Lease %s was touched: holder %q, renewTime %v, resourceVersion %s (was %s)",
			name, ptr.Deref(got.Spec.HolderIdentity, ""), got.Spec.RenewTime, got.ResourceVersion, before)
	}
}
