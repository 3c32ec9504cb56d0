package plan

import (
	"slices"

	"github.com/schedops/scheduler-profile-operator/controllers/preview"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/internal/simulate"
	"github.com/schedops/scheduler-profile-operator/scheduler/profile"
)

// GatePreviews asks for the preview of each member's change (spec.rollout.preview) and, in Guard
// mode, holds the change until its preview lets it through: the member keeps its running entry,
// and a member that runs none stays out, while the other members' changes roll out. A member's
// change is its entry's: the preview compares its running entry with its latest one, each
// rendered as a process of its own with the Scheduler's settings, on the pods of its scheduler
// name. Without a previewer (the admission webhook's plans) nothing is previewed or held.
func (r *Planner) GatePreviews(s *schedulingv1alpha1.Scheduler, proc *Process, members []*Member, running map[string]*profile.Profile) {
	if r.Previews == nil {
		return
	}
	for _, m := range members {
		settings := m.Profile.Spec.Rollout.Preview
		if m.Leaving || m.Refused() || m.Latest == nil || preview.Mode(settings) == schedulingv1alpha1.PreviewOff {
			continue
		}
		req, changed := r.MemberPreview(s, proc, m, running[m.Profile.Name])
		if !changed {
			continue
		}
		if m.Preview = r.Previews.Ask(req, settings); m.Preview.Held() {
			m.Entry = running[m.Profile.Name]
		}
	}
}

// MemberPreview is the preview of a member's change from its running entry (nil when it runs
// none) to its latest; changed is false when the two render alike.
func (r *Planner) MemberPreview(s *schedulingv1alpha1.Scheduler, proc *Process, m *Member, running *profile.Profile) (preview.Request, bool) {
	settings := proc.ConfigProcess(r.Settings)
	next, err := profile.RenderProcess(settings, []profile.Profile{*m.Latest})
	if err != nil {
		return preview.Request{}, false // validated alone already: not expected
	}
	gates := preview.GatesKey(proc.Run.FeatureGates)
	req := preview.Request{
		Name: m.Profile.Name, Scheduler: s.Name, SchedulerNames: []string{m.SchedulerName},
		Key:  preview.Key{UID: m.Profile.UID, To: next.Hash, ToGates: gates, FromGates: gates},
		Next: simulate.Profile{Name: next.Hash, Config: next.YAML, FeatureGates: proc.Run.FeatureGates},
	}
	if running == nil {
		return req, true
	}
	prev, err := profile.RenderProcess(settings, []profile.Profile{*running})
	if err != nil {
		return req, true // previewed against nothing
	}
	if prev.Hash == next.Hash {
		return preview.Request{}, false
	}
	req.Key.From = prev.Hash
	req.Running = &simulate.Profile{Name: prev.Hash, Config: prev.YAML, FeatureGates: proc.Run.FeatureGates}
	if !slices.Contains(req.SchedulerNames, running.SchedulerName) {
		req.SchedulerNames = append(req.SchedulerNames, running.SchedulerName)
	}
	return req, true
}
