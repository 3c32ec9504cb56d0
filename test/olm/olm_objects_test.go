package olm

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	operatorsv1 "github.com/operator-framework/api/pkg/operators/v1"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/schedops/scheduler-profile-operator/internal/operatorenv"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
)

const (
	// packageName and channel are the bundle's (bundle/metadata/annotations.yaml).
	packageName = "scheduler-profile-operator"
	channel     = "candidate-v0"
	// subscriptionName is the Subscription of every install.
	subscriptionName = "scheduler-profile-operator"
	// installTimeout bounds a Subscription's way to a Complete InstallPlan and a Succeeded CSV:
	// about 45 s on the local cluster.
	installTimeout = 3 * time.Minute
)

// subscribe creates namespace ns, an OperatorGroup of every namespace (the CSV supports
// AllNamespaces and OwnNamespace) and a Subscription of the package's channel in the catalog, as a
// user installs the operator: of the channel's head, approved automatically, when startingCSV is
// empty; otherwise from startingCSV on, each InstallPlan approved by hand (approve).
func subscribe(t *testing.T, ns, startingCSV string) {
	t.Helper()
	ctx := context.Background()
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&operatorsv1.OperatorGroup{ObjectMeta: metav1.ObjectMeta{Name: "scheduler-profile-operator", Namespace: ns}},
		&operatorsv1alpha1.Subscription{
			ObjectMeta: metav1.ObjectMeta{Name: subscriptionName, Namespace: ns},
			Spec: &operatorsv1alpha1.SubscriptionSpec{
				CatalogSource: catalogSourceName, CatalogSourceNamespace: olmNamespace,
				Package: packageName, Channel: channel, InstallPlanApproval: operatorsv1alpha1.ApprovalAutomatic,
				StartingCSV: startingCSV,
			},
		},
	}
	if startingCSV != "" {
		objs[2].(*operatorsv1alpha1.Subscription).Spec.InstallPlanApproval = operatorsv1alpha1.ApprovalManual
	}
	for _, obj := range objs {
		if err := k8s.Create(ctx, obj); err != nil {
			t.Fatalf("Creating %T %s: %v", obj, obj.GetName(), err)
		}
	}
}

// olmSays describes what OLM reports in ns: the Subscription's state and conditions, every
// InstallPlan's phase, conditions and message, and every CSV's phase, reason, message and
// requirements that are not met. Failure messages carry it.
func olmSays(ctx context.Context, ns string) string {
	var b strings.Builder
	sub := &operatorsv1alpha1.Subscription{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: subscriptionName}, sub); err == nil {
		fmt.Fprintf(&b, "Subscription %s: state %q, currentCSV %q, installedCSV %q\n", sub.Name, sub.Status.State, sub.Status.CurrentCSV, sub.Status.InstalledCSV)
		for _, c := range sub.Status.Conditions {
			fmt.Fprintf(&b, "  condition %s=%s %s: %s\n", c.Type, c.Status, c.Reason, c.Message)
		}
	} else {
		fmt.Fprintf(&b, "Subscription: %v\n", err)
	}
	plans := &operatorsv1alpha1.InstallPlanList{}
	if err := k8s.List(ctx, plans, client.InNamespace(ns)); err != nil {
		fmt.Fprintf(&b, "InstallPlans: %v\n", err)
	}
	for _, p := range plans.Items {
		fmt.Fprintf(&b, "InstallPlan %s: phase %q, CSVs %v, message %q\n", p.Name, p.Status.Phase, p.Spec.ClusterServiceVersionNames, p.Status.Message)
		for _, c := range p.Status.Conditions {
			fmt.Fprintf(&b, "  condition %s=%s %s: %s\n", c.Type, c.Status, c.Reason, c.Message)
		}
		for _, s := range p.Status.Plan {
			if s.Status != operatorsv1alpha1.StepStatusCreated && s.Status != operatorsv1alpha1.StepStatusPresent {
				fmt.Fprintf(&b, "  step %s %s: %s\n", s.Resource.Kind, s.Resource.Name, s.Status)
			}
		}
	}
	csvs := &operatorsv1alpha1.ClusterServiceVersionList{}
	if err := k8s.List(ctx, csvs, client.InNamespace(ns)); err != nil {
		fmt.Fprintf(&b, "CSVs: %v\n", err)
	}
	for _, c := range csvs.Items {
		fmt.Fprintf(&b, "CSV %s: phase %q, reason %q, message %q\n", c.Name, c.Status.Phase, c.Status.Reason, c.Status.Message)
		for _, r := range c.Status.RequirementStatus {
			if r.Status != operatorsv1alpha1.RequirementStatusReasonPresent {
				fmt.Fprintf(&b, "  requirement %s %s: %s %s\n", r.Kind, r.Name, r.Status, r.Message)
			}
		}
	}
	if len(csvs.Items) == 0 {
		b.WriteString("no CSV\n")
	}
	return b.String()
}

