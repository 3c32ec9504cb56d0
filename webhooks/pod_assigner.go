// Package webhooks holds the operator's admission webhooks, apart from its reconcilers: the
// validation of SchedulerProfiles and Schedulers, which asks the reconcilers' planning
// (Planner, implemented by controllers.Reviewer), and the assignment of new pods to the scheduler
// name their namespace asks for.
package webhooks

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	jsonpatch "gomodules.xyz/jsonpatch/v2"
	admissionv1 "k8s.io/api/admission/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
)

// The mutating webhook of pod creation. Its namespaceSelector and matchConditions keep every pod
// it would not touch from reaching it, so that pod creation elsewhere never waits for the
// operator; failurePolicy Ignore and a short timeout keep an operator that is down from blocking
// any pod: the pod is then created as it is, on its own scheduler name.
// +kubebuilder:webhook:path=/mutate--v1-pod,mutating=true,failurePolicy=ignore,sideEffects=None,matchPolicy=Equivalent,timeoutSeconds=2,reinvocationPolicy=Never,groups="",resources=pods,verbs=create,versions=v1,name=pods.scheduling.schedops.io,admissionReviewVersions=v1,patch=`{"namespaceSelector":{"matchExpressions":[{"key":"scheduling.schedops.io/scheduler-name","operator":"Exists"},{"key":"kubernetes.io/metadata.name","operator":"NotIn","values":["kube-system","kube-public","kube-node-lease"]}]},"matchConditions":[{"name":"not-bound","expression":"!has(object.spec.nodeName) || object.spec.nodeName == ''"},{"name":"not-mirror","expression":"!has(object.metadata.annotations) || !('kubernetes.io/config.mirror' in object.metadata.annotations)"},{"name":"not-daemonset","expression":"!has(object.metadata.ownerReferences) || !object.metadata.ownerReferences.exists(r, r.kind == 'DaemonSet' && r.apiVersion.startsWith('apps/'))"}]}`

// PodAssignerPath is where the operator serves PodAssigner.
const PodAssignerPath = "/mutate--v1-pod"

// mirrorPodAnnotation marks the API copy of a kubelet's static pod.
const mirrorPodAnnotation = "kubernetes.io/config.mirror"

// systemNamespaces are the cluster's own namespaces, whose pods are never assigned.
var systemNamespaces = []string{"kube-system", "kube-public", "kube-node-lease"}

// NotServedFunc says why no Available scheduler serves a scheduler name, reading only the
// operator's cache; "" when one does.
type NotServedFunc func(ctx context.Context, schedulerName string) (string, error)

// RecordFunc counts a decision: the scheduler name the namespace asks for and the result, the
// first word of the annotation (assigned, fallback, skipped, dry-run).
type RecordFunc func(schedulerName, result string)

// PodAssigner sets the scheduler name of a new pod to the one its namespace's
// LabelAssignSchedulerName asks for, when an Available scheduler serves it, and annotates the pod
// with what it did. It reads the Namespace and the served names from the operator's cache only,
// so a pod costs the same however many pods the cluster has.
type PodAssigner struct {
	namespaces        client.Reader
	notServed         NotServedFunc
	operatorNamespace string
	record            RecordFunc
	decoder           admission.Decoder
}

var _ admission.Handler = &PodAssigner{}

// NewPodAssigner returns the assigner of pods. namespaces reads Namespaces (the operator caches
// the labelled ones only); notServed decides whether a scheduler name is served; pods of
// operatorNamespace, the managed schedulers' own, are never assigned; record, when not nil,
// counts every decision that annotates a pod.
func NewPodAssigner(scheme *runtime.Scheme, namespaces client.Reader, notServed NotServedFunc, operatorNamespace string, record RecordFunc) *PodAssigner {
	return &PodAssigner{namespaces: namespaces, notServed: notServed, operatorNamespace: operatorNamespace, record: record, decoder: admission.NewDecoder(scheme)}
}

