package controllers

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/scheduler/profile"
)

// The validating webhook of both kinds, for CREATE and UPDATE only: a delete or a status write
// is never sent to it, and neither is an update that leaves the spec as it is (labels,
// annotations, finalizers, the garbage collector's foregroundDeletion finalizer): the
// matchCondition skips those in the apiserver, so they work while the operator is down, which
// failurePolicy Fail would otherwise refuse. ValidateUpdate admits them too, for an apiserver
// or an installation (OLM) without the matchCondition. `make manifests` generates
// config/webhook from these markers.
// +kubebuilder:webhook:path=/validate-scheduling-schedops-io-v1alpha1-schedulerprofile,mutating=false,failurePolicy=fail,sideEffects=None,matchPolicy=Equivalent,timeoutSeconds=5,groups=scheduling.schedops.io,resources=schedulerprofiles,verbs=create;update,versions=v1alpha1,name=schedulerprofiles.scheduling.schedops.io,admissionReviewVersions=v1,patch=`{"matchConditions":[{"name":"create-or-spec-change","expression":"request.operation != 'UPDATE' || has(object.spec) != has(oldObject.spec) || (has(object.spec) && object.spec != oldObject.spec)"}]}`
// +kubebuilder:webhook:path=/validate-scheduling-schedops-io-v1alpha1-scheduler,mutating=false,failurePolicy=fail,sideEffects=None,matchPolicy=Equivalent,timeoutSeconds=5,groups=scheduling.schedops.io,resources=schedulers,verbs=create;update,versions=v1alpha1,name=schedulers.scheduling.schedops.io,admissionReviewVersions=v1,patch=`{"matchConditions":[{"name":"create-or-spec-change","expression":"request.operation != 'UPDATE' || has(object.spec) != has(oldObject.spec) || (has(object.spec) && object.spec != oldObject.spec)"}]}`

// profileValidator is the admission check of SchedulerProfiles: what the reconciler would make
// of the profile, refused before it is stored. What the object itself decides is refused, and
// what it takes from the cluster as it is now (its extenders' Secrets, the APIs of its gates:
// clusterErrors), which the reconciler checks again on every pass; a missing Scheduler or Secret
// may be created after the profile and is only a warning.
//
// It reads the profiles from the manager's cache, once the cache holds every stored profile at
// the version the apiserver lists (storedProfiles): a review lists the profiles' metadata from
// the apiserver, not every spec, and plans the member's Scheduler from the plan the reconcilers
// remembered, with the member replaced (reviewMember).
type profileValidator struct {
	processObjects
	// stored reads the profiles' metadata from the apiserver, to tell when the cache (the client
	// of processObjects) has caught up; nil trusts the client as it is (it reads the apiserver).
	stored client.Reader
}

var _ admission.Validator[*schedulingv1alpha1.SchedulerProfile] = &profileValidator{}

// ValidateCreate checks a new profile, which is younger than every stored one: it loses a
// scheduler name conflict.
func (v *profileValidator) ValidateCreate(ctx context.Context, p *schedulingv1alpha1.SchedulerProfile) (admission.Warnings, error) {
	p = p.DeepCopy()
	p.CreationTimestamp = metav1.Now()
	return v.validate(ctx, p)
}

// ValidateUpdate checks a changed spec. An update that leaves the spec as it is (labels,
// finalizers, a deletion) is not refused, so that a profile stored before the webhook ran can
// still be labelled or deleted.
func (v *profileValidator) ValidateUpdate(ctx context.Context, old, p *schedulingv1alpha1.SchedulerProfile) (admission.Warnings, error) {
	if p.DeletionTimestamp != nil || equality.Semantic.DeepEqual(old.Spec, p.Spec) {
		return nil, nil
	}
	return v.validate(ctx, p)
}

// ValidateDelete allows every delete; the webhook configuration does not send them.
func (v *profileValidator) ValidateDelete(context.Context, *schedulingv1alpha1.SchedulerProfile) (admission.Warnings, error) {
	return nil, nil
}

