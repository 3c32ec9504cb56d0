package assignment

import (
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/fields"
)

// TestPendingPodsSelector: the list of pending pods leaves out the default scheduler's and those
// of the served names, in order, up to strandedSelectorNames of them.
func TestPendingPodsSelector(t *testing.T) {
	base := "status.phase=Pending,spec.nodeName=,spec.schedulerName!=default-scheduler"
	if got := pendingPodsSelector(nil).String(); got != base {
		t.Errorf("no served name: %q, want %q", got, base)
	}
	got := pendingPodsSelector(map[string]bool{"zeta": true, "binpack": true, "default-scheduler": true}).String()
	if want := base + ",spec.schedulerName!=binpack,spec.schedulerName!=zeta"; got != want {
		t.Errorf("served binpack, zeta and the default: %q, want %q", got, want)
	}
	many := map[string]bool{}
	for i := range strandedSelectorNames + 8 {
		many[fmt.Sprintf("p%03d", i)] = true
	}
	sel := pendingPodsSelector(many)
	if n := strings.Count(sel.String(), "spec.schedulerName!="); n != strandedSelectorNames+1 {
		t.Errorf("%d served names: %d terms on spec.schedulerName, want the default's and %d", len(many), n, strandedSelectorNames)
	}
	for name, want := range map[string]bool{"p000": false, fmt.Sprintf("p%03d", strandedSelectorNames-1): false, fmt.Sprintf("p%03d", strandedSelectorNames): true, "default-scheduler": false, "other": true} {
		if got := sel.Matches(fields.Set{"status.phase": "Pending", "spec.nodeName": "", "spec.schedulerName": name}); got != want {
			t.Errorf("a pending pod of %s selected %t, want %t", name, got, want)
		}
	}
}
