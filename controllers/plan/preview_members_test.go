package plan

import (
	"testing"

	"github.com/schedops/scheduler-profile-operator/controllers/preview"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
	"github.com/schedops/scheduler-profile-operator/scheduler/profile"
)

// TestGatePreviews: each member's change is previewed on its own; Guard holds only the member
// whose preview is missing or refuses it (it keeps its running entry, a new member stays out),
// and never the other members; an unchanged member or one in Off mode is not previewed.
func TestGatePreviews(t *testing.T) {
	s := testutil.MakeScheduler("shared").Obj()
	proc := SharedProcess(s)
	entryOf := func(p *schedulingv1alpha1.SchedulerProfile) *profile.Profile {
		e, err := profile.RenderProfile(p)
		if err != nil {
			t.Fatal(err)
		}
		return &e
	}
	// runningOf is the entry of p as the reconcilers read it back from a running ConfigMap.
	runningOf := func(p *schedulingv1alpha1.SchedulerProfile) *profile.Profile {
		cfg, err := profile.RenderProcess(proc.ConfigProcess(Settings{Namespace: "ns"}), []profile.Profile{*entryOf(p)})
		if err != nil {
			t.Fatal(err)
		}
		entries, err := profile.ProfilesIn(cfg.YAML)
		if err != nil {
			t.Fatal(err)
		}
		e := entries[profile.SchedulerName(p)]
		return &e
	}
	changed := func(name string) (*schedulingv1alpha1.SchedulerProfile, *profile.Profile) {
		p := testutil.MakeProfile(name).SchedulerRef(s.Name).PluginConfig("NodePool", `{"nodeSelector":{"matchLabels":{"pool":"b"}}}`).Obj()
		p.Spec.Plugins = &schedulingv1alpha1.Plugins{MultiPoint: schedulingv1alpha1.PluginSet{Enabled: []schedulingv1alpha1.Plugin{{Name: "NodePool"}}}}
		return p, runningOf(testutil.MakeProfile(name).SchedulerRef(s.Name).Obj())
	}
	// outcome: "" for none yet, else a finished preview leaving added more pods unschedulable.
	cases := []struct {
		name      string
		mode      schedulingv1alpha1.PreviewMode
		unchanged bool
		new       bool
		outcome   string
		added     int
		// wantHeld is the reason that holds the change, "" for none; wantAsked says whether a
		// preview is asked for.
		wantHeld  string
		wantAsked bool
	}{
		{name: "guard-waits", mode: schedulingv1alpha1.PreviewGuard, wantHeld: schedulingv1alpha1.ReasonPreviewRunning, wantAsked: true},
		{name: "guard-refused", mode: schedulingv1alpha1.PreviewGuard, outcome: "done", added: 3, wantHeld: schedulingv1alpha1.ReasonPreviewRefused},
		{name: "guard-passes", mode: schedulingv1alpha1.PreviewGuard, outcome: "done"},
		{name: "guard-new", mode: schedulingv1alpha1.PreviewGuard, new: true, wantHeld: schedulingv1alpha1.ReasonPreviewRunning, wantAsked: true},
		{name: "report", mode: schedulingv1alpha1.PreviewReport, wantAsked: true},
		{name: "default-is-report", wantAsked: true},
		{name: "report-refusing", mode: schedulingv1alpha1.PreviewReport, outcome: "done", added: 3},
		{name: "unchanged", mode: schedulingv1alpha1.PreviewGuard, unchanged: true},
		{name: "off", mode: schedulingv1alpha1.PreviewOff},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := &Planner{Settings: Settings{Namespace: "ns"}, Previews: preview.New(nil, preview.Options{})}
			p, running := changed(tc.name)
			p.Spec.Rollout.Preview.Mode = tc.mode
			if tc.unchanged {
				running = runningOf(p)
			}
			if tc.new {
				running = nil
			}
			latest := entryOf(p)
			// A member that is not held, and one that stands by: only the first is previewed.
			m := &Member{Profile: p, SchedulerName: latest.SchedulerName, Latest: latest, Entry: latest}
			bystanderProfile, bystanderRunning := changed("bystander")
			bystanderProfile.Spec.Rollout.Preview.Mode = schedulingv1alpha1.PreviewOff
			bystanderLatest := entryOf(bystanderProfile)
			bystander := &Member{Profile: bystanderProfile, Latest: bystanderLatest, Entry: bystanderLatest}
			runningEntries := map[string]*profile.Profile{"bystander": bystanderRunning}
			if running != nil {
				runningEntries[p.Name] = running
			}
			if tc.outcome != "" {
				req, ok := r.MemberPreview(s, proc, m, running)
				if !ok {
					t.Fatal("memberPreview found no change")
				}
				// Finished just now, on the cluster as it is: not yet due to be previewed again.
				r.Previews.Finished(p.Name, req.Key, tc.added)
			}

			r.GatePreviews(s, proc, []*Member{m, bystander}, runningEntries)

			if m.Preview.Reason != tc.wantHeld {
				t.Errorf("held for %q (%s), want %q", m.Preview.Reason, m.Preview.Message, tc.wantHeld)
			}
			switch {
			case tc.wantHeld != "" && m.Entry != running:
				t.Errorf("a held member serves %v, want its running entry %v", m.Entry, running)
			case tc.wantHeld == "" && m.Entry != latest:
				t.Errorf("a member not held serves %v, want its latest entry", m.Entry)
			}
			queued := r.Previews.Queued()
			if asked := len(queued) > 0; asked != tc.wantAsked {
				t.Errorf("a preview asked for: %t, want %t (queue %+v)", asked, tc.wantAsked, queued)
			}
			for _, req := range queued {
				if req.Name != p.Name || req.Scheduler != s.Name || (req.Key.From == "") != tc.new || req.Key.From == req.Key.To {
					t.Errorf("preview asked for %+v, want %s's change within Scheduler %s", req, p.Name, s.Name)
				}
			}
			if bystander.Preview.Held() || bystander.Entry != bystander.Latest {
				t.Errorf("the member in Off mode was held: %+v", bystander.Preview)
			}
		})
	}
}