func (v *profileValidator) validate(ctx context.Context, p *schedulingv1alpha1.SchedulerProfile) (admission.Warnings, error) {
	list, err := v.storedProfiles(ctx, p.Name)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	// The profile under review takes the place of its stored version.
	all := slices.DeleteFunc(list, func(other schedulingv1alpha1.SchedulerProfile) bool { return other.Name == p.Name })
	all = append(all, *p)
	// A dedicated profile's checks read who serves its own name; a member's plan, every name.
	var served servedNames
	if p.Spec.SchedulerRef.Name == "" {
		served, err = v.servedNamesOf(ctx, []string{profile.SchedulerName(p)})
	} else {
		served, err = v.servedNamesIndex(ctx)
	}
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	warnings := profileWarnings(p)
	var errs field.ErrorList
	if p.Spec.SchedulerRef.Name == "" {
		if errs = v.checkDedicatedProfile(p, all, served); len(errs) == 0 {
			var more admission.Warnings
			proc := dedicatedProcess(p, profile.SchedulerName(p))
			if errs, more, err = v.clusterErrors(ctx, proc); err != nil {
				return nil, apierrors.NewInternalError(err)
			}
			warnings = append(warnings, more...)
			if len(errs) == 0 {
				warnings = append(warnings, v.adviceWarnings(ctx, p, proc)...)
			}
		}
	} else {
		var more admission.Warnings
		if errs, more, err = v.checkMemberProfile(ctx, p, all, served); err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		warnings = append(warnings, more...)
	}
	if len(errs) > 0 {
		return warnings, apierrors.NewInvalid(schedulingv1alpha1.GroupVersion.WithKind("SchedulerProfile").GroupKind(), p.Name, errs)
	}
	return warnings, nil
}

