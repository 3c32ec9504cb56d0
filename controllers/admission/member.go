package admission

import (
	"context"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/controllers/plan"
	"github.com/schedops/scheduler-profile-operator/scheduler/profile"
)

// reviewMember is what the plan of Scheduler s makes of p, the profile under review, with p in
// place of its stored version. The plan of the stored profiles is the one both reconcilers
// remember (planScheduler); p is checked alone (one scheduler built, remembered by its spec) and
// against that plan's other members: the oldest one's queue sort, the member limit and the size
// of the configuration. A Scheduler at its member limit, or whose configuration might not hold
// p's entry, is planned whole with p in it.
func (v *Reviewer) reviewMember(ctx context.Context, s *schedulingv1alpha1.Scheduler, proc *plan.Process, p *schedulingv1alpha1.SchedulerProfile, all []schedulingv1alpha1.SchedulerProfile, served plan.ServedNames) (*plan.Member, error) {
	d, err := v.LiveDeployment(ctx, proc)
	if err != nil {
		return nil, err
	}
	base, err := v.PlanScheduler(ctx, s, proc, d)
	if err != nil {
		return nil, err
	}
	m := v.CheckMember(p, all, proc, served, plan.ProcessKey(proc, v.Settings))
	if m.Refused() {
		return m, nil
	}
	running, err := v.RunningEntries(ctx, s, proc, d)
	if err != nil {
		return nil, err
	}
	if v.fitsInPlan(base, proc, m, running) {
		return m, nil
	}
	pl, err := v.PlanMembers(s, proc, all, running, served, nil)
	if err != nil {
		return nil, err
	}
	return pl.Member(p.Name), nil
}

// fitsInPlan checks a valid member m against the other members of base and sets its queue-sort
// conflict, as planMembers would with m in base (plan.QueueSortRefusals, with every other member as
// planMembers sees it before its queue sort is decided). It tells false, and checks nothing,
// when base refuses a member for a limit, m would make one member too many, or base's
// configuration with the whole of m's configuration alone might pass plan.MaxConfigBytes: then only
// the whole plan says which members fit.
func (v *Reviewer) fitsInPlan(base *plan.SchedulerPlan, proc *plan.Process, m *plan.Member, running map[string]*profile.Profile) bool {
	members := make([]*plan.Member, 0, len(base.Members)+1)
	others := 0
	for _, o := range base.Members {
		if o.Profile.Name == m.Profile.Name {
			continue
		}
		if o.Limit.Reason != "" {
			return false
		}
		if o.QueueSortConflict != "" {
			undecided := *o
			undecided.QueueSortConflict, undecided.Entry = "", o.Latest
			o = &undecided
		}
		if o.Entry != nil {
			others++
		}
		members = append(members, o)
	}
	if others+1 > v.Settings.MemberLimit() {
		return false
	}
	size := m.AloneBytes
	if base.Config != nil {
		size += len(base.Config.YAML)
	}
	if size > plan.MaxConfigBytes {
		return false
	}
	m.QueueSortConflict = plan.QueueSortRefusals(v.Cache(), append(members, m), running, proc.Run.FeatureGates)[m]
	return true
}
