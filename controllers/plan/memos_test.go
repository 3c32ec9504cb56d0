package plan

import (
	"errors"
	"reflect"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
	"github.com/schedops/scheduler-profile-operator/scheduler/profile"
)

// TestPlanFingerprint: the fingerprint of a Scheduler's plan does not depend on the order the
// cache lists the profiles in, nor on their status, and changes with what planning reads.
func TestPlanFingerprint(t *testing.T) {
	s := testutil.MakeScheduler("batch").Obj()
	profiles := func() []schedulingv1alpha1.SchedulerProfile {
		a := testutil.MakeProfile("a").UID(types.UID("uid-a")).SchedulerRef("batch").Obj()
		b := testutil.MakeProfile("b").UID(types.UID("uid-b")).SchedulerRef("batch").Obj()
		a.Generation, b.Generation = 1, 1
		return []schedulingv1alpha1.SchedulerProfile{*a, *b}
	}
	st := Settings{Namespace: "ns"}
	fingerprint := func(s *schedulingv1alpha1.Scheduler, all []schedulingv1alpha1.SchedulerProfile, st Settings) string {
		return planFingerprint(s, SharedProcess(s), st, all, "abc", nil, ServedNames{}, nil)
	}
	base := fingerprint(s, profiles(), st)
	for _, tc := range []struct {
		name string
		s    *schedulingv1alpha1.Scheduler
		all  func([]schedulingv1alpha1.SchedulerProfile) []schedulingv1alpha1.SchedulerProfile
		st   Settings
		same bool
	}{
		{name: "listed in another order", same: true, all: func(p []schedulingv1alpha1.SchedulerProfile) []schedulingv1alpha1.SchedulerProfile {
			return []schedulingv1alpha1.SchedulerProfile{p[1], p[0]}
		}},
		{name: "a status written", same: true, all: func(p []schedulingv1alpha1.SchedulerProfile) []schedulingv1alpha1.SchedulerProfile {
			p[0].Status.ConfigHash, p[0].ResourceVersion = "new", "99"
			return p
		}},
		{name: "a spec changed", all: func(p []schedulingv1alpha1.SchedulerProfile) []schedulingv1alpha1.SchedulerProfile {
			p[0].Generation = 2
			return p
		}},
		{name: "a profile recreated", all: func(p []schedulingv1alpha1.SchedulerProfile) []schedulingv1alpha1.SchedulerProfile {
			p[1].UID = "uid-b2"
			return p
		}},
		{name: "a profile gone", all: func(p []schedulingv1alpha1.SchedulerProfile) []schedulingv1alpha1.SchedulerProfile { return p[:1] }},
		{name: "the Scheduler's gates", s: func() *schedulingv1alpha1.Scheduler {
			s := testutil.MakeScheduler("batch").Obj()
			s.Spec.FeatureGates = map[string]bool{"GenericWorkload": true}
			return s
		}()},
		{name: "the member limit", st: Settings{Namespace: "ns", MaxMembers: 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sc, all, set := s, profiles(), st
			if tc.s != nil {
				sc = tc.s
			}
			if tc.all != nil {
				all = tc.all(all)
			}
			if tc.st.Namespace != "" {
				set = tc.st
			}
			if got := fingerprint(sc, all, set); (got == base) != tc.same {
				t.Errorf("same fingerprint: %v, want %v", got == base, tc.same)
			}
		})
	}
}

// TestMemoEmptiesWhenFull: a memo keeps at most its maximum of entries.
func TestMemoEmptiesWhenFull(t *testing.T) {
	m := newMemo[int](2)
	m.put("a", 1)
	m.put("b", 2)
	if v, ok := m.get("a"); !ok || v != 1 {
		t.Fatalf("get(a) = %v, %v, want 1, true", v, ok)
	}
	m.put("c", 3)
	if _, ok := m.get("a"); ok {
		t.Error("a is still remembered after the memo was full")
	}
	if v, ok := m.get("c"); !ok || v != 3 {
		t.Errorf("get(c) = %v, %v, want 3, true", v, ok)
	}
}

// TestMemoComputesOnceAtATime: callers of one key at the same time wait for one computation, and
// an error is not remembered.
func TestMemoComputesOnceAtATime(t *testing.T) {
	m := newMemo[int](8)
	var computed atomic.Int32
	release := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := m.do("k", func() (int, error) {
				computed.Add(1)
				<-release
				return 7, nil
			})
			if v != 7 || err != nil {
				t.Errorf("do = %v, %v, want 7, nil", v, err)
			}
		}()
	}
	time.Sleep(50 * time.Millisecond)
	close(release)
	wg.Wait()
	if n := computed.Load(); n != 1 {
		t.Errorf("computed %d times, want once", n)
	}
	if _, err := m.do("e", func() (int, error) { return 0, errors.New("boom") }); err == nil {
		t.Fatal("want the error")
	}
	if v, err := m.do("e", func() (int, error) { return 1, nil }); v != 1 || err != nil {
		t.Errorf("after an error do = %v, %v, want 1, nil: errors are not remembered", v, err)
	}
}

// TestConfigMapParsedOnce: the cache's index of scheduler names parses a configuration
// ConfigMap when it arrives, and the passes that read its running entries reuse that parse:
// a Scheduler's configuration of many members is parsed once, not once by the index and
// again by the next pass.
func TestConfigMapParsedOnce(t *testing.T) {
	var entries []profile.Profile
	for _, name := range []string{"a", "b"} {
		e, err := profile.RenderProfile(testutil.MakeProfile(name).SchedulerRef("batch").Obj())
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, e)
	}
	cfg, err := profile.RenderProcess(profile.Process{Namespace: "ns", LeaseName: "batch"}, entries)
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "batch.config-" + cfg.Hash, Namespace: "ns", UID: types.UID("uid-parsed-once")},
		Data:       map[string]string{ConfigFileKey: string(cfg.YAML)},
	}
	ms := NewMemos()
	names := ConfigSchedulerNames(ms, cm)
	slices.Sort(names)
	if diff := cmp.Diff([]string{"a", "b"}, names); diff != "" {
		t.Errorf("Indexed scheduler names (-want +got):\n%s", diff)
	}
	indexed, ok := ms.runningProfiles.get(string(cm.UID))
	if !ok {
		t.Fatalf("The index's parse of ConfigMap %s is not remembered for the passes", cm.Name)
	}
	got, err := ms.ProfilesIn(cm)
	if err != nil {
		t.Fatal(err)
	}
	if reflect.ValueOf(got).Pointer() != reflect.ValueOf(indexed).Pointer() {
		t.Errorf("A pass parsed ConfigMap %s again instead of reusing the index's parse", cm.Name)
	}
}
