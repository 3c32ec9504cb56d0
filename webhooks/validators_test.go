package webhooks

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
)

// TestCaughtUp: the cache has caught up when it holds every listed profile (but the one under
// review) at its listed version or a later one, and any profile the list lacks is newer than the
// list.
func TestCaughtUp(t *testing.T) {
	listed := func(rv string, items ...[2]string) *metav1.PartialObjectMetadataList {
		l := &metav1.PartialObjectMetadataList{ListMeta: metav1.ListMeta{ResourceVersion: rv}}
		for _, it := range items {
			l.Items = append(l.Items, metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: it[0], ResourceVersion: it[1]}})
		}
		return l
	}
	cached := func(items ...[2]string) []schedulingv1alpha1.SchedulerProfile {
		var out []schedulingv1alpha1.SchedulerProfile
		for _, it := range items {
			out = append(out, schedulingv1alpha1.SchedulerProfile{ObjectMeta: metav1.ObjectMeta{Name: it[0], ResourceVersion: it[1]}})
		}
		return out
	}
	tests := map[string]struct {
		stored *metav1.PartialObjectMetadataList
		cached []schedulingv1alpha1.SchedulerProfile
		want   bool
	}{
		"same":                      {listed("10", [2]string{"a", "5"}, [2]string{"b", "9"}), cached([2]string{"a", "5"}, [2]string{"b", "9"}), true},
		"a newer version cached":    {listed("10", [2]string{"a", "5"}), cached([2]string{"a", "11"}), true},
		"an older version cached":   {listed("10", [2]string{"a", "5"}), cached([2]string{"a", "4"}), false},
		"a listed profile missing":  {listed("10", [2]string{"a", "5"}, [2]string{"b", "9"}), cached([2]string{"a", "5"}), false},
		"the reviewed one is stale": {listed("10", [2]string{"a", "5"}, [2]string{"r", "9"}), cached([2]string{"a", "5"}, [2]string{"r", "2"}), true},
		"created after the list":    {listed("10", [2]string{"a", "5"}), cached([2]string{"a", "5"}, [2]string{"c", "12"}), true},
		"deleted before the list":   {listed("10", [2]string{"a", "5"}), cached([2]string{"a", "5"}, [2]string{"d", "7"}), false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := caughtUp(tc.stored, tc.cached, "r"); got != tc.want {
				t.Errorf("caughtUp = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestValidateAccess(t *testing.T) {
	cases := map[string]struct {
		sel     *schedulingv1alpha1.NamespaceSelector
		wantErr string
	}{
		"unset":        {},
		"match labels": {sel: &schedulingv1alpha1.NamespaceSelector{MatchLabels: map[string]string{"team": "ml"}}},
		"an unknown operator": {sel: &schedulingv1alpha1.NamespaceSelector{MatchExpressions: []schedulingv1alpha1.NamespaceSelectorRequirement{{Key: "team", Operator: "Near"}}},
			wantErr: "spec.access.namespaceSelector.matchExpressions[0].operator"},
		"In without values": {sel: &schedulingv1alpha1.NamespaceSelector{MatchExpressions: []schedulingv1alpha1.NamespaceSelectorRequirement{{Key: "team", Operator: metav1.LabelSelectorOpIn}}},
			wantErr: "spec.access.namespaceSelector.matchExpressions[0].values"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := &schedulingv1alpha1.SchedulerProfile{}
			p.Spec.Access.NamespaceSelector = tc.sel
			errs := ValidateAccess(p)
			if tc.wantErr == "" && len(errs) > 0 || tc.wantErr != "" && (len(errs) == 0 || !strings.Contains(errs.ToAggregate().Error(), tc.wantErr)) {
				t.Errorf("ValidateAccess = %v, want an error naming %q", errs, tc.wantErr)
			}
		})
	}
}
