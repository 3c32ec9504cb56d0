package controllers

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/scheduler/profile"
)

// process is one managed scheduler process: the object that owns it (a SchedulerProfile that runs
// its own scheduler, or a Scheduler shared by several profiles), how it runs, and the names of
// the objects it needs. Rendering, owned objects, rollout and pruning are written once for both.
type process struct {
	// owner owns every object of the process; deleting it collects them.
	owner client.Object
	// kind is the owner's kind, for owner references.
	kind string
	// names derive the names of the owned objects.
	names objectNames
	// run is how the Deployment runs.
	run schedulingv1alpha1.SchedulerSettings
	// extenders are called by every profile of the process.
	extenders []schedulingv1alpha1.Extender
	// leaseName is the leader-election lease in the operator's namespace; it starts with
	// profile.LeasePrefix.
	leaseName string
	// legacyLease is the lease that schedulers of operator versions before the prefix used: a
	// pod template without schedulingv1alpha1.AnnotationLease runs on it.
	legacyLease string
	// grantLegacy grants the scheduler legacyLease too, while a pod of a template that uses it
	// may run (mayRunLegacyLease).
	grantLegacy bool
	// onLegacyLease keeps the template of this pass on legacyLease (no schedulingv1alpha1.AnnotationLease): the
	// upgrade wave holds a scheduler of an operator version before the prefix until its turn,
	// and moving it to the prefixed lease would restart it (onLegacyLease).
	onLegacyLease bool
	// ownerLabel is the label key that selects the process's objects (ConfigMaps, ReplicaSets,
	// pods) with the owner's name as value.
	ownerLabel string
	// secrets is what the pass read of the Secrets its extenders name (readExtenderSecrets).
	secrets extenderSecrets
}

// objectNames derive the names of a process's objects from its owner's name. A profile's objects
// are "<name>-scheduler", "<name>-config-<hash>", ...; a Scheduler's use "." where a profile's use
// "-": names are DNS-1123 labels, which have no ".", so a Scheduler and a profile of the same
// name never share an object.
type objectNames struct {
	base string
	sep  string
	// bindingID is the middle of the ClusterRoleBinding names.
	bindingID string
}

func (n objectNames) deployment() string           { return n.base + n.sep + "scheduler" }
func (n objectNames) serviceAccount() string       { return n.base + n.sep + "scheduler" }
func (n objectNames) configMap(hash string) string { return n.base + n.sep + "config-" + hash }
func (n objectNames) leaseRole() string            { return n.base + n.sep + "scheduler-lease" }

// service names the metrics Service. A Service name is a DNS-1035 label: no "." and a letter
// first, while a profile's or Scheduler's name may start with a digit. A Scheduler's is
// "metrics-<name>--scheduler", which no profile's "metrics-<name>-scheduler" can be, since a
// profile name does not end in "-".
func (n objectNames) service() string {
	return "metrics-" + n.base + strings.ReplaceAll(n.sep, ".", "--") + "scheduler"
}

func (n objectNames) clusterRoleBinding(role string) string {
	return "scheduler-profile-operator:" + n.bindingID + ":" + role
}

func (n objectNames) authReaderBinding() string {
	return "scheduler-profile-operator:" + n.bindingID + ":authentication-reader"
}

// dedicatedProcess is the scheduler process of a profile without schedulerRef that serves
// schedulerName; its objects keep the names they always had.
func dedicatedProcess(p *schedulingv1alpha1.SchedulerProfile, schedulerName string) *process {
	return &process{
		owner:       p,
		kind:        "SchedulerProfile",
		names:       objectNames{base: p.Name, sep: "-", bindingID: p.Name},
		run:         p.Spec.Scheduler,
		extenders:   p.Spec.Extenders,
		leaseName:   profile.LeaseName(schedulerName),
		legacyLease: schedulerName,
		ownerLabel:  schedulingv1alpha1.LabelProfile,
	}
}

