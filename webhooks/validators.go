package webhooks

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
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

// Planner is what the validating webhooks ask the reconcilers' planning code
// (controllers/admission.Reviewer): what the reconcilers would refuse of an object, before it is stored,
// with its fields, and the warnings of what they would only report.
type Planner interface {
	// ProfileErrors reviews p as it would be stored beside stored, the other profiles; the
	// warnings include the advice on a valid configuration (docs/reference/advice.md).
	ProfileErrors(ctx context.Context, p *schedulingv1alpha1.SchedulerProfile, stored []schedulingv1alpha1.SchedulerProfile) (field.ErrorList, []string, error)
	// SchedulerErrors reviews s with the profiles that name it.
	SchedulerErrors(ctx context.Context, s *schedulingv1alpha1.Scheduler) (field.ErrorList, []string, error)
}

// cacheCatchUp is how long a review waits for the cache to hold the profiles the apiserver
// lists before it lists them from the apiserver instead.
const cacheCatchUp = time.Second

// ProfileValidator is the admission check of SchedulerProfiles: what the reconciler would make
// of the profile, refused before it is stored (Planner.ProfileErrors).
//
// It reads the profiles from the manager's cache, once the cache holds every stored profile at
// the version the apiserver lists (storedProfiles): a review lists the profiles' metadata from
// the apiserver, not every spec.
type ProfileValidator struct {
	planner Planner
	// cache is the manager's cache; stored reads the profiles' metadata from the apiserver, to
	// tell when the cache has caught up. A nil stored trusts cache as it is (it reads the
	// apiserver).
	cache, stored client.Reader
}

var _ admission.Validator[*schedulingv1alpha1.SchedulerProfile] = &ProfileValidator{}

// NewProfileValidator reviews profiles with planner, reading them from cache once it has caught
// up with stored (nil: cache reads the apiserver).
func NewProfileValidator(planner Planner, cache, stored client.Reader) *ProfileValidator {
	return &ProfileValidator{planner: planner, cache: cache, stored: stored}
}

// ValidateCreate checks a new profile, which is younger than every stored one: it loses a
// scheduler name conflict.
func (v *ProfileValidator) ValidateCreate(ctx context.Context, p *schedulingv1alpha1.SchedulerProfile) (admission.Warnings, error) {
	p = p.DeepCopy()
	p.CreationTimestamp = metav1.Now()
	return v.validate(ctx, p)
}

// ValidateUpdate checks a changed spec. An update that leaves the spec as it is (labels,
// finalizers, a deletion) is not refused, so that a profile stored before the webhook ran can
// still be labelled or deleted.
func (v *ProfileValidator) ValidateUpdate(ctx context.Context, old, p *schedulingv1alpha1.SchedulerProfile) (admission.Warnings, error) {
	if p.DeletionTimestamp != nil || equality.Semantic.DeepEqual(old.Spec, p.Spec) {
		return nil, nil
	}
	return v.validate(ctx, p)
}

// ValidateDelete allows every delete; the webhook configuration does not send them.
func (v *ProfileValidator) ValidateDelete(context.Context, *schedulingv1alpha1.SchedulerProfile) (admission.Warnings, error) {
	return nil, nil
}

func (v *ProfileValidator) validate(ctx context.Context, p *schedulingv1alpha1.SchedulerProfile) (admission.Warnings, error) {
	if errs := ValidateAccess(p); len(errs) > 0 {
		return profileWarnings(p), apierrors.NewInvalid(schedulingv1alpha1.GroupVersion.WithKind("SchedulerProfile").GroupKind(), p.Name, errs)
	}
	list, err := v.storedProfiles(ctx, p.Name)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	// The profile under review takes the place of its stored version.
	all := slices.DeleteFunc(list, func(other schedulingv1alpha1.SchedulerProfile) bool { return other.Name == p.Name })
	errs, more, err := v.planner.ProfileErrors(ctx, p, append(all, *p))
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	warnings := append(profileWarnings(p), more...)
	if len(errs) > 0 {
		return warnings, apierrors.NewInvalid(schedulingv1alpha1.GroupVersion.WithKind("SchedulerProfile").GroupKind(), p.Name, errs)
	}
	return warnings, nil
}

