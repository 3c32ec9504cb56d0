// Package webhooks holds the operator's admission webhooks, apart from its reconcilers: the
// validation of SchedulerProfiles and Schedulers, which asks the reconcilers' planning
// (Planner, implemented by controllers/admission.Reviewer), and Assign, the model of the assignment of new
// pods to the scheduler name their namespace asks for, which the apiserver runs as the operator's
// MutatingAdmissionPolicy (controllers/assignment.AssignPolicyName) and manager simulate runs here.
package webhooks

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
)

// mirrorPodAnnotation marks the API copy of a kubelet's static pod.
const mirrorPodAnnotation = "kubernetes.io/config.mirror"

// systemNamespaces are the cluster's own namespaces, whose pods are never assigned.
var systemNamespaces = []string{"kube-system", "kube-public", "kube-node-lease"}

// DeniedFunc says why the namespace ns may not use a scheduler name, by the spec.access of the
// profile that has it; "" when it may.
type DeniedFunc func(schedulerName string, ns *corev1.Namespace) string

// AccessDenied is the DeniedFunc of profiles: a namespace that the spec.access of the profile of
// a name does not select may not use it.
func AccessDenied(profiles []*schedulingv1alpha1.SchedulerProfile, schedulerNameOf func(*schedulingv1alpha1.SchedulerProfile) string) DeniedFunc {
	return func(name string, ns *corev1.Namespace) string {
		for _, p := range profiles {
			sel := p.Spec.Access.NamespaceSelector
			if sel == nil || schedulerNameOf(p) != name {
				continue
			}
			selector, err := metav1.LabelSelectorAsSelector(sel.LabelSelector())
			if err != nil || !selector.Matches(labels.Set(ns.Labels)) {
				return "SchedulerProfile " + p.Name + " admits only the namespaces of its spec.access.namespaceSelector"
			}
		}
		return ""
	}
}

// decision is what the assigner does to a pod; the zero decision leaves it untouched.
type decision struct {
	// schedulerName is the pod's new scheduler name; "" keeps its own.
	schedulerName string
	// annotation is the pod's AnnotationAssignment; "" writes none.
	annotation string
	// warning is returned to the client that creates the pod.
	warning string
}

// decide is the whole decision about a pod created in ns (nil: a namespace that is not
// labelled). notServed says why no running scheduler serves a name, "" when one does; it is
// asked only when the answer matters. The assignment policy decides the same in CEL.
func decide(pod *corev1.Pod, ns *corev1.Namespace, operatorNamespace string, notServed func(string) (string, error), denied DeniedFunc) (decision, error) {
	if neverTouched(pod, operatorNamespace) || ns == nil {
		return decision{}, nil
	}
	name, labelled := ns.Labels[schedulingv1alpha1.LabelAssignSchedulerName]
	switch {
	case !labelled:
		return decision{}, nil
	case name == "" || name == schedulingv1alpha1.DefaultSchedulerName:
		return skipped(fmt.Sprintf("the namespace assigns %q, which is no scheduler of the operator", name)), nil
	case pod.Spec.SchedulerName != "" && pod.Spec.SchedulerName != schedulingv1alpha1.DefaultSchedulerName:
		return skipped("the pod names scheduler " + pod.Spec.SchedulerName), nil
	}
	mode := ns.Labels[schedulingv1alpha1.LabelAssignMode]
	if mode != "" && mode != schedulingv1alpha1.AssignModeEnforce && mode != schedulingv1alpha1.AssignModeDryRun {
		d := skipped(fmt.Sprintf("unknown %s %q, want %s or %s", schedulingv1alpha1.LabelAssignMode, mode, schedulingv1alpha1.AssignModeEnforce, schedulingv1alpha1.AssignModeDryRun))
		d.warning = "scheduler assignment " + d.annotation
		return d, nil
	}
	if denied != nil {
		if reason := denied(name, ns); reason != "" {
			return skipped(reason), nil
		}
	}
	dryRun := mode == schedulingv1alpha1.AssignModeDryRun
	// Any fallback but none is default-scheduler: the value that never leaves a pod Pending.
	fallbackNone := ns.Labels[schedulingv1alpha1.LabelAssignFallback] == schedulingv1alpha1.AssignFallbackNone
	reason, err := notServed(name)
	if err != nil {
		return decision{}, err
	}
	switch {
	case reason == "" && dryRun:
		return decision{annotation: "dry-run: would assign " + name}, nil
	case reason == "":
		return decision{schedulerName: name, annotation: "assigned"}, nil
	case dryRun && fallbackNone:
		return decision{annotation: "dry-run: would assign " + name + " although " + reason}, nil
	case dryRun:
		return decision{annotation: "dry-run: would fall back: " + reason}, nil
	case fallbackNone:
		return decision{schedulerName: name, annotation: "assigned although " + reason,
			warning: fmt.Sprintf("the pod is assigned to scheduler %s (fallback none) although %s: it stays Pending until the scheduler serves", name, reason)}, nil
	}
	return decision{annotation: "fallback: " + reason,
		warning: fmt.Sprintf("the pod stays on %s, not scheduler %s: %s", schedulingv1alpha1.DefaultSchedulerName, name, reason)}, nil
}

// Assign is what the assignment policy does to a new pod created in namespace ns (nil: one that is not
// labelled), given notServed, which says why no scheduler serves a name ("" when one does): the
// scheduler name the pod gets ("" keeps its own) and the annotation it gets ("" none). manager
// simulate assigns a workload's pods with it, as the policy would on the cluster.
func Assign(pod *corev1.Pod, ns *corev1.Namespace, operatorNamespace string, notServed func(string) (string, error), denied DeniedFunc) (schedulerName, annotation string, err error) {
	d, err := decide(pod, ns, operatorNamespace, notServed, denied)
	return d.schedulerName, d.annotation, err
}

// skipped is the decision to leave a pod's scheduler name, saying why.
func skipped(reason string) decision { return decision{annotation: "skipped: " + reason} }

// neverTouched tells the pods that no namespace label assigns: those bound to a node already,
// mirror pods, a DaemonSet's (they must run on their node whatever scheduler the namespace
// prefers), and those of the system namespaces and of the operator's, where the schedulers run.
func neverTouched(pod *corev1.Pod, operatorNamespace string) bool {
	if pod.Spec.NodeName != "" || pod.Namespace == operatorNamespace || slices.Contains(systemNamespaces, pod.Namespace) {
		return true
	}
	if _, mirror := pod.Annotations[mirrorPodAnnotation]; mirror {
		return true
	}
	for _, ref := range pod.OwnerReferences {
		if ref.Kind == "DaemonSet" && strings.HasPrefix(ref.APIVersion, "apps/") {
			return true
		}
	}
	return false
}
