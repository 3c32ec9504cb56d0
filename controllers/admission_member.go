package controllers

import (
	"context"
	"fmt"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/scheduler/profile"
)

// cacheCatchUp is how long a review waits for the cache to hold the profiles the apiserver
// lists before it lists them from the apiserver instead.
const cacheCatchUp = time.Second

// storedProfiles are the stored profiles, read from the cache once it holds every one of them at
// least at the version the apiserver lists now: a profile stored a moment ago counts in the next
// one's name and queue-sort checks, as if the apiserver were read, while a review decodes the
// profiles' metadata and not every spec. The profile under review (reviewed) is not waited for:
// the review replaces it. A cache that does not catch up within cacheCatchUp (a profile deleted
// during the review) gives way to a list from the apiserver. The items are the cache's own
// objects: only read them.
func (v *profileValidator) storedProfiles(ctx context.Context, reviewed string) ([]schedulingv1alpha1.SchedulerProfile, error) {
	var list schedulingv1alpha1.SchedulerProfileList
	if v.stored == nil {
		if err := v.client.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
			return nil, fmt.Errorf("listing SchedulerProfiles: %w", err)
		}
		return list.Items, nil
	}
	stored := &metav1.PartialObjectMetadataList{}
	stored.SetGroupVersionKind(schedulingv1alpha1.GroupVersion.WithKind("SchedulerProfileList"))
	if err := v.stored.List(ctx, stored); err != nil {
		return nil, fmt.Errorf("listing SchedulerProfiles: %w", err)
	}
	err := wait.PollUntilContextTimeout(ctx, 5*time.Millisecond, cacheCatchUp, true, func(ctx context.Context) (bool, error) {
		list = schedulingv1alpha1.SchedulerProfileList{}
		if err := v.client.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
			return false, fmt.Errorf("listing SchedulerProfiles: %w", err)
		}
		return caughtUp(stored, list.Items, reviewed), nil
	})
	if err == nil {
		return list.Items, nil
	}
	if !wait.Interrupted(err) || ctx.Err() != nil {
		return nil, err
	}
	list = schedulingv1alpha1.SchedulerProfileList{}
	if err := v.stored.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("listing SchedulerProfiles: %w", err)
	}
	return list.Items, nil
}

// caughtUp tells whether cached holds every profile of stored (but reviewed) at its version or a
// newer one, and no profile that stored lacks unless the cache got it after stored was listed.
func caughtUp(stored *metav1.PartialObjectMetadataList, cached []schedulingv1alpha1.SchedulerProfile, reviewed string) bool {
	versions := make(map[string]string, len(cached))
	for i := range cached {
		versions[cached[i].Name] = cached[i].ResourceVersion
	}
	seen := 0
	for i := range stored.Items {
		m := &stored.Items[i]
		if m.Name == reviewed {
			continue
		}
		rv, ok := versions[m.Name]
		if !ok || !atLeast(rv, m.ResourceVersion) {
			return false
		}
		seen++
	}
	if _, ok := versions[reviewed]; ok {
		seen++
	}
	if seen == len(cached) {
		return true
	}
	// The cache holds profiles the list lacks: created since (newer than the list), or deleted
	// before it and not yet gone from the cache.
	listed := make(map[string]bool, len(stored.Items))
	for i := range stored.Items {
		listed[stored.Items[i].Name] = true
	}
	for i := range cached {
		if p := &cached[i]; p.Name != reviewed && !listed[p.Name] && !atLeast(p.ResourceVersion, stored.ResourceVersion) {
			return false
		}
	}
	return true
}

// atLeast tells whether resource version rv is version want or a later one. Resource versions
// are etcd revisions, which grow; one that is not a number only equals.
func atLeast(rv, want string) bool {
	if rv == want {
		return true
	}
	a, errA := strconv.ParseUint(rv, 10, 64)
	b, errB := strconv.ParseUint(want, 10, 64)
	return errA == nil && errB == nil && a >= b
}

// reviewMember is what the plan of Scheduler s makes of p, the profile under review, with p in
// place of its stored version. The plan of the stored profiles is the one both reconcilers
// remember (planScheduler); p is checked alone (one scheduler built, remembered by its spec) and
// against that plan's other members: the oldest one's queue sort, the member limit and the size
// of the configuration. A Scheduler at its member limit, or whose configuration might not hold
// p's entry, is planned whole with p in it.
func (v *profileValidator) reviewMember(ctx context.Context, s *schedulingv1alpha1.Scheduler, proc *process, p *schedulingv1alpha1.SchedulerProfile, all []schedulingv1alpha1.SchedulerProfile, served servedNames) (*member, error) {
	d, err := v.liveDeployment(ctx, proc)
	if err != nil {
		return nil, err
	}
	base, err := v.planScheduler(ctx, s, proc, d)
	if err != nil {
		return nil, err
	}
	m := v.checkMember(p, all, proc, served, processKey(proc, v.settings))
	if m.refused() {
		return m, nil
	}
	running, err := v.runningEntries(ctx, s, proc, d)
	if err != nil {
		return nil, err
	}
	if v.fitsInPlan(base, proc, m, running) {
		return m, nil
	}
	pl, err := v.planMembers(s, proc, all, running, served, nil)
	if err != nil {
		return nil, err
	}
	return pl.member(p.Name), nil
}

// fitsInPlan checks a valid member m against the other members of base and sets its queue-sort
// conflict, as planMembers would with m in base (queueSortRefusals, with every other member as
// planMembers sees it before its queue sort is decided). It tells false, and checks nothing,
// when base refuses a member for a limit, m would make one member too many, or base's
// configuration with the whole of m's configuration alone might pass MaxConfigBytes: then only
// the whole plan says which members fit.
func (v *profileValidator) fitsInPlan(base *plan, proc *process, m *member, running map[string]*profile.Profile) bool {
	members := make([]*member, 0, len(base.members)+1)
	others := 0
	for _, o := range base.members {
		if o.profile.Name == m.profile.Name {
			continue
		}
		if o.limit.reason != "" {
			return false
		}
		if o.queueSortConflict != "" {
			undecided := *o
			undecided.queueSortConflict, undecided.entry = "", o.latest
			o = &undecided
		}
		if o.entry != nil {
			others++
		}
		members = append(members, o)
	}
	if others+1 > v.settings.memberLimit() {
		return false
	}
	size := m.aloneBytes
	if base.config != nil {
		size += len(base.config.YAML)
	}
	if size > MaxConfigBytes {
		return false
	}
	m.queueSortConflict = queueSortRefusals(append(members, m), running, proc.run.FeatureGates)[m]
	return true
}
