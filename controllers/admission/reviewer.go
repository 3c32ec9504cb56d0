// Package admission is the reviews the admission webhooks ask (package webhooks): what the
// reconcilers would make of a SchedulerProfile or a Scheduler, planned with their Planner, so that
// what they would refuse is refused before it is stored.
package admission

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/controllers/plan"
	"github.com/schedops/scheduler-profile-operator/scheduler/profile"
	"github.com/schedops/scheduler-profile-operator/webhooks"
)

// Reviewer answers the admission webhooks (package webhooks) with the reconcilers' planning
// code: what the reconcilers would make of a SchedulerProfile or a Scheduler, so that what they
// would refuse is refused before it is stored. What the object itself decides is refused, and
// what it takes from the cluster as it is now (its extenders' Secrets, the APIs of its gates:
// clusterErrors), which the reconcilers check again on every pass; a missing Scheduler or Secret
// may be created after the object that names it and is only a warning.
//
// A member is planned from the plan of its Scheduler that the reconcilers remembered, with the
// member replaced (reviewMember).
type Reviewer struct {
	plan.Planner
}

var _ webhooks.Planner = &Reviewer{}

// ProfileErrors refuses what the reconciler would refuse of p, stored beside the other profiles
// of all (p's stored version replaced by p): a name another profile keeps, the checks of a
// profile with a scheduler of its own or of a member in its Scheduler's plan, and what it takes
// from the cluster. The warnings of a profile it admits end with the advice on its configuration.
func (v *Reviewer) ProfileErrors(ctx context.Context, p *schedulingv1alpha1.SchedulerProfile, all []schedulingv1alpha1.SchedulerProfile) (field.ErrorList, []string, error) {
	// A dedicated profile's checks read who serves its own name; a member's plan, every name.
	var served plan.ServedNames
	var err error
	if p.Spec.SchedulerRef.Name == "" {
		served, err = v.ServedNamesOf(ctx, []string{profile.SchedulerName(p)})
	} else {
		served, err = v.ServedNamesIndex(ctx)
	}
	if err != nil {
		return nil, nil, err
	}
	if p.Spec.SchedulerRef.Name != "" {
		return v.checkMemberProfile(ctx, p, all, served)
	}
	if errs := v.checkDedicatedProfile(p, all, served); len(errs) > 0 {
		return errs, nil, nil
	}
	proc := plan.DedicatedProcess(p, profile.SchedulerName(p))
	errs, warnings, err := v.clusterErrors(ctx, proc)
	if err != nil || len(errs) > 0 {
		return errs, warnings, err
	}
	return nil, append(warnings, v.AdviceWarnings(ctx, p, proc)...), nil
}

// checkDedicatedProfile runs the reconciler's checks of a profile with a scheduler of its own.
func (v *Reviewer) checkDedicatedProfile(p *schedulingv1alpha1.SchedulerProfile, all []schedulingv1alpha1.SchedulerProfile, served plan.ServedNames) field.ErrorList {
	name := profile.SchedulerName(p)
	if owner, serving := plan.NameOwner(p, all, name, served); owner != "" {
		return field.ErrorList{nameConflict(p, name, owner, serving)}
	}
	_, _, errs := v.CheckDedicated(p, plan.DedicatedProcess(p, name))
	return errs
}