// sharedProcess is the scheduler process of a Scheduler. Its lease, like its objects, has a "."
// in its name, so it cannot be the lease of a profile's scheduler name.
func sharedProcess(s *schedulingv1alpha1.Scheduler) *process {
	names := objectNames{base: s.Name, sep: ".", bindingID: s.Name + ".scheduler"}
	return &process{
		owner:       s,
		kind:        "Scheduler",
		names:       names,
		run:         s.Spec.SchedulerSettings,
		extenders:   s.Spec.Extenders,
		leaseName:   profile.LeasePrefix + names.deployment(),
		legacyLease: names.deployment(),
		ownerLabel:  schedulingv1alpha1.LabelScheduler,
	}
}

// leaseOf is the lease that the pods of a template of the process run on: the one its
// schedulingv1alpha1.AnnotationLease names, or the legacy lease for a template of an operator before the prefix.
func (proc *process) leaseOf(annotations map[string]string) string {
	if name, ok := annotations[schedulingv1alpha1.AnnotationLease]; ok {
		return name
	}
	return proc.legacyLease
}

// settingsErrors are the refusals of the process's own settings, which no profile can mend: its
// extenders' TLS settings (an inline key a stored object may still carry), its pods' affinity,
// priority class, resources and tolerations against the admin's bounds, and its feature gates.
// They are checked before any Secret is read or profile rendered.
func (proc *process) settingsErrors(s settings) field.ErrorList {
	errs := profile.ValidateExtenders(proc.extenders, extendersPath)
	errs = append(errs, affinityErrors(proc.run.Affinity, proc.settingsPath().Child("affinity"))...)
	errs = append(errs, priorityClassErrors(proc.run.PriorityClassName, s.allowedPriorityClasses, proc.settingsPath().Child("priorityClassName"))...)
	errs = append(errs, capErrors(proc.run, s.caps, proc.settingsPath())...)
	return append(errs, profile.CheckGates(proc.run.FeatureGates, proc.gatesPath())...)
}

// settingsPath is where the owner sets how the process runs, for error messages.
func (proc *process) settingsPath() *field.Path {
	if proc.kind == "Scheduler" {
		return field.NewPath("spec")
	}
	return field.NewPath("spec", "scheduler")
}

// gatesPath is where the owner sets the process's feature gates, for error messages.
func (proc *process) gatesPath() *field.Path {
	return proc.settingsPath().Child("featureGates")
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

// labels are the labels of every object of the process.
func (proc *process) labels() map[string]string {
	return map[string]string{
		labelName:       "kube-scheduler",
		labelInstance:   proc.owner.GetName(),
		labelManagedBy:  schedulingv1alpha1.FieldManager,
		labelComponent:  "scheduler",
		proc.ownerLabel: proc.owner.GetName(),
	}
}

// selectorLabels select the scheduler pods of the process; they never change, since a
// Deployment's selector is immutable.
func (proc *process) selectorLabels() map[string]string {
	return map[string]string{labelName: "kube-scheduler", proc.ownerLabel: proc.owner.GetName()}
}

// ProfileSettingsErrors are the refusals of the settings of a profile's own scheduler (its
// extenders' TLS settings, affinity, priority class against allowedPriorityClasses, resources
// and tolerations against caps, feature gates), as the reconciler and the webhook make them;
// `manager render` reports them too.
func ProfileSettingsErrors(p *schedulingv1alpha1.SchedulerProfile, allowedPriorityClasses []string, caps SchedulerPodCaps) field.ErrorList {
	return dedicatedProcess(p, profile.SchedulerName(p)).settingsErrors(settings{allowedPriorityClasses: allowedPriorityClasses, caps: caps})
}

// SchedulerSettingsErrors are the refusals of a Scheduler's own settings, as
// ProfileSettingsErrors are a profile's.
func SchedulerSettingsErrors(s *schedulingv1alpha1.Scheduler, allowedPriorityClasses []string, caps SchedulerPodCaps) field.ErrorList {
	return sharedProcess(s).settingsErrors(settings{allowedPriorityClasses: allowedPriorityClasses, caps: caps})
}

// SchedulerProcess is what a Scheduler adds around its profiles in its rendered configuration,
// with the operator in namespace; `manager render` renders a Scheduler the way the operator does.
func SchedulerProcess(s *schedulingv1alpha1.Scheduler, namespace string) profile.Process {
	return processSettings(sharedProcess(s), settings{namespace: namespace})
}
