package plan

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
)

// Defaults of the cluster admin's caps on a scheduler container's requests and limits
// (--max-scheduler-cpu, --max-scheduler-memory): far above what a scheduler of a large cluster
// uses, and far below a node that other teams' pods would lose.
var (
	DefaultMaxSchedulerCPU    = resource.MustParse("4")
	DefaultMaxSchedulerMemory = resource.MustParse("8Gi")
)

// DefaultRequests are the scheduler container's requests when its owner sets no resources.
var DefaultRequests = corev1.ResourceList{
	corev1.ResourceCPU:    resource.MustParse("100m"),
	corev1.ResourceMemory: resource.MustParse("128Mi"),
}

// SchedulerPodCaps are the cluster admin's bounds on what a profile or a Scheduler may ask for
// its scheduler pods. The operator creates those pods in its own namespace, out of the reach of
// the namespace quotas that bound a team's own pods, so the admin bounds them here.
type SchedulerPodCaps struct {
	// MaxCPU is the largest CPU request or limit of the scheduler container; zero is
	// DefaultMaxSchedulerCPU.
	MaxCPU resource.Quantity
	// MaxMemory is the largest memory request or limit of the scheduler container; zero is
	// DefaultMaxSchedulerMemory.
	MaxMemory resource.Quantity
	// AllowTolerateAllTaints admits a toleration without a key and with operator Exists, which
	// tolerates every taint.
	AllowTolerateAllTaints bool
	// AllowedResources are the resources, besides cpu and memory, that the scheduler container
	// may request or be limited to (--allowed-scheduler-resources); by default none.
	AllowedResources []corev1.ResourceName
}

// allowedResourcesFlag is the flag of SchedulerPodCaps.AllowedResources.
const allowedResourcesFlag = "--allowed-scheduler-resources"

// allows tells whether the scheduler container may name the resource at all: cpu and memory,
// which the caps bound, and what the admin allowed.
func (c SchedulerPodCaps) allows(name corev1.ResourceName) bool {
	return name == corev1.ResourceCPU || name == corev1.ResourceMemory || slices.Contains(c.AllowedResources, name)
}

// capped is a resource of the scheduler container that the admin caps, and the flag that does.
type capped struct {
	name corev1.ResourceName
	max  resource.Quantity
	flag string
}

// capped are the caps of the container's resources, the defaults in place of zero.
func (c SchedulerPodCaps) capped() []capped {
	orDefault := func(q, def resource.Quantity) resource.Quantity {
		if q.IsZero() {
			return def
		}
		return q
	}
	return []capped{
		{corev1.ResourceCPU, orDefault(c.MaxCPU, DefaultMaxSchedulerCPU), "--max-scheduler-cpu"},
		{corev1.ResourceMemory, orDefault(c.MaxMemory, DefaultMaxSchedulerMemory), "--max-scheduler-memory"},
	}
}

// Validate refuses an allowed resource that is no resource name, and caps below the requests a
// scheduler container gets when its owner sets none (DefaultRequests): every owner without
// resources would be refused.
func (c SchedulerPodCaps) Validate() error {
	for _, name := range c.AllowedResources {
		if errs := validation.IsQualifiedName(string(name)); len(errs) > 0 {
			return fmt.Errorf("%s: %q is not a resource name: %s", allowedResourcesFlag, name, strings.Join(errs, "; "))
		}
	}
	for _, r := range c.capped() {
		if def := DefaultRequests[r.name]; r.max.Cmp(def) < 0 {
			return fmt.Errorf("%s must be at least %s, the %s request of a scheduler whose owner sets none, not %s", r.flag, def.String(), r.name, r.max.String())
		}
	}
	return nil
}

// capErrors refuses what a profile's or Scheduler's scheduler pods ask for past the admin's
// caps: a CPU or memory request or limit above its cap, which would take a node's worth of
// resources (and preempt other teams' pods for them), a resource the admin did not allow (GPUs,
// ephemeral storage, hugepages: out of every team's quota, since the pods run in the operator's
// namespace), and, unless allowed, a toleration of every taint, which would put the pods on any
// node, control-plane and reserved nodes included. The webhook and the reconcilers refuse with it
// alike (settingsErrors).
func capErrors(run schedulingv1alpha1.SchedulerSettings, caps SchedulerPodCaps, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, list := range []struct {
		field, what string
		values      corev1.ResourceList
	}{{"requests", "request", run.Resources.Requests}, {"limits", "limit", run.Resources.Limits}} {
		for _, name := range slices.Sorted(maps.Keys(list.values)) {
			if !caps.allows(name) {
				errs = append(errs, field.Forbidden(path.Child("resources", list.field).Key(string(name)),
					fmt.Sprintf("scheduler pods may not have a %s %s: the operator allows cpu and memory%s (%s, set by the cluster admin)", name, list.what, allowedExtra(caps.AllowedResources), allowedResourcesFlag)))
			}
		}
		for _, r := range caps.capped() {
			if q, ok := list.values[r.name]; ok && q.Cmp(r.max) > 0 {
				errs = append(errs, field.Forbidden(path.Child("resources", list.field).Key(string(r.name)),
					fmt.Sprintf("a %s %s of %s is more than scheduler pods may have; the operator allows at most %s (%s, set by the cluster admin)", r.name, list.what, q.String(), r.max.String(), r.flag)))
			}
		}
	}
	if caps.AllowTolerateAllTaints {
		return errs
	}
	for i, t := range run.Tolerations {
		if t.Key == "" && t.Operator == corev1.TolerationOpExists {
			errs = append(errs, field.Forbidden(path.Child("tolerations").Index(i),
				"a toleration without a key and with operator Exists tolerates every taint, and would put the scheduler pods on any node; name the taint's key (the operator allows it only with --allow-tolerate-all-taints, set by the cluster admin)"))
		}
	}
	return errs
}

// allowedExtra names the resources the admin allowed besides cpu and memory, for a refusal.
func allowedExtra(names []corev1.ResourceName) string {
	if len(names) == 0 {
		return " only"
	}
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = string(n)
	}
	return ", and " + strings.Join(out, ", ")
}
