package controllers

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
)

// TestSchedulersWithLeavingMembers: an event of a scheduler Deployment enqueues the Schedulers
// whose status lists a member that names another Scheduler, or none, or is gone, and not the
// Schedulers whose members all still name them.
func TestSchedulersWithLeavingMembers(t *testing.T) {
	scheduler := func(name string, members ...string) *schedulingv1alpha1.Scheduler {
		s := testutil.MakeScheduler(name).Obj()
		for _, m := range members {
			s.Status.Profiles = append(s.Status.Profiles, schedulingv1alpha1.SchedulerMember{Name: m, SchedulerName: m})
		}
		return s
	}
	objs := []client.Object{
		scheduler("stays", "a", "b"),
		scheduler("left", "c", "moved"),
		scheduler("gone", "d", "deleted"),
		scheduler("dedicated", "own"),
		scheduler("empty"),
		testutil.MakeProfile("a").SchedulerRef("stays").Obj(),
		testutil.MakeProfile("b").SchedulerRef("stays").Obj(),
		testutil.MakeProfile("c").SchedulerRef("left").Obj(),
		testutil.MakeProfile("moved").SchedulerRef("stays").Obj(),
		testutil.MakeProfile("d").SchedulerRef("gone").Obj(),
		testutil.MakeProfile("own").Obj(),
	}
	r := fakeObjects(objs...)
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "x.scheduler", Namespace: testSettings.namespace, Labels: map[string]string{labelManagedBy: FieldManager}}}
	var got []string
	for _, req := range r.schedulersWithLeavingMembers(t.Context(), d) {
		got = append(got, req.Name)
	}
	slices.Sort(got)
	if diff := cmp.Diff([]string{"dedicated", "gone", "left"}, got); diff != "" {
		t.Errorf("Schedulers enqueued (-want +got):\n%s", diff)
	}
	d.Labels = nil
	if reqs := r.schedulersWithLeavingMembers(t.Context(), d); len(reqs) != 0 {
		t.Errorf("A Deployment the operator does not manage enqueued %v", reqs)
	}
}