// Handle decides about one pod creation. It never refuses a pod: an error leaves the pod as it
// is, as failurePolicy Ignore does.
func (a *PodAssigner) Handle(ctx context.Context, req admission.Request) admission.Response {
	if req.Operation != admissionv1.Create || req.SubResource != "" {
		return admission.Allowed("")
	}
	pod := &corev1.Pod{}
	if err := a.decoder.Decode(req, pod); err != nil {
		return admission.Errored(http.StatusBadRequest, err)
	}
	pod.Namespace = req.Namespace
	ns, err := a.namespace(ctx, req.Namespace)
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	d, err := decide(pod, ns, a.operatorNamespace, func(name string) (string, error) { return a.notServed(ctx, name) })
	if err != nil {
		return admission.Errored(http.StatusInternalServerError, err)
	}
	if d.annotation != "" {
		log.FromContext(ctx).V(1).Info("Assigning a pod", "namespace", req.Namespace, "pod", podName(pod, req), "assignment", d.annotation)
		if a.record != nil {
			a.record(ns.Labels[schedulingv1alpha1.LabelAssignSchedulerName], result(d.annotation))
		}
	}
	return d.response(pod)
}

// namespace is the Namespace of a pod from the cache, or nil when the cache does not hold it:
// the cache holds only the labelled ones.
func (a *PodAssigner) namespace(ctx context.Context, name string) (*corev1.Namespace, error) {
	ns := &corev1.Namespace{}
	if err := a.namespaces.Get(ctx, client.ObjectKey{Name: name}, ns); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("reading Namespace %s from the cache: %w", name, err)
	}
	return ns, nil
}

// podName is a pod's name for the log: a controller's pods have only a generateName when they
// are created.
func podName(pod *corev1.Pod, req admission.Request) string {
	switch {
	case pod.Name != "":
		return pod.Name
	case req.Name != "":
		return req.Name
	}
	return pod.GenerateName + "*"
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
// labelled). notServed says why no Available scheduler serves a name, "" when one does; it is
// asked only when the answer matters.
func decide(pod *corev1.Pod, ns *corev1.Namespace, operatorNamespace string, notServed func(string) (string, error)) (decision, error) {
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

// Assign is what the webhook does to a new pod created in namespace ns (nil: one that is not
// labelled), given notServed, which says why no scheduler serves a name ("" when one does): the
// scheduler name the pod gets ("" keeps its own) and the annotation it gets ("" none). manager
// simulate assigns a workload's pods with it, as the webhook would on the cluster.
func Assign(pod *corev1.Pod, ns *corev1.Namespace, operatorNamespace string, notServed func(string) (string, error)) (schedulerName, annotation string, err error) {
	d, err := decide(pod, ns, operatorNamespace, notServed)
	return d.schedulerName, d.annotation, err
}

// result is the first word of an assignment annotation: "assigned although ..." is assigned,
// "dry-run: would ..." is dry-run.
func result(annotation string) string {
	if i := strings.IndexAny(annotation, ": "); i >= 0 {
		return annotation[:i]
	}
	return annotation
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

// response is the admission response of a decision about pod: JSON patches of its scheduler
// name and annotation, and the warning.
func (d decision) response(pod *corev1.Pod) admission.Response {
	if d == (decision{}) {
		return admission.Allowed("")
	}
	var patches []jsonpatch.JsonPatchOperation
	if d.schedulerName != "" {
		patches = append(patches, jsonpatch.NewOperation("add", "/spec/schedulerName", d.schedulerName))
	}
	if d.annotation != "" {
		if pod.Annotations == nil {
			patches = append(patches, jsonpatch.NewOperation("add", "/metadata/annotations", map[string]string{schedulingv1alpha1.AnnotationAssignment: d.annotation}))
		} else {
			patches = append(patches, jsonpatch.NewOperation("add", "/metadata/annotations/"+escapePointer(schedulingv1alpha1.AnnotationAssignment), d.annotation))
		}
	}
	resp := admission.Patched("", patches...)
	if d.warning != "" {
		resp = resp.WithWarnings(d.warning)
	}
	return resp
}

// escapePointer escapes a key for a JSON pointer (RFC 6901).
func escapePointer(key string) string {
	return strings.ReplaceAll(strings.ReplaceAll(key, "~", "~0"), "/", "~1")
}
