package assignment

import (
	"flag"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
	"github.com/schedops/scheduler-profile-operator/scheduler/projection"
)

var updateGoldens = flag.Bool("update", false, "rewrite the golden files of controllers/testdata")

// servingProfile is a profile asking for schedulerName, served as served ("" none), created
// age seconds after the epoch, with the Available condition (none when empty).
func servingProfile(name, schedulerName, served string, age int64, available metav1.ConditionStatus) schedulingv1alpha1.SchedulerProfile {
	p := testutil.MakeProfile(name).SchedulerName(schedulerName).Obj()
	p.CreationTimestamp = metav1.Unix(age, 0)
	p.Status.SchedulerName = schedulerName
	p.Status.ServedSchedulerName = served
	if available != "" {
		p.Status.Conditions = []metav1.Condition{{Type: schedulingv1alpha1.ConditionAvailable, Status: available, Reason: "Because"}}
	}
	return *p
}

func TestAssignmentNames(t *testing.T) {
	deleting := servingProfile("binpack", "binpack", "binpack", 1, metav1.ConditionTrue)
	now := metav1.Now()
	deleting.DeletionTimestamp, deleting.Finalizers = &now, []string{"example.com/keep"}
	held := servingProfile("binpack", "binpack-v2", "binpack", 1, metav1.ConditionTrue)
	held.Status.Conditions = append(held.Status.Conditions, metav1.Condition{Type: schedulingv1alpha1.ConditionProgressing, Status: metav1.ConditionFalse, Reason: schedulingv1alpha1.ReasonPreviewRefused})
	cases := map[string]struct {
		profiles      []schedulingv1alpha1.SchedulerProfile
		wantServed    []string
		wantNotServed map[string]string
	}{
		"no profile": {},
		"served":     {profiles: []schedulingv1alpha1.SchedulerProfile{servingProfile("binpack", "binpack", "binpack", 1, metav1.ConditionTrue)}, wantServed: []string{"binpack"}},
		"not Available": {
			profiles:      []schedulingv1alpha1.SchedulerProfile{servingProfile("binpack", "binpack", "", 1, metav1.ConditionFalse)},
			wantNotServed: map[string]string{"binpack": "SchedulerProfile binpack is not Available (Because)"},
		},
		"no scheduler yet": {
			profiles:      []schedulingv1alpha1.SchedulerProfile{servingProfile("binpack", "binpack", "", 1, "")},
			wantNotServed: map[string]string{"binpack": "no scheduler of SchedulerProfile binpack runs yet"},
		},
		"being deleted": {
			profiles:      []schedulingv1alpha1.SchedulerProfile{deleting},
			wantNotServed: map[string]string{"binpack": "SchedulerProfile binpack is being deleted"},
		},
		// Served means running: a held rename keeps the old name served and the new one not.
		"a held rename": {
			profiles:      []schedulingv1alpha1.SchedulerProfile{held},
			wantServed:    []string{"binpack"},
			wantNotServed: map[string]string{"binpack-v2": "SchedulerProfile binpack is served as binpack: its change to binpack-v2 is not rolled out (PreviewRefused)"},
		},
		"the server serves, a newer claimant waits": {
			profiles: []schedulingv1alpha1.SchedulerProfile{
				servingProfile("a-claimant", "binpack", "", 2, metav1.ConditionFalse),
				servingProfile("z-holder", "binpack", "binpack", 1, metav1.ConditionTrue),
			},
			wantServed: []string{"binpack"},
		},
		"the oldest claimant's reason": {
			profiles: []schedulingv1alpha1.SchedulerProfile{
				servingProfile("z-old", "binpack", "", 1, metav1.ConditionFalse),
				servingProfile("a-new", "binpack", "", 2, ""),
			},
			wantNotServed: map[string]string{"binpack": "SchedulerProfile z-old is not Available (Because)"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			served, notServed := assignmentNames(tc.profiles)
			if diff := cmp.Diff(tc.wantServed, slices.Sorted(maps.Keys(served))); diff != "" && (len(tc.wantServed) != 0 || len(served) != 0) {
				t.Errorf("served (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantNotServed, notServed); diff != "" && (len(tc.wantNotServed) != 0 || len(notServed) != 0) {
				t.Errorf("not served (-want +got):\n%s", diff)
			}
		})
	}
}

// TestAssignmentPoliciesGolden: the policies and bindings of namespace assignment, with one
// profile that restricts its namespaces, one whose node restrictions are projected, and with
// PodGroups served, are those of
// testdata/assignment-policies.golden (go test ./controllers -run TestAssignmentPoliciesGolden -update).
func TestAssignmentPoliciesGolden(t *testing.T) {
	access := []profileAccess{{profile: "gpu", names: []string{"gpu", "gpu-old"}, selector: &metav1.LabelSelector{
		MatchLabels:      map[string]string{"team": "ml"},
		MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"dev"}}},
	}}}
	var out []byte
	names := namesData(map[string]bool{"binpack": true}, map[string]string{"gpu": "SchedulerProfile gpu is not Available (NoReplicasAvailable)"})
	pool := projection.Restriction{Terms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
		{Key: "pool", Operator: corev1.NodeSelectorOpIn, Values: []string{"b"}}, {Key: "arch", Operator: corev1.NodeSelectorOpExists}}}},
		Sources: []string{"NodePool nodeSelector (pool=b,arch)"}}
	projections := projectedNames{"binpack": {restriction: pool, note: pool.Note("binpack")}}
	for _, obj := range assignmentPolicies("schedops-system", names, access, true, projections) {
		b, err := yaml.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		out = append(append(out, "---\n"...), b...)
	}
	path := filepath.Join("testdata", "assignment-policies.golden")
	if *updateGoldens {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, out, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (write it with -update)", err)
	}
	if diff := cmp.Diff(string(want), string(out)); diff != "" {
		t.Errorf("the policies differ from %s (-want +got):\n%s", path, diff)
	}
}