// installPlan is the InstallPlan of the Subscription in ns, once OLM has made one.
func installPlan(ctx context.Context, ns string) (*operatorsv1alpha1.InstallPlan, error) {
	sub := &operatorsv1alpha1.Subscription{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: subscriptionName}, sub); err != nil {
		return nil, err
	}
	if sub.Status.InstallPlanRef == nil {
		return nil, fmt.Errorf("the Subscription has no InstallPlan yet")
	}
	plan := &operatorsv1alpha1.InstallPlan{}
	err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: sub.Status.InstallPlanRef.Name}, plan)
	return plan, err
}

// waitInstallPlan waits until the Subscription's InstallPlan reaches phase and returns it.
func waitInstallPlan(t *testing.T, ns string, phase operatorsv1alpha1.InstallPlanPhase, timeout time.Duration) *operatorsv1alpha1.InstallPlan {
	t.Helper()
	var plan *operatorsv1alpha1.InstallPlan
	waitOLM(t, ns, timeout, "the InstallPlan to be "+string(phase), func(ctx context.Context) error {
		var err error
		if plan, err = installPlan(ctx, ns); err != nil {
			return err
		}
		if plan.Status.Phase != phase {
			return fmt.Errorf("InstallPlan %s is %q", plan.Name, plan.Status.Phase)
		}
		return nil
	})
	return plan
}

// waitCSV waits until the CSV name in ns reaches phase and returns it.
func waitCSV(t *testing.T, ns, name string, phase operatorsv1alpha1.ClusterServiceVersionPhase, timeout time.Duration) *operatorsv1alpha1.ClusterServiceVersion {
	t.Helper()
	csv := &operatorsv1alpha1.ClusterServiceVersion{}
	waitOLM(t, ns, timeout, "CSV "+name+" to be "+string(phase), func(ctx context.Context) error {
		if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, csv); err != nil {
			return err
		}
		if csv.Status.Phase != phase {
			return fmt.Errorf("CSV %s is %q", name, csv.Status.Phase)
		}
		return nil
	})
	return csv
}

// waitOLM is testutil.Eventually with what OLM says in ns on failure.
func waitOLM(t *testing.T, ns string, timeout time.Duration, what string, cond func(ctx context.Context) error) {
	t.Helper()
	ctx := context.Background()
	if err := testutil.Poll(ctx, timeout, cond); err != nil {
		t.Fatalf("Waiting %s for %s: %v\nOLM says:\n%s%s", timeout, what, err, olmSays(ctx, ns), olm.logs(15))
	}
}

// installMonitoringCRDs creates testutil.MonitoringCRDs and waits until they are served.
func installMonitoringCRDs(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	var names []string
	for _, crd := range testutil.MonitoringCRDs() {
		if err := k8s.Create(ctx, crd); err != nil {
			t.Fatalf("Creating CRD %s: %v", crd.Name, err)
		}
		names = append(names, crd.Name)
	}
	if err := operatorenv.WaitEstablished(ctx, k8s, names...); err != nil {
		t.Fatal(err)
	}
}

// hasCondition reports whether conds has typ with status.
func hasCondition(conds []metav1.Condition, typ string, status metav1.ConditionStatus) bool {
	return slices.ContainsFunc(conds, func(c metav1.Condition) bool { return c.Type == typ && c.Status == status })
}
