package plan

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/scheduler/profile"
)

// ExtendersPath is where a Scheduler or a profile sets its extenders, for error messages.
var ExtendersPath = field.NewPath("spec", "extenders")

// Where a profile and a Scheduler set how their scheduler process runs, for error messages.
var (
	ProfileSettingsPath   = field.NewPath("spec", "scheduler")
	SchedulerSettingsPath = field.NewPath("spec")
)

// SettingsErrors are the refusals of a scheduler process's own settings, which no profile can
// mend: its extenders' TLS settings (an inline key a stored object may still carry), its pods'
// affinity, priority class against allowedPriorityClasses, resources and tolerations against
// caps, and its feature gates. path is where the owner sets run (ProfileSettingsPath or
// SchedulerSettingsPath). They are checked before any Secret is read or profile rendered.
func SettingsErrors(run schedulingv1alpha1.SchedulerSettings, extenders []schedulingv1alpha1.Extender, path *field.Path, allowedPriorityClasses []string, caps SchedulerPodCaps) field.ErrorList {
	errs := profile.ValidateExtenders(extenders, ExtendersPath)
	errs = append(errs, affinityErrors(run.Affinity, path.Child("affinity"))...)
	errs = append(errs, priorityClassErrors(run.PriorityClassName, allowedPriorityClasses, path.Child("priorityClassName"))...)
	errs = append(errs, capErrors(run, caps, path)...)
	return append(errs, profile.CheckGates(run.FeatureGates, path.Child("featureGates"))...)
}

// ProfileSettingsErrors are the refusals of the settings of a profile's own scheduler, as the
// reconciler and the webhook make them; `manager render` reports them too.
func ProfileSettingsErrors(p *schedulingv1alpha1.SchedulerProfile, allowedPriorityClasses []string, caps SchedulerPodCaps) field.ErrorList {
	return SettingsErrors(p.Spec.Scheduler, p.Spec.Extenders, ProfileSettingsPath, allowedPriorityClasses, caps)
}

// SchedulerSettingsErrors are the refusals of a Scheduler's own settings, as
// ProfileSettingsErrors are a profile's.
func SchedulerSettingsErrors(s *schedulingv1alpha1.Scheduler, allowedPriorityClasses []string, caps SchedulerPodCaps) field.ErrorList {
	return SettingsErrors(s.Spec.SchedulerSettings, s.Spec.Extenders, SchedulerSettingsPath, allowedPriorityClasses, caps)
}

// SchedulerDeployment is the name of a Scheduler's Deployment. It has a "." in its name, which no
// profile's objects have (names of profiles are DNS-1123 labels).
func SchedulerDeployment(s *schedulingv1alpha1.Scheduler) string {
	return s.Name + ".scheduler"
}

// SchedulerLease is the leader-election lease of a Scheduler's process. Like its objects, it has a
// "." in its name, so it cannot be the lease of a profile's scheduler name.
func SchedulerLease(s *schedulingv1alpha1.Scheduler) string {
	return profile.LeasePrefix + SchedulerDeployment(s)
}

// SchedulerProcess is what a Scheduler adds around its profiles in its rendered configuration,
// with the operator in namespace and before any Secret of its extenders is read; `manager render`
// and `manager simulate` render a Scheduler the way the operator does.
func SchedulerProcess(s *schedulingv1alpha1.Scheduler, namespace string) profile.Process {
	return profile.Process{Namespace: namespace, LeaseName: SchedulerLease(s), Extenders: s.Spec.Extenders}
}

// affinityErrors refuses pod (anti-)affinity terms of the scheduler pods that reach pods of other
// namespaces: the operator creates the scheduler pods in its own namespace with more rights than
// a profile author has, and a required anti-affinity with namespaceSelector {} would keep every
// other team's pods off a zone's nodes (and let the scheduler pods preempt them). A term without
// namespaces and namespaceSelector selects pods of the operator's namespace only.
func affinityErrors(a *corev1.Affinity, path *field.Path) field.ErrorList {
	if a == nil {
		return nil
	}
	var errs field.ErrorList
	check := func(term corev1.PodAffinityTerm, at *field.Path) {
		const why = "the scheduler pods' affinity may only select pods of the operator's namespace: leave it out"
		if term.NamespaceSelector != nil {
			errs = append(errs, field.Forbidden(at.Child("namespaceSelector"), why))
		}
		if len(term.Namespaces) > 0 {
			errs = append(errs, field.Forbidden(at.Child("namespaces"), why))
		}
	}
	terms := func(required []corev1.PodAffinityTerm, preferred []corev1.WeightedPodAffinityTerm, at *field.Path) {
		for i, term := range required {
			check(term, at.Child("requiredDuringSchedulingIgnoredDuringExecution").Index(i))
		}
		for i, term := range preferred {
			check(term.PodAffinityTerm, at.Child("preferredDuringSchedulingIgnoredDuringExecution").Index(i).Child("podAffinityTerm"))
		}
	}
	if pa := a.PodAffinity; pa != nil {
		terms(pa.RequiredDuringSchedulingIgnoredDuringExecution, pa.PreferredDuringSchedulingIgnoredDuringExecution, path.Child("podAffinity"))
	}
	if pa := a.PodAntiAffinity; pa != nil {
		terms(pa.RequiredDuringSchedulingIgnoredDuringExecution, pa.PreferredDuringSchedulingIgnoredDuringExecution, path.Child("podAntiAffinity"))
	}
	return errs
}

// priorityClassErrors refuses a priority class of the scheduler pods that the cluster admin has
// not allowed (--allowed-priority-classes): a priority class decides which pods the scheduler pods
// preempt, and system-node-critical, or a high class with large requests, preempts other teams'
// pods anywhere. The message names the allowed classes, so that the author knows what to ask for.
func priorityClassErrors(name *string, allowed []string, path *field.Path) field.ErrorList {
	if name == nil || *name == "" || slices.Contains(allowed, *name) {
		return nil
	}
	allowedText := "the operator allows none"
	if len(allowed) > 0 {
		quoted := make([]string, len(allowed))
		for i, a := range allowed {
			quoted[i] = strconv.Quote(a)
		}
		allowedText = "the operator allows " + strings.Join(quoted, ", ")
	}
	return field.ErrorList{field.Forbidden(path, fmt.Sprintf("priority class %q is not allowed for scheduler pods; %s (--allowed-priority-classes, set by the cluster admin)", *name, allowedText))}
}