func TestSelectorExpression(t *testing.T) {
	cases := map[string]struct {
		sel  *metav1.LabelSelector
		want string
	}{
		"nil":   {want: "true"},
		"empty": {sel: &metav1.LabelSelector{}, want: "true"},
		"labels and expressions": {
			sel: &metav1.LabelSelector{MatchLabels: map[string]string{"b": "2", "a": "1"}, MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "c", Operator: metav1.LabelSelectorOpIn, Values: []string{"x", "y"}},
				{Key: "d", Operator: metav1.LabelSelectorOpDoesNotExist},
				{Key: "e", Operator: metav1.LabelSelectorOpExists},
			}},
			want: `("a" in L && L["a"] == "1") && ("b" in L && L["b"] == "2") && ("c" in L && L["c"] in ["x", "y"]) && !("d" in L) && ("e" in L)`,
		},
		"an unknown operator admits nobody": {sel: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Near"}}}, want: "false"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := selectorExpression(tc.sel, "L"); got != tc.want {
				t.Errorf("selectorExpression = %s, want %s", got, tc.want)
			}
		})
	}
}

// TestAccessOf: a profile restricts the names it serves and asks for, never one another profile
// serves or that it may not have.
func TestAccessOf(t *testing.T) {
	ml := &schedulingv1alpha1.NamespaceSelector{MatchLabels: map[string]string{"team": "ml"}}
	restricted := func(p schedulingv1alpha1.SchedulerProfile) schedulingv1alpha1.SchedulerProfile {
		p.Spec.Access.NamespaceSelector = ml
		return p
	}
	conflicting := restricted(servingProfile("thief", "gpu", "", 2, ""))
	conflicting.Status.Conditions = []metav1.Condition{{Type: schedulingv1alpha1.ConditionConfigValid, Status: metav1.ConditionFalse, Reason: schedulingv1alpha1.ReasonSchedulerNameConflict}}
	cases := map[string]struct {
		profiles []schedulingv1alpha1.SchedulerProfile
		want     map[string][]string
	}{
		"unrestricted": {profiles: []schedulingv1alpha1.SchedulerProfile{servingProfile("gpu", "gpu", "gpu", 1, "")}, want: map[string][]string{}},
		"an empty selector": {profiles: []schedulingv1alpha1.SchedulerProfile{func() schedulingv1alpha1.SchedulerProfile {
			p := servingProfile("gpu", "gpu", "gpu", 1, "")
			p.Spec.Access.NamespaceSelector = &schedulingv1alpha1.NamespaceSelector{}
			return p
		}()}, want: map[string][]string{}},
		"served and asked": {profiles: []schedulingv1alpha1.SchedulerProfile{restricted(servingProfile("gpu", "gpu-v2", "gpu", 1, ""))}, want: map[string][]string{"gpu": {"gpu", "gpu-v2"}}},
		"not served yet":   {profiles: []schedulingv1alpha1.SchedulerProfile{restricted(servingProfile("gpu", "gpu", "", 1, ""))}, want: map[string][]string{"gpu": {"gpu"}}},
		"another profile serves the name it asks for": {
			profiles: []schedulingv1alpha1.SchedulerProfile{servingProfile("owner", "gpu", "gpu", 1, ""), restricted(servingProfile("thief", "gpu", "", 2, ""))},
			want:     map[string][]string{},
		},
		"refused the name it asks for": {profiles: []schedulingv1alpha1.SchedulerProfile{conflicting}, want: map[string][]string{}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := map[string][]string{}
			for _, a := range accessOf(tc.profiles) {
				got[a.profile] = a.names
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("accessOf (-want +got):\n%s", diff)
			}
		})
	}
}
