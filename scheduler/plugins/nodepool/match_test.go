package nodepool

import (
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// TestInPoolMatchesLabelSelector checks the plugin's own matching against labels.Selector, which
// it replaces for speed, on every operator a LabelSelector has and nodes with and without the
// keys: both must select the same nodes.
func TestInPoolMatchesLabelSelector(t *testing.T) {
	expr := func(op metav1.LabelSelectorOperator, values ...string) metav1.LabelSelectorRequirement {
		return metav1.LabelSelectorRequirement{Key: "pool", Operator: op, Values: values}
	}
	selectors := []*metav1.LabelSelector{
		{},
		{MatchLabels: map[string]string{"pool": "a"}},
		{MatchLabels: map[string]string{"pool": "a", "zone": "x"}},
		{MatchExpressions: []metav1.LabelSelectorRequirement{expr(metav1.LabelSelectorOpIn, "a", "b")}},
		{MatchExpressions: []metav1.LabelSelectorRequirement{expr(metav1.LabelSelectorOpNotIn, "a", "b")}},
		{MatchExpressions: []metav1.LabelSelectorRequirement{expr(metav1.LabelSelectorOpExists)}},
		{MatchExpressions: []metav1.LabelSelectorRequirement{expr(metav1.LabelSelectorOpDoesNotExist)}},
		{MatchLabels: map[string]string{"zone": "x"}, MatchExpressions: []metav1.LabelSelectorRequirement{expr(metav1.LabelSelectorOpNotIn, "c")}},
	}
	nodeLabels := []map[string]string{
		nil,
		{"pool": "a"},
		{"pool": "b"},
		{"pool": "c", "zone": "x"},
		{"pool": "a", "zone": "x"},
		{"pool": "a", "zone": "y"},
		{"pool": ""},
		{"zone": "x"},
	}
	for i, sel := range selectors {
		pl := newNodePool(t, sel)
		want, err := metav1.LabelSelectorAsSelector(sel)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range nodeLabels {
			t.Run(fmt.Sprintf("selector %d %v", i, l), func(t *testing.T) {
				node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Labels: l}}
				if got, want := pl.inPool(node), want.Matches(labels.Set(l)); got != want {
					t.Errorf("inPool(%v) with selector %v = %v, labels.Selector says %v", l, sel, got, want)
				}
			})
		}
	}
}
