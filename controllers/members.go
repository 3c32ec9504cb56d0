package controllers

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/scheduler/profile"
)

// member is what a shared scheduler makes of one of its profiles.
type member struct {
	profile       *schedulingv1alpha1.SchedulerProfile
	schedulerName string
	// conflictWith is the older profile that claims the same scheduler name.
	conflictWith string
	// invalid is the validator's message when the latest spec would not start.
	invalid string
	// errs are the same errors with their fields, for the admission webhook.
	errs field.ErrorList
	// queueSortConflict is upstream's message when the latest spec sorts the queue unlike the
	// oldest member.
	queueSortConflict string
	// entry is what the process serves for the profile: its latest spec, or when that is refused
	// its last good entry from the running configuration; nil leaves the profile out.
	entry *profile.Profile
}

// refused tells whether the latest spec of the member is not what runs.
func (m *member) refused() bool {
	return m.conflictWith != "" || m.invalid != "" || m.queueSortConflict != ""
}

// plan is the configuration of a shared scheduler: its members in profile-name order and the
// rendered configuration of those with an entry (nil when none has one).
type plan struct {
	members []*member
	config  *profile.Config
}

// member returns the plan of the named profile, or nil.
func (pl *plan) member(name string) *member {
	for _, m := range pl.members {
		if m.profile.Name == name {
			return m
		}
	}
	return nil
}

// planScheduler works out what a shared scheduler serves. Each member is checked on its own (name
// conflicts, Render and Validate with the process's extenders); a valid member that sorts the queue
// unlike the oldest member is refused, as upstream refuses such a configuration; a refused member
// keeps its entry of the configuration that runs now, read back from the running ConfigMap, and a
// member that never ran is left out. Both reconcilers compute it, so a profile's status and its
// Scheduler's configuration agree.
func (r *processObjects) planScheduler(ctx context.Context, s *schedulingv1alpha1.Scheduler, proc *process, d *appsv1.Deployment) (*plan, error) {
	var list schedulingv1alpha1.SchedulerProfileList
	if err := r.client.List(ctx, &list); err != nil {
		return nil, fmt.Errorf("listing SchedulerProfiles: %w", err)
	}
	running, err := r.runningEntries(ctx, s, proc, d)
	if err != nil {
		return nil, err
	}
	return r.planMembers(s, proc, list.Items, running)
}

// planMembers is planScheduler with the profiles and the running entries given: the admission
// webhook plans with the profile under review in place of the stored one.
func (r *processObjects) planMembers(s *schedulingv1alpha1.Scheduler, proc *process, all []schedulingv1alpha1.SchedulerProfile, running map[string]*profile.Profile) (*plan, error) {
	pl := &plan{}
	for i := range all {
		p := &all[i]
		if p.Spec.SchedulerRef.Name == "" || p.Spec.SchedulerRef.Name != s.Name || p.DeletionTimestamp != nil {
			continue
		}
		m := r.checkMember(p, all, proc)
		if m.refused() {
			m.entry = running[p.Name]
		}
		pl.members = append(pl.members, m)
	}
	checkQueueSorts(pl.members, running, proc.run.FeatureGates)
	slices.SortFunc(pl.members, func(a, b *member) int { return cmp.Compare(a.profile.Name, b.profile.Name) })
	var entries []profile.Profile
	for _, m := range pl.members {
		if m.entry != nil {
			entries = append(entries, *m.entry)
		}
	}
	if len(entries) > 0 {
		var err error
		if pl.config, err = profile.RenderProcess(processSettings(proc, r.settings), entries); err != nil {
			return nil, err
		}
	}
	return pl, nil
}

