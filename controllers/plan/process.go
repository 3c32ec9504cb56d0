package plan

import (
	"strings"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/scheduler/profile"
)

// Process is one managed scheduler process: the object that owns it (a SchedulerProfile that runs
// its own scheduler, or a Scheduler shared by several profiles), how it runs, and the names of
// the objects it needs. Rendering, owned objects, rollout and pruning are written once for both.
type Process struct {
	// Owner owns every object of the process; deleting it collects them.
	Owner client.Object
	// Kind is the owner's kind, for owner references.
	Kind string
	// Names derive the names of the owned objects.
	Names ObjectNames
	// Run is how the Deployment runs.
	Run schedulingv1alpha1.SchedulerSettings
	// Extenders are called by every profile of the process.
	Extenders []schedulingv1alpha1.Extender
	// LeaseName is the leader-election lease in the operator's namespace; it starts with
	// profile.LeasePrefix.
	LeaseName string
	// LegacyLease is the lease that schedulers of operator versions before the prefix used: a
	// pod template without schedulingv1alpha1.AnnotationLease runs on it.
	LegacyLease string
	// GrantLegacy grants the scheduler LegacyLease too, while a pod of a template that uses it
	// may run (mayRunLegacyLease).
	GrantLegacy bool
	// OnLegacyLease keeps the template of this pass on LegacyLease (no schedulingv1alpha1.AnnotationLease): the
	// upgrade wave holds a scheduler of an operator version before the prefix until its turn,
	// and moving it to the prefixed lease would restart it (OnLegacyLease).
	OnLegacyLease bool
	// OwnerLabel is the label key that selects the process's objects (ConfigMaps, ReplicaSets,
	// pods) with the owner's name as value.
	OwnerLabel string
	// Secrets is what the pass read of the Secrets its extenders name (readExtenderSecrets).
	Secrets ExtenderSecrets
}

// ObjectNames derive the names of a process's objects from its owner's name. A profile's objects
// are "<name>-scheduler", "<name>-config-<hash>", ...; a Scheduler's use "." where a profile's use
// "-": names are DNS-1123 labels, which have no ".", so a Scheduler and a profile of the same
// name never share an object.
type ObjectNames struct {
	base string
	sep  string
	// bindingID is the middle of the ClusterRoleBinding names.
	bindingID string
}

// Deployment names the scheduler Deployment.
func (n ObjectNames) Deployment() string { return n.base + n.sep + "scheduler" }

// ServiceAccount names the scheduler's ServiceAccount.
func (n ObjectNames) ServiceAccount() string { return n.base + n.sep + "scheduler" }

// ConfigMap names the ConfigMap of the configuration whose hash is hash.
func (n ObjectNames) ConfigMap(hash string) string { return n.base + n.sep + "config-" + hash }

// LeaseRole names the Role that grants the scheduler its lease.
func (n ObjectNames) LeaseRole() string { return n.base + n.sep + "scheduler-lease" }

// Service names the metrics Service. A Service name is a DNS-1035 label: no "." and a letter
// first, while a profile's or Scheduler's name may start with a digit. A Scheduler's is
// "metrics-<name>--scheduler", which no profile's "metrics-<name>-scheduler" can be, since a
// profile name does not end in "-".
func (n ObjectNames) Service() string {
	return "metrics-" + n.base + strings.ReplaceAll(n.sep, ".", "--") + "scheduler"
}

// ClusterRoleBinding names the binding of the scheduler's ServiceAccount to the bootstrap
// ClusterRole role (without its "system:").
func (n ObjectNames) ClusterRoleBinding(role string) string {
	return "scheduler-profile-operator:" + n.bindingID + ":" + role
}

// AuthReaderBinding names the RoleBinding that lets the scheduler read the authentication
// ConfigMap of kube-system.
func (n ObjectNames) AuthReaderBinding() string {
	return "scheduler-profile-operator:" + n.bindingID + ":authentication-reader"
}

// DedicatedProcess is the scheduler process of a profile without schedulerRef that serves
// schedulerName; its objects keep the names they always had.
func DedicatedProcess(p *schedulingv1alpha1.SchedulerProfile, schedulerName string) *Process {
	return &Process{
		Owner:       p,
		Kind:        "SchedulerProfile",
		Names:       ObjectNames{base: p.Name, sep: "-", bindingID: p.Name},
		Run:         p.Spec.Scheduler,
		Extenders:   p.Spec.Extenders,
		LeaseName:   profile.LeaseName(schedulerName),
		LegacyLease: schedulerName,
		OwnerLabel:  schedulingv1alpha1.LabelProfile,
	}
}

