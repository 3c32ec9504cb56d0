package core

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/controllers/plan"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
	"github.com/schedops/scheduler-profile-operator/internal/testutil/fifosort"
	"github.com/schedops/scheduler-profile-operator/scheduler/profile"
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
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "x.scheduler", Namespace: testSettings.Namespace, Labels: map[string]string{plan.LabelManagedBy: schedulingv1alpha1.FieldManager}}}
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

// TestQueueSortRefusals: a member whose queue sort differs from its Scheduler's is refused alone,
// whatever its age; the Scheduler's queue sort is that of the configuration that runs, and the
// members change it only all together. On main before this rule, the oldest member's queue sort
// was the reference, so the oldest member's change refused every other member instead.
func TestQueueSortRefusals(t *testing.T) {
	fifosort.Use(t)
	fifo := &schedulingv1alpha1.Plugins{QueueSort: schedulingv1alpha1.PluginSet{
		Disabled: []schedulingv1alpha1.Plugin{{Name: "*"}},
		Enabled:  []schedulingv1alpha1.Plugin{{Name: fifosort.Name}},
	}}
	entry := func(name string, plugins *schedulingv1alpha1.Plugins) *profile.Profile {
		p := testutil.MakeProfile(name).Obj()
		p.Spec.Plugins = plugins
		e, err := profile.RenderProfile(p)
		if err != nil {
			t.Fatal(err)
		}
		e = profile.CanonicalQueueSort(e, nil)
		return &e
	}
	mk := func(name string, minutesAgo int, plugins *schedulingv1alpha1.Plugins) *plan.Member {
		p := createdAt(testutil.MakeProfile(name).SchedulerRef("s").Obj(), minutesAgo)
		e := entry(name, plugins)
		return &plan.Member{Profile: p, SchedulerName: name, Entry: e, Latest: e}
	}
	tests := []struct {
		name        string
		members     []*plan.Member
		running     map[string]*profile.Profile
		wantRefused []string
	}{
		{name: "all alike", members: []*plan.Member{mk("old", 10, nil), mk("young", 1, nil)}},
		{name: "all change together", members: []*plan.Member{mk("old", 10, fifo), mk("young", 1, fifo)},
			running: map[string]*profile.Profile{"old": entry("old", nil), "young": entry("young", nil)}},
		{name: "the oldest member differs from the running configuration", members: []*plan.Member{mk("old", 10, fifo), mk("young", 1, nil)},
			running: map[string]*profile.Profile{"old": entry("old", nil), "young": entry("young", nil)}, wantRefused: []string{"old"}},
		{name: "a younger member differs from the running configuration", members: []*plan.Member{mk("old", 10, nil), mk("young", 1, fifo)},
			running: map[string]*profile.Profile{"old": entry("old", nil)}, wantRefused: []string{"young"}},
		{name: "nothing runs: the oldest member's", members: []*plan.Member{mk("old", 10, fifo), mk("young", 1, nil), mk("new", 0, nil)},
			wantRefused: []string{"new", "young"}},
		{name: "a member refused for another reason counts with its running entry", members: func() []*plan.Member {
			old, young := mk("old", 10, fifo), mk("young", 1, fifo)
			young.Invalid, young.Entry = "invalid", entry("young", nil)
			return []*plan.Member{old, young}
		}(), running: map[string]*profile.Profile{"young": entry("young", nil)}, wantRefused: []string{"old"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for m, msg := range plan.QueueSortRefusals(nil, tc.members, tc.running, nil) {
				if !strings.Contains(msg, "the Scheduler sorts its queue with") {
					t.Errorf("message %q does not name the Scheduler's queue sort", msg)
				}
				got = append(got, m.Profile.Name)
			}
			slices.Sort(got)
			if diff := cmp.Diff(tc.wantRefused, got); diff != "" {
				t.Errorf("refused (-want +got):\n%s", diff)
			}
		})
	}
}

// TestMembersOverTheLimitsAreRefusedAlone: past plan.MaxMembersPerScheduler the youngest member is
// refused (TooManyMembers) and the others are planned; a member whose entry pushes the
// configuration past plan.MaxConfigBytes is refused (ConfigTooLarge, with the size) and the others'
// entries are in the configuration.
func TestMembersOverTheLimitsAreRefusedAlone(t *testing.T) {
	s := testutil.MakeScheduler("batch").Obj()
	proc := plan.SharedProcess(s)
	r := fakeObjects()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	makeMember := func(name string, i int) schedulingv1alpha1.SchedulerProfile {
		p := testutil.MakeProfile(name).SchedulerRef("batch").Obj()
		p.CreationTimestamp = metav1.NewTime(base.Add(time.Duration(i) * time.Second))
		return *p
	}

	var all []schedulingv1alpha1.SchedulerProfile
	for i := range plan.MaxMembersPerScheduler + 1 {
		all = append(all, makeMember(fmt.Sprintf("m-%03d", i), i))
	}
	pl, err := r.PlanMembers(s, proc, all, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range pl.Members {
		want := ""
		if m.Profile.Name == fmt.Sprintf("m-%03d", plan.MaxMembersPerScheduler) {
			want = schedulingv1alpha1.ReasonTooManyMembers
		}
		if m.Limit.Reason != want || (want == "") != (m.Entry != nil) {
			t.Errorf("member %s: limit %q, entry %v; want limit %q", m.Profile.Name, m.Limit.Reason, m.Entry != nil, want)
		}
	}

	var prefs []string
	for i := range 12000 {
		prefs = append(prefs, fmt.Sprintf(`{"key": "example.com/label-%05d-abcdefghijklmnopqrstuvwxyz", "values": ["value-%05d-abcdefghij"]}`, i, i))
	}
	big := makeMember("big", 1)
	big.Spec = testutil.MakeProfile("big").SchedulerRef("batch").
		PluginConfig("NodeLabelPreference", `{"preferences": [`+strings.Join(prefs, ",")+`]}`).Obj().Spec
	small := makeMember("small", 0)
	pl, err = r.PlanMembers(s, proc, []schedulingv1alpha1.SchedulerProfile{small, big}, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if m := pl.Member("big"); m.Limit.Reason != schedulingv1alpha1.ReasonConfigTooLarge || !strings.Contains(m.Limit.Message, "with this profile the configuration of Scheduler batch would be ") || m.Entry != nil {
		t.Errorf("big: limit %+v, entry %v; want ConfigTooLarge with the size and no entry", m.Limit, m.Entry != nil)
	}
	if m := pl.Member("small"); m.Refused() || pl.Config == nil || len(pl.Config.YAML) > plan.MaxConfigBytes {
		t.Fatalf("small: refused %v; the configuration must hold it alone", m.Refused())
	}
	entries, err := profile.ProfilesIn(pl.Config.YAML)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := entries["small"]; !ok || len(entries) != 1 {
		t.Errorf("the configuration serves %d profiles, want small alone", len(entries))
	}
}