// storedProfiles are the stored profiles, read from the cache once it holds every one of them at
// least at the version the apiserver lists now: a profile stored a moment ago counts in the next
// one's name and queue-sort checks, as if the apiserver were read, while a review decodes the
// profiles' metadata and not every spec. The profile under review (reviewed) is not waited for:
// the review replaces it. A cache that does not catch up within cacheCatchUp (a profile deleted
// during the review) gives way to a list from the apiserver. The items are the cache's own
// objects: only read them.
func (v *ProfileValidator) storedProfiles(ctx context.Context, reviewed string) ([]schedulingv1alpha1.SchedulerProfile, error) {
	var list schedulingv1alpha1.SchedulerProfileList
	if v.stored == nil {
		if err := v.cache.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
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
		if err := v.cache.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
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

// profileWarnings are the risky settings of a profile that are not advice: the advice on a valid
// configuration (a filter extender that is not ignorable, a low percentageOfNodesToScore, ...)
// comes with the planner's warnings (Planner.ProfileErrors).
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

// SchedulerValidator is the admission check of Schedulers: their own settings (feature gates,
// extenders) as the scheduler checks them, and the combined configuration with their members
// (Planner.SchedulerErrors). A member that the new settings would refuse only gets a warning:
// members fail alone.
type SchedulerValidator struct {
	planner Planner
}

var _ admission.Validator[*schedulingv1alpha1.Scheduler] = &SchedulerValidator{}

// NewSchedulerValidator reviews Schedulers with planner.
func NewSchedulerValidator(planner Planner) *SchedulerValidator {
	return &SchedulerValidator{planner: planner}
}

// ValidateCreate checks a new Scheduler with the profiles that already name it.
func (v *SchedulerValidator) ValidateCreate(ctx context.Context, s *schedulingv1alpha1.Scheduler) (admission.Warnings, error) {
	return v.validate(ctx, s)
}

// ValidateUpdate checks a changed spec; as for profiles, an update that leaves the spec as it is
// is not refused.
func (v *SchedulerValidator) ValidateUpdate(ctx context.Context, old, s *schedulingv1alpha1.Scheduler) (admission.Warnings, error) {
	if s.DeletionTimestamp != nil || equality.Semantic.DeepEqual(old.Spec, s.Spec) {
		return nil, nil
	}
	return v.validate(ctx, s)
}

// ValidateDelete allows every delete; the webhook configuration does not send them.
func (v *SchedulerValidator) ValidateDelete(context.Context, *schedulingv1alpha1.Scheduler) (admission.Warnings, error) {
	return nil, nil
}

func (v *SchedulerValidator) validate(ctx context.Context, s *schedulingv1alpha1.Scheduler) (admission.Warnings, error) {
	errs, more, err := v.planner.SchedulerErrors(ctx, s)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	warnings := append(extenderWarnings(s.Spec.Extenders), more...)
	if len(errs) > 0 {
		return warnings, apierrors.NewInvalid(schedulingv1alpha1.GroupVersion.WithKind("Scheduler").GroupKind(), s.Name, errs)
	}
	return warnings, nil
}

// ValidateAccess refuses a namespace selector in spec.access that is not a valid label selector
// (an unknown operator, In or NotIn without values): the access policy would read it as selecting
// no namespace.
func ValidateAccess(p *schedulingv1alpha1.SchedulerProfile) field.ErrorList {
	sel := p.Spec.Access.NamespaceSelector
	if sel == nil {
		return nil
	}
	return metav1validation.ValidateLabelSelector(sel.LabelSelector(), metav1validation.LabelSelectorValidationOptions{}, field.NewPath("spec", "access", "namespaceSelector"))
}