// SharedProcess is the scheduler process of a Scheduler. Its lease, like its objects, has a "."
// in its name, so it cannot be the lease of a profile's scheduler name.
func SharedProcess(s *schedulingv1alpha1.Scheduler) *Process {
	names := ObjectNames{base: s.Name, sep: ".", bindingID: s.Name + ".scheduler"}
	return &Process{
		Owner:       s,
		Kind:        "Scheduler",
		Names:       names,
		Run:         s.Spec.SchedulerSettings,
		Extenders:   s.Spec.Extenders,
		LeaseName:   SchedulerLease(s),
		LegacyLease: names.Deployment(),
		OwnerLabel:  schedulingv1alpha1.LabelScheduler,
	}
}

// LeaseOf is the lease that the pods of a template of the process run on: the one its
// schedulingv1alpha1.AnnotationLease names, or the legacy lease for a template of an operator before the prefix.
func (proc *Process) LeaseOf(annotations map[string]string) string {
	if name, ok := annotations[schedulingv1alpha1.AnnotationLease]; ok {
		return name
	}
	return proc.LegacyLease
}

// SettingsErrors are the refusals of the process's own settings (SettingsErrors).
func (proc *Process) SettingsErrors(s Settings) field.ErrorList {
	return SettingsErrors(proc.Run, proc.Extenders, proc.SettingsPath(), s.AllowedPriorityClasses, s.Caps)
}

// SettingsPath is where the owner sets how the process runs, for error messages.
func (proc *Process) SettingsPath() *field.Path {
	if proc.Kind == "Scheduler" {
		return SchedulerSettingsPath
	}
	return ProfileSettingsPath
}

// GatesPath is where the owner sets the process's feature gates, for error messages.
func (proc *Process) GatesPath() *field.Path {
	return proc.SettingsPath().Child("featureGates")
}

// Labels are the labels of every object of the process.
func (proc *Process) Labels() map[string]string {
	return map[string]string{
		LabelName:       "kube-scheduler",
		LabelInstance:   proc.Owner.GetName(),
		LabelManagedBy:  schedulingv1alpha1.FieldManager,
		LabelComponent:  "scheduler",
		proc.OwnerLabel: proc.Owner.GetName(),
	}
}

// SelectorLabels select the scheduler pods of the process; they never change, since a
// Deployment's selector is immutable.
func (proc *Process) SelectorLabels() map[string]string {
	return map[string]string{LabelName: "kube-scheduler", proc.OwnerLabel: proc.Owner.GetName()}
}

// Settings are what the builders need beyond the profile: where and what the scheduler runs.
type Settings struct {
	// Namespace is the operator's namespace, where the namespaced objects live.
	Namespace string
	// Image holds the kube-scheduler binary with our plugins (RELATED_IMAGE_SCHEDULER).
	Image string
	// AllowedPriorityClasses are the priority classes that scheduler pods may have
	// (--allowed-priority-classes); none when empty.
	AllowedPriorityClasses []string
	// Caps bound the scheduler pods' resources and tolerations (--max-scheduler-cpu and the others).
	Caps SchedulerPodCaps
	// MaxMembers is how many profiles a Scheduler serves; 0 is MaxMembersPerScheduler.
	MaxMembers int
}

// MemberLimit is how many profiles a Scheduler serves.
func (s Settings) MemberLimit() int {
	if s.MaxMembers > 0 {
		return s.MaxMembers
	}
	return MaxMembersPerScheduler
}

// MaxMembersPerScheduler is how many profiles one Scheduler serves; the next member is refused
// alone (TooManyMembers). The Scheduler's status lists at most 256 members.
const MaxMembersPerScheduler = 128

// ExtenderSecrets is what a process needs of the Secrets that its extenders' tlsConfig.secretRef
// name, as read in one pass.
type ExtenderSecrets struct {
	// WithCA are the Secrets that hold a CA bundle; the configuration points caFile at it.
	WithCA sets.Set[string]
	// Hash is a content hash of the Secrets' TLS keys, "" when no extender names a Secret. It
	// goes on the pod template, so that a new certificate rolls the scheduler; the configuration,
	// and so its hash and ConfigMap, stay the same.
	Hash string
}

// SecretUser is how a Secret's schedulingv1alpha1.AnnotationExtenderTLSFor names the process, which mounts the
// Secrets of its extenders: a profile that runs its own scheduler by its name, a Scheduler as
// "Scheduler/<name>". A Scheduler's extenders serve all its members, and a member has none of
// its own (the CRD refuses extenders with schedulerRef), so the Scheduler is the user. No
// profile name has a "/".
func (proc *Process) SecretUser() string {
	if proc.Kind == "Scheduler" {
		return "Scheduler/" + proc.Owner.GetName()
	}
	return proc.Owner.GetName()
}

// ConfigProcess is what the process adds around its profiles in the rendered configuration, with
// the operator's settings s.
func (proc *Process) ConfigProcess(s Settings) profile.Process {
	return profile.Process{
		Namespace: s.Namespace,
		LeaseName: proc.LeaseName,
		Extenders: proc.Extenders,
		CASecrets: proc.Secrets.WithCA,
	}
}
