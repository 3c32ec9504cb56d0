package controllers

import (
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
	"github.com/schedops/scheduler-profile-operator/scheduler/profile"
)

// TestMembersOverTheLimitsAreRefusedAlone: past MaxMembersPerScheduler the youngest member is
// refused (TooManyMembers) and the others are planned; a member whose entry pushes the
// configuration past MaxConfigBytes is refused (ConfigTooLarge, with the size) and the others'
// entries are in the configuration.
func TestMembersOverTheLimitsAreRefusedAlone(t *testing.T) {
	s := testutil.MakeScheduler("batch").Obj()
	proc := sharedProcess(s)
	r := fakeObjects()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	makeMember := func(name string, i int) schedulingv1alpha1.SchedulerProfile {
		p := testutil.MakeProfile(name).SchedulerRef("batch").Obj()
		p.CreationTimestamp = metav1.NewTime(base.Add(time.Duration(i) * time.Second))
		return *p
	}

	var all []schedulingv1alpha1.SchedulerProfile
	for i := range MaxMembersPerScheduler + 1 {
		all = append(all, makeMember(fmt.Sprintf("m-%03d", i), i))
	}
	pl, err := r.planMembers(s, proc, all, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range pl.members {
		want := ""
		if m.profile.Name == fmt.Sprintf("m-%03d", MaxMembersPerScheduler) {
			want = schedulingv1alpha1.ReasonTooManyMembers
		}
		if m.limit.reason != want || (want == "") != (m.entry != nil) {
			t.Errorf("member %s: limit %q, entry %v; want limit %q", m.profile.Name, m.limit.reason, m.entry != nil, want)
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
	pl, err = r.planMembers(s, proc, []schedulingv1alpha1.SchedulerProfile{small, big}, nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if m := pl.member("big"); m.limit.reason != schedulingv1alpha1.ReasonConfigTooLarge || !strings.Contains(m.limit.message, "with this profile the configuration of Scheduler batch would be ") || m.entry != nil {
		t.Errorf("big: limit %+v, entry %v; want ConfigTooLarge with the size and no entry", m.limit, m.entry != nil)
	}
	if m := pl.member("small"); m.refused() || pl.config == nil || len(pl.config.YAML) > MaxConfigBytes {
		t.Fatalf("small: refused %v; the configuration must hold it alone", m.refused())
	}
	entries, err := profile.ProfilesIn(pl.config.YAML)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := entries["small"]; !ok || len(entries) != 1 {
		t.Errorf("the configuration serves %d profiles, want small alone", len(entries))
	}
}