// checkMemberProfile plans the profile's Scheduler with the profile as it would be stored, as
// both reconcilers plan it, and refuses what the plan refuses: a name conflict, the member alone
// (with the Scheduler's extenders and gates), a queue sort unlike the oldest member's, and a
// member that does not fit. The Scheduler's plan of the stored profiles is the one the
// reconcilers remembered, and the member under review takes its place in it (reviewMember), so a
// review builds one scheduler, of this member alone, and renders no configuration of all the
// members. A Scheduler that does not exist yet is planned with default settings, and is only a
// warning.
func (v *Reviewer) checkMemberProfile(ctx context.Context, p *schedulingv1alpha1.SchedulerProfile, all []schedulingv1alpha1.SchedulerProfile, served plan.ServedNames) (field.ErrorList, []string, error) {
	var warnings []string
	ref := p.Spec.SchedulerRef.Name
	s := &schedulingv1alpha1.Scheduler{}
	if err := v.Reader.Get(ctx, client.ObjectKey{Name: ref}, s); err != nil {
		if !apierrors.IsNotFound(err) {
			return nil, nil, fmt.Errorf("reading Scheduler %s: %w", ref, err)
		}
		s = &schedulingv1alpha1.Scheduler{ObjectMeta: metav1.ObjectMeta{Name: ref}}
		warnings = append(warnings, fmt.Sprintf("spec.schedulerRef.name: Scheduler %q does not exist; the profile is not served until it is created", ref))
	}
	proc := plan.SharedProcess(s)
	// A Scheduler refused for its own settings is the Scheduler's fault, not the member's: the
	// member is admitted, and its status says why it is not served.
	if errs := proc.SettingsErrors(v.Settings); len(errs) > 0 {
		return nil, append(warnings, fmt.Sprintf("spec.schedulerRef.name: Scheduler %q is refused for its own settings, so the profile is not served until it is fixed: %v", ref, errs.ToAggregate())), nil
	}
	m, err := v.reviewMember(ctx, s, proc, p, all, served)
	if err != nil {
		return nil, nil, err
	}
	switch {
	case m.ConflictWith != "":
		return field.ErrorList{nameConflict(p, m.SchedulerName, m.ConflictWith, m.ConflictServed)}, warnings, nil
	case len(m.Errs) > 0:
		return m.Errs, warnings, nil
	case m.Limit.Reason != "":
		return field.ErrorList{field.Forbidden(field.NewPath("spec", "schedulerRef", "name"), m.Limit.Message)}, warnings, nil
	case m.QueueSortConflict != "":
		return field.ErrorList{field.Invalid(field.NewPath("spec", "plugins", "queueSort"), field.OmitValueType{},
			fmt.Sprintf("the profiles of Scheduler %s must sort the queue alike: %s", s.Name, m.QueueSortConflict))}, warnings, nil
	}
	// The combined configuration is not built here: building a scheduler of N profiles takes
	// about as long as the apiserver waits for the webhook once N is in the hundreds, and what
	// only the combination can break (names, queue sort, size) was checked above. The Scheduler's
	// reconciler builds it once per change and refuses it in the Scheduler's status.
	return nil, append(warnings, v.AdviceWarnings(ctx, p, proc)...), nil
}

// nameConflict is the error of a profile whose scheduler name another profile keeps (it serves
// it, or is older), at the field that sets the name.
func nameConflict(p *schedulingv1alpha1.SchedulerProfile, name, owner string, served bool) *field.Error {
	path := field.NewPath("spec", "schedulerName")
	if p.Spec.SchedulerName == "" {
		path = field.NewPath("metadata", "name")
	}
	return field.Invalid(path, name, plan.NameConflictMessage(name, owner, served))
}

// SchedulerErrors refuses what the Scheduler's reconciler would refuse of s: its own settings,
// each at its field, the configuration they give (with a profile of upstream's defaults, which is
// valid by itself: what is refused is the Scheduler's), what it takes from the cluster, and the
// combined configuration with its members. A member that the settings would refuse only gets a
// warning: members fail alone.
func (v *Reviewer) SchedulerErrors(ctx context.Context, s *schedulingv1alpha1.Scheduler) (field.ErrorList, []string, error) {
	proc := plan.SharedProcess(s)
	// Its own settings first, each at its field: rendering would refuse an inline key (which a
	// stored Scheduler may still carry) as one error.
	if errs := proc.SettingsErrors(v.Settings); len(errs) > 0 {
		return errs, nil, nil
	}
	placeholder := &schedulingv1alpha1.SchedulerProfile{ObjectMeta: metav1.ObjectMeta{Name: s.Name}}
	_, cfg, err := v.RenderAlone(placeholder, proc)
	if err != nil {
		return nil, nil, err
	}
	if errs := profile.ValidateWithGates(cfg.YAML, proc.Run.FeatureGates, proc.GatesPath()); len(errs) > 0 {
		return errs, nil, nil
	}
	errs, warnings, err := v.clusterErrors(ctx, proc)
	if err != nil || len(errs) > 0 {
		return errs, warnings, err
	}
	more, errs, err := v.checkMembers(ctx, s, proc)
	return errs, append(warnings, more...), err
}

// checkMembers plans the Scheduler with its members as its reconciler does.
func (v *Reviewer) checkMembers(ctx context.Context, s *schedulingv1alpha1.Scheduler, proc *plan.Process) ([]string, field.ErrorList, error) {
	d, err := v.LiveDeployment(ctx, proc)
	if err != nil {
		return nil, nil, err
	}
	pl, err := v.PlanScheduler(ctx, s, proc, d)
	if err != nil {
		return nil, nil, err
	}
	var warnings []string
	for _, m := range pl.Members {
		if m.Invalid != "" {
			warnings = append(warnings, fmt.Sprintf("SchedulerProfile %s is refused with these settings and is not served: %s", m.Profile.Name, m.Invalid))
		}
	}
	if pl.Config != nil {
		if err := v.ValidateProcess(pl.Config, proc.Run.FeatureGates); err != nil {
			return warnings, field.ErrorList{field.Invalid(field.NewPath("spec"), field.OmitValueType{},
				"the scheduler would refuse the combined configuration of the members with these settings: "+err.Error())}, nil
		}
	}
	return warnings, nil, nil
}
