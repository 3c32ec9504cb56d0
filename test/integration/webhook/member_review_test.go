package webhook

import (
	"context"
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
)

// TestMemberReviewBuildsOnlyThatMember: the review of a member's new spec builds one scheduler,
// of that member alone, and no scheduler of the combined configuration: the other members come
// from the plan the reconcilers remember, with the member replaced.
func TestMemberReviewBuildsOnlyThatMember(t *testing.T) {
	ctx := t.Context()
	const sched = "review-plan"
	create(t, testutil.MakeScheduler(sched).Obj())
	names := []string{sched + "-a", sched + "-b", sched + "-c"} // maxMembers
	for _, name := range names {
		create(t, testutil.MakeProfile(name).SchedulerRef(sched).Obj())
	}
	// The reconcilers have planned the Scheduler once it serves every member.
	err := testutil.Poll(ctx, waitTimeout, func(ctx context.Context) error {
		s := &schedulingv1alpha1.Scheduler{}
		if err := k8sClient.Get(ctx, client.ObjectKey{Name: sched}, s); err != nil {
			return err
		}
		if len(s.Status.Profiles) != len(names) {
			return fmt.Errorf("Scheduler %s serves %d profiles, want %d", sched, len(s.Status.Profiles), len(names))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	const reviews = 3
	member, combined := testutil.SchedulerBuilds(t, "member"), testutil.SchedulerBuilds(t, "combined")
	for i := range reviews {
		// Read again each time, and on a conflict: the operator writes the member's status
		// between a read and the update. A conflict is found before admission, so it reviews
		// nothing.
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			q := &schedulingv1alpha1.SchedulerProfile{}
			if err := k8sClient.Get(ctx, client.ObjectKey{Name: names[1]}, q); err != nil {
				return err
			}
			q.Spec.PercentageOfNodesToScore = ptr.To(int32(30 + i))
			return k8sClient.Update(ctx, q, client.DryRunAll)
		})
		if err != nil {
			t.Fatalf("A dry-run update of member %s: %v", names[1], err)
		}
	}
	if got := testutil.SchedulerBuilds(t, "member") - member; got != reviews {
		t.Errorf("Schedulers built of a member alone for %d reviews of new specs: %v, want %d", reviews, got, reviews)
	}
	if got := testutil.SchedulerBuilds(t, "combined") - combined; got != 0 {
		t.Errorf("Schedulers built of the combined configuration for %d reviews: %v, want 0", reviews, got)
	}
}

// TestReviewCountsTheProfileStoredJustBefore: the review reads the operator's cache only once
// it holds what the apiserver stores, so a profile created a moment before counts: a second
// profile that asks for its scheduler name right after it is refused, round after round.
func TestReviewCountsTheProfileStoredJustBefore(t *testing.T) {
	ctx := t.Context()
	for i := range 5 {
		first := testutil.MakeProfile(fmt.Sprintf("just-stored-%d", i)).Obj()
		create(t, first)
		claim := testutil.MakeProfile(fmt.Sprintf("just-stored-%d-claim", i)).SchedulerName(first.Name).Obj()
		err := k8sClient.Create(ctx, claim, client.DryRunAll)
		if !apierrors.IsInvalid(err) {
			t.Fatalf("Round %d: a claim on the scheduler name of %s, created just before: %v, want the webhook's refusal", i, first.Name, err)
		}
	}
}

// create creates obj and deletes it at the end of the test.
func create(t *testing.T, obj client.Object) {
	t.Helper()
	if err := k8sClient.Create(t.Context(), obj); err != nil {
		t.Fatalf("Creating %s: %v", obj.GetName(), err)
	}
	t.Cleanup(func() { _ = k8sClient.Delete(context.Background(), obj) })
}
