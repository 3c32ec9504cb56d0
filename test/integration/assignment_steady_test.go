package integration

import (
	"context"
	"fmt"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/discovery"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/schedops/scheduler-profile-operator/controllers/assignment"
	"github.com/schedops/scheduler-profile-operator/controllers/plan"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
)

// TestAssignmentSteadyStateWritesNothing runs assignment's reconciler by hand, through the
// manager's cache as in production, and counts its write requests: once the policies and their
// bindings are in place, a pass with nothing changed makes none. Shown failing first: before the
// policies were applied with the values the apiserver defaults written out (a policy's match
// policy and empty selectors, a rule's scope) and without a status, the operator's fields read
// back from the live policies never equalled the desired ones, and every pass patched the four
// policies again (4 write requests a pass here; 3,500 policy patches in one run of this
// package, each of them type-checking every CEL expression of the policy in the apiserver).
func TestAssignmentSteadyStateWritesNothing(t *testing.T) {
	k := suiteCluster()
	k.ensureOperatorNamespace(t)
	var requests testutil.RequestLog
	mgr, c := k.cachedClientWithLog(t, &requests)
	d, err := discovery.NewDiscoveryClientForConfig(k.cfg)
	if err != nil {
		t.Fatal(err)
	}
	r := assignment.NewReconciler(c, mgr.GetAPIReader(), operatorNamespace, plan.NewServedAPIs(d), nil, plan.NewMemos().ProfilesIn)
	// A profile, so that the policies name a scheduler, in the cache before the first pass.
	name := uniqueName("assign-steady")
	k.createProfile(t, testutil.MakeProfile(name).Obj())
	k.waitForCache(t, mgr.GetCache(), name)

	pass := func() []string {
		t.Helper()
		if _, err := r.Reconcile(ctrl.LoggerInto(t.Context(), mgr.GetLogger()), ctrl.Request{}); err != nil {
			t.Fatalf("Reconcile: %v", err)
		}
		writes, _ := requests.Take()
		return writes
	}
	// The first pass writes what earlier tests' operators left different (the profile's name at
	// least); then the cache is waited for, as a controller's next pass would see it.
	t.Logf("Pass 1: %d write requests", len(pass()))
	for i := 2; i <= 3; i++ {
		k.waitForPoliciesCached(t, mgr.GetCache())
		if writes := pass(); len(writes) > 0 {
			t.Errorf("Pass %d with nothing changed made %d write requests, want none: %q", i, len(writes), writes)
		}
	}
}

// waitForPoliciesCached waits until reader holds every admission policy and binding of
// assignment at the resourceVersion the apiserver holds.
func (k *cluster) waitForPoliciesCached(t *testing.T, reader client.Reader) {
	t.Helper()
	lists := []client.ObjectList{&admissionregistrationv1.MutatingAdmissionPolicyList{}, &admissionregistrationv1.MutatingAdmissionPolicyBindingList{},
		&admissionregistrationv1.ValidatingAdmissionPolicyList{}, &admissionregistrationv1.ValidatingAdmissionPolicyBindingList{}}
	testutil.Eventually(t, reconcileTimeout, "the cache to catch up with the policies of assignment", func(ctx context.Context) error {
		for _, list := range lists {
			if err := k.admin.List(ctx, list, client.MatchingLabels{plan.LabelComponent: "assignment"}); err != nil {
				return err
			}
			items, err := meta.ExtractList(list)
			if err != nil {
				return err
			}
			if len(items) == 0 {
				return fmt.Errorf("no %T of assignment", list)
			}
			for _, item := range items {
				obj := item.(client.Object)
				cached := obj.DeepCopyObject().(client.Object)
				if err := reader.Get(ctx, client.ObjectKeyFromObject(obj), cached); err != nil {
					return fmt.Errorf("cached %T %s: %w", obj, obj.GetName(), err)
				}
				if cached.GetResourceVersion() != obj.GetResourceVersion() {
					return fmt.Errorf("cached %T %s has resourceVersion %s, the apiserver %s", obj, obj.GetName(), cached.GetResourceVersion(), obj.GetResourceVersion())
				}
			}
		}
		return nil
	})
}