// checkDedicatedProfile runs the reconciler's checks of a profile with a scheduler of its own.
func (v *profileValidator) checkDedicatedProfile(p *schedulingv1alpha1.SchedulerProfile, all []schedulingv1alpha1.SchedulerProfile, served servedNames) field.ErrorList {
	name := profile.SchedulerName(p)
	if owner, serving := nameOwner(p, all, name, served); owner != "" {
		return field.ErrorList{nameConflict(p, name, owner, serving)}
	}
	_, _, errs := checkDedicated(p, dedicatedProcess(p, name), v.settings)
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
func (v *profileValidator) checkMemberProfile(ctx context.Context, p *schedulingv1alpha1.SchedulerProfile, all []schedulingv1alpha1.SchedulerProfile, served servedNames) (field.ErrorList, admission.Warnings, error) {
	var warnings admission.Warnings
	ref := p.Spec.SchedulerRef.Name
	s := &schedulingv1alpha1.Scheduler{}
	if err := v.client.Get(ctx, client.ObjectKey{Name: ref}, s); err != nil {
		if !apierrors.IsNotFound(err) {
			return nil, nil, fmt.Errorf("reading Scheduler %s: %w", ref, err)
		}
		s = &schedulingv1alpha1.Scheduler{ObjectMeta: metav1.ObjectMeta{Name: ref}}
		warnings = append(warnings, fmt.Sprintf("spec.schedulerRef.name: Scheduler %q does not exist; the profile is not served until it is created", ref))
	}
	proc := sharedProcess(s)
	// A Scheduler refused for its own settings is the Scheduler's fault, not the member's: the
	// member is admitted, and its status says why it is not served.
	if errs := proc.settingsErrors(v.settings); len(errs) > 0 {
		return nil, append(warnings, fmt.Sprintf("spec.schedulerRef.name: Scheduler %q is refused for its own settings, so the profile is not served until it is fixed: %v", ref, errs.ToAggregate())), nil
	}
	m, err := v.reviewMember(ctx, s, proc, p, all, served)
	if err != nil {
		return nil, nil, err
	}
	switch {
	case m.conflictWith != "":
		return field.ErrorList{nameConflict(p, m.schedulerName, m.conflictWith, m.conflictServed)}, warnings, nil
	case len(m.errs) > 0:
		return m.errs, warnings, nil
	case m.limit.reason != "":
		return field.ErrorList{field.Forbidden(field.NewPath("spec", "schedulerRef", "name"), m.limit.message)}, warnings, nil
	case m.queueSortConflict != "":
		return field.ErrorList{field.Invalid(field.NewPath("spec", "plugins", "queueSort"), field.OmitValueType{},
			fmt.Sprintf("the profiles of Scheduler %s must sort the queue alike: %s", s.Name, m.queueSortConflict))}, warnings, nil
	}
	// The combined configuration is not built here: building a scheduler of N profiles takes
	// about as long as the apiserver waits for the webhook once N is in the hundreds, and what
	// only the combination can break (names, queue sort, size) was checked above. The Scheduler's
	// reconciler builds it once per change and refuses it in the Scheduler's status.
	return nil, append(warnings, v.adviceWarnings(ctx, p, proc)...), nil
}

// nameConflict is the error of a profile whose scheduler name another profile keeps (it serves
// it, or is older), at the field that sets the name.
func nameConflict(p *schedulingv1alpha1.SchedulerProfile, name, owner string, served bool) *field.Error {
	path := field.NewPath("spec", "schedulerName")
	if p.Spec.SchedulerName == "" {
		path = field.NewPath("metadata", "name")
	}
	return field.Invalid(path, name, nameConflictMessage(name, owner, served))
}

// profileWarnings are the risky settings of a profile that are not advice: the advice on a valid
// configuration (a filter extender that is not ignorable, a low percentageOfNodesToScore, ...)
// is added once the profile is checked (adviceWarnings).
func profileWarnings(p *schedulingv1alpha1.SchedulerProfile) admission.Warnings {
	return insecureExtenderWarnings(p.Spec.Extenders)
}

// extenderWarnings warn of a Scheduler's filter extenders that are not ignorable: while one is
// unreachable, the scheduler schedules no pod at all (advice SPA502 on each member says so too);
// and of extenders whose certificate is not verified.
func extenderWarnings(extenders []schedulingv1alpha1.Extender) admission.Warnings {
	var warnings admission.Warnings
	for i, e := range extenders {
		if e.FilterVerb != nil && *e.FilterVerb != "" && (e.Ignorable == nil || !*e.Ignorable) {
			warnings = append(warnings, fmt.Sprintf("spec.extenders[%d]: a filter extender that is not ignorable stops all scheduling of this scheduler while it is unreachable; set ignorable: true unless every pod must pass it", i))
		}
	}
	return append(warnings, insecureExtenderWarnings(extenders)...)
}

// insecureExtenderWarnings warn of extenders whose certificate is not verified.
func insecureExtenderWarnings(extenders []schedulingv1alpha1.Extender) admission.Warnings {
	var warnings admission.Warnings
	for i, e := range extenders {
		if e.TLSConfig != nil && e.TLSConfig.Insecure != nil && *e.TLSConfig.Insecure {
			warnings = append(warnings, fmt.Sprintf("spec.extenders[%d].tlsConfig.insecure: the extender's certificate is not verified, so whoever answers at its URL sees the pods and decides where they go; give a CA (caData, or ca.crt in the Secret) instead", i))
		}
	}
	return warnings
}

// schedulerValidator is the admission check of Schedulers: their own settings (feature gates,
// extenders) as the scheduler checks them, and the combined configuration with their members.
// A member that the new settings would refuse only gets a warning: members fail alone.
type schedulerValidator struct {
	processObjects
}

var _ admission.Validator[*schedulingv1alpha1.Scheduler] = &schedulerValidator{}

// ValidateCreate checks a new Scheduler with the profiles that already name it.
func (v *schedulerValidator) ValidateCreate(ctx context.Context, s *schedulingv1alpha1.Scheduler) (admission.Warnings, error) {
	return v.validate(ctx, s)
}

// ValidateUpdate checks a changed spec; as for profiles, an update that leaves the spec as it is
// is not refused.
func (v *schedulerValidator) ValidateUpdate(ctx context.Context, old, s *schedulingv1alpha1.Scheduler) (admission.Warnings, error) {
	if s.DeletionTimestamp != nil || equality.Semantic.DeepEqual(old.Spec, s.Spec) {
		return nil, nil
	}
	return v.validate(ctx, s)
}

// ValidateDelete allows every delete; the webhook configuration does not send them.
func (v *schedulerValidator) ValidateDelete(context.Context, *schedulingv1alpha1.Scheduler) (admission.Warnings, error) {
	return nil, nil
}

func (v *schedulerValidator) validate(ctx context.Context, s *schedulingv1alpha1.Scheduler) (admission.Warnings, error) {
	proc := sharedProcess(s)
	warnings := extenderWarnings(s.Spec.Extenders)
	// The Scheduler's own settings are checked with a profile of upstream's defaults, which is
	// valid by itself: what is refused is the Scheduler's.
	// Its own settings first, each at its field: rendering would refuse an inline key (which a
	// stored Scheduler may still carry) as one error.
	if errs := proc.settingsErrors(v.settings); len(errs) > 0 {
		return warnings, apierrors.NewInvalid(schedulingv1alpha1.GroupVersion.WithKind("Scheduler").GroupKind(), s.Name, errs)
	}
	placeholder := &schedulingv1alpha1.SchedulerProfile{ObjectMeta: metav1.ObjectMeta{Name: s.Name}}
	_, cfg, err := renderAlone(placeholder, proc, v.settings)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	if errs := profile.ValidateWithGates(cfg.YAML, proc.run.FeatureGates, proc.gatesPath()); len(errs) > 0 {
		return warnings, apierrors.NewInvalid(schedulingv1alpha1.GroupVersion.WithKind("Scheduler").GroupKind(), s.Name, errs)
	}
	clusterErrs, clusterWarnings, err := v.clusterErrors(ctx, proc)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	if warnings = append(warnings, clusterWarnings...); len(clusterErrs) > 0 {
		return warnings, apierrors.NewInvalid(schedulingv1alpha1.GroupVersion.WithKind("Scheduler").GroupKind(), s.Name, clusterErrs)
	}
	more, errs, err := v.checkMembers(ctx, s, proc)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	warnings = append(warnings, more...)
	if len(errs) > 0 {
		return warnings, apierrors.NewInvalid(schedulingv1alpha1.GroupVersion.WithKind("Scheduler").GroupKind(), s.Name, errs)
	}
	return warnings, nil
}

// checkMembers plans the Scheduler with its members as its reconciler does.
func (v *schedulerValidator) checkMembers(ctx context.Context, s *schedulingv1alpha1.Scheduler, proc *process) (admission.Warnings, field.ErrorList, error) {
	d, err := v.liveDeployment(ctx, proc)
	if err != nil {
		return nil, nil, err
	}
	pl, err := v.planScheduler(ctx, s, proc, d)
	if err != nil {
		return nil, nil, err
	}
	var warnings admission.Warnings
	for _, m := range pl.members {
		if m.invalid != "" {
			warnings = append(warnings, fmt.Sprintf("SchedulerProfile %s is refused with these settings and is not served: %s", m.profile.Name, m.invalid))
		}
	}
	if pl.config != nil {
		if err := validateProcessOnce(pl.config, proc.run.FeatureGates); err != nil {
			return warnings, field.ErrorList{field.Invalid(field.NewPath("spec"), field.OmitValueType{},
				"the scheduler would refuse the combined configuration of the members with these settings: "+err.Error())}, nil
		}
	}
	return warnings, nil, nil
}

// renderErrors places an error of rendering (args that are not a JSON object) on the spec.
func renderErrors(err error) field.ErrorList {
	return field.ErrorList{field.Invalid(field.NewPath("spec"), field.OmitValueType{}, err.Error())}
}
