package controllers

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/controllers/plan"
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
		leaseName:   plan.SchedulerLease(s),
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

// settingsErrors are the refusals of the process's own settings (plan.SettingsErrors).
func (proc *process) settingsErrors(s settings) field.ErrorList {
	return plan.SettingsErrors(proc.run, proc.extenders, proc.settingsPath(), s.allowedPriorityClasses, s.caps)
}

// settingsPath is where the owner sets how the process runs, for error messages.
func (proc *process) settingsPath() *field.Path {
	if proc.kind == "Scheduler" {
		return plan.SchedulerSettingsPath
	}
	return plan.ProfileSettingsPath
}

// gatesPath is where the owner sets the process's feature gates, for error messages.
func (proc *process) gatesPath() *field.Path {
	return proc.settingsPath().Child("featureGates")
}

// labels are the labels of every object of the process.
func (proc *process) labels() map[string]string {
	return map[string]string{
		plan.LabelName:      "kube-scheduler",
		plan.LabelInstance:  proc.owner.GetName(),
		plan.LabelManagedBy: schedulingv1alpha1.FieldManager,
		plan.LabelComponent: "scheduler",
		proc.ownerLabel:     proc.owner.GetName(),
	}
}

// selectorLabels select the scheduler pods of the process; they never change, since a
// Deployment's selector is immutable.
func (proc *process) selectorLabels() map[string]string {
	return map[string]string{plan.LabelName: "kube-scheduler", proc.ownerLabel: proc.owner.GetName()}
}