// checkMember checks one member on its own, as a profile with a scheduler of its own is checked.
func (r *processObjects) checkMember(p *schedulingv1alpha1.SchedulerProfile, all []schedulingv1alpha1.SchedulerProfile, proc *process) *member {
	m := &member{profile: p, schedulerName: profile.SchedulerName(p)}
	if m.conflictWith = conflictingProfile(p, all, m.schedulerName); m.conflictWith != "" {
		return m
	}
	entry, cfg, err := renderAlone(p, proc, r.settings)
	if err != nil {
		m.invalid, m.errs = err.Error(), renderErrors(err)
		return m
	}
	if errs := profile.ValidateWithGates(cfg.YAML, proc.run.FeatureGates, proc.gatesPath()); len(errs) > 0 {
		m.invalid, m.errs = errs.ToAggregate().Error(), errs
		return m
	}
	m.entry = &entry
	return m
}

// renderAlone renders a member as a process of its own with its Scheduler's settings: what
// Validate checks for one profile.
func renderAlone(p *schedulingv1alpha1.SchedulerProfile, proc *process, s settings) (profile.Profile, *profile.Config, error) {
	entry, err := profile.RenderProfile(p)
	if err != nil {
		return profile.Profile{}, nil, err
	}
	cfg, err := profile.RenderProcess(processSettings(proc, s), []profile.Profile{entry})
	return entry, cfg, err
}

// checkQueueSorts refuses the members whose latest entry sorts the queue unlike the oldest member
// that has an entry; they keep their running entry, if any.
func checkQueueSorts(members []*member, running map[string]*profile.Profile, gates map[string]bool) {
	byAge := slices.Clone(members)
	slices.SortFunc(byAge, func(a, b *member) int {
		if c := a.profile.CreationTimestamp.Compare(b.profile.CreationTimestamp.Time); c != 0 {
			return c
		}
		return cmp.Compare(a.profile.Name, b.profile.Name)
	})
	var first *profile.Profile
	for _, m := range byAge {
		if m.entry == nil {
			continue
		}
		if first == nil {
			first = m.entry
			continue
		}
		if m.refused() {
			continue
		}
		msg, err := profile.QueueSortConflict(*first, *m.entry, gates)
		if err != nil {
			msg = err.Error()
		}
		if msg != "" {
			m.queueSortConflict = msg
			m.entry = running[m.profile.Name]
		}
	}
}

// runningEntries are the entries of the configuration that runs now, by profile name (the
// Scheduler's status says which scheduler name each profile had).
func (r *processObjects) runningEntries(ctx context.Context, s *schedulingv1alpha1.Scheduler, proc *process, d *appsv1.Deployment) (map[string]*profile.Profile, error) {
	cm, err := r.runningConfig(ctx, proc, d)
	if err != nil || cm == nil {
		return nil, err
	}
	bySchedulerName, err := profile.ProfilesIn([]byte(cm.Data[configFileKey]))
	if err != nil {
		return nil, err
	}
	out := map[string]*profile.Profile{}
	for _, served := range s.Status.Profiles {
		if e, ok := bySchedulerName[served.SchedulerName]; ok {
			out[served.Name] = &e
		}
	}
	return out, nil
}

// processSettings are what a process adds around its profiles in the rendered configuration.
func processSettings(proc *process, s settings) profile.Process {
	return profile.Process{
		Namespace: s.namespace,
		LeaseName: proc.leaseName,
		Extenders: proc.extenders,
		CASecrets: proc.secrets.withCA,
	}
}

// conflictingProfile returns the oldest other profile that resolves to the same scheduler name,
// if it is older than p: the older profile keeps the name.
func conflictingProfile(p *schedulingv1alpha1.SchedulerProfile, all []schedulingv1alpha1.SchedulerProfile, name string) string {
	claimants := []*schedulingv1alpha1.SchedulerProfile{p}
	for i := range all {
		other := &all[i]
		if other.Name != p.Name && other.DeletionTimestamp == nil && profile.SchedulerName(other) == name {
			claimants = append(claimants, other)
		}
	}
	oldest := slices.MinFunc(claimants, func(a, b *schedulingv1alpha1.SchedulerProfile) int {
		if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
			return c
		}
		return cmp.Compare(a.Name, b.Name)
	})
	if oldest.Name == p.Name {
		return ""
	}
	return oldest.Name
}
