package integration

import (
	"context"
	"fmt"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
)

// TestStatusCountsAssignedNamespaces: a profile's status counts the Namespaces labelled with its
// scheduler name and names the first five in order; relabelling one to another profile moves it
// between the two statuses, and removing the label takes it out.
func TestStatusCountsAssignedNamespaces(t *testing.T) {
	k := suiteCluster()
	k.startOperator(t, cfg)
	a, b := uniqueName("counted-a"), uniqueName("counted-b")
	k.createProfile(t, testutil.MakeProfile(a).Obj())
	k.createProfile(t, testutil.MakeProfile(b).Obj())

	var names []string
	for i := range 6 {
		name := fmt.Sprintf("%s-%d", a, i)
		names = append(names, name)
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{schedulingv1alpha1.LabelAssignSchedulerName: a}}}
		if err := k.admin.Create(t.Context(), ns); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = k.admin.Delete(context.Background(), ns) })
	}
	assigned := func(count int32, first ...string) func(*schedulingv1alpha1.SchedulerProfile) error {
		return func(p *schedulingv1alpha1.SchedulerProfile) error {
			got := p.Status.AssignedNamespaces
			if got.Count != count || !slices.Equal(got.Names, first) {
				return fmt.Errorf("assignedNamespaces %+v, want %d %v", got, count, first)
			}
			return nil
		}
	}
	k.waitForProfile(t, a, "to count 6 namespaces", assigned(6, names[:5]...))
	k.waitForProfile(t, b, "to count none", assigned(0))

	relabel := func(name string, labels map[string]string) {
		t.Helper()
		ns := &corev1.Namespace{}
		if err := k.admin.Get(t.Context(), client.ObjectKey{Name: name}, ns); err != nil {
			t.Fatal(err)
		}
		ns.Labels = labels
		if err := k.admin.Update(t.Context(), ns); err != nil {
			t.Fatal(err)
		}
	}
	relabel(names[0], map[string]string{schedulingv1alpha1.LabelAssignSchedulerName: b})
	k.waitForProfile(t, a, "to count 5 after one moved", assigned(5, names[1:6]...))
	k.waitForProfile(t, b, "to count the one that moved", assigned(1, names[0]))
	relabel(names[0], nil)
	k.waitForProfile(t, b, "to count none after the label is removed", assigned(0))
}
