package assignment

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/controllers/plan"
)

// Names of the admission policies the operator keeps, and of their bindings (each binding has its
// policy's name).
const (
	// AssignPolicyName assigns the pods of a labelled namespace to the scheduler name it asks for.
	AssignPolicyName = "scheduler-profile-operator-assign"
	// AssignPodGroupsPolicyName records on a new PodGroup of a labelled namespace what its pods get.
	AssignPodGroupsPolicyName = "scheduler-profile-operator-assign-podgroups"
	// AssignGangsPolicyName gives the pods of a PodGroup what the PodGroup records.
	AssignGangsPolicyName = "scheduler-profile-operator-assign-gangs"
	// AccessPolicyName refuses a pod that names a profile its namespace may not use.
	AccessPolicyName = "scheduler-profile-operator-access"
	// AssignWarningsPolicyName warns the creator of a pod that fell back.
	AssignWarningsPolicyName = "scheduler-profile-operator-assign-warnings"
)

// mutatingPolicyType is the type of a MutatingAdmissionPolicy.
var mutatingPolicyType = metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "MutatingAdmissionPolicy"}

// podGroupsAPI is the API of the PodGroups whose pods are assigned whole (KEP-4671).
var podGroupsAPI = metav1.GroupVersionResource{Group: "scheduling.k8s.io", Version: "v1beta1", Resource: "podgroups"}

// profileAccess is what the access policy knows of one profile with spec.access: the scheduler
// names it serves or asks for, and the namespaces that may use them.
type profileAccess struct {
	profile  string
	names    []string
	selector *metav1.LabelSelector
}

// assignmentPolicies are the admission policies and bindings of namespace assignment, for an
// operator in namespace ns: names are the scheduler names assignment knows (namesData), access
// lists the profiles that restrict who may use them, gangs says whether the cluster serves
// PodGroups, whose pods are then assigned by their group, and projections are the node
// restrictions written onto the pods of the served names that have them. The policies that give
// a pod its scheduler name project onto it too: which of several policies the apiserver runs
// first is not defined, so the projection policy alone could not see the name they give.
//
// The served names are written into the policies themselves rather than into params: a policy
// whose params are ConfigMaps may only be created by whoever may read every ConfigMap of the
// cluster, which the operator should not.
func assignmentPolicies(ns string, names map[string]string, access []profileAccess, gangs bool, projections projectedNames) []any {
	objs := []any{assignPolicy(ns, names, access, projections), mutatingBinding(AssignPolicyName, nil),
		projectPolicy(projections), mutatingBinding(ProjectPolicyName, nil)}
	if gangs {
		objs = append(objs, assignPodGroupsPolicy(ns, names, access), mutatingBinding(AssignPodGroupsPolicyName, nil),
			assignGangsPolicy(ns, access, projections), mutatingBinding(AssignGangsPolicyName, &metav1.LabelSelector{
				MatchExpressions: []metav1.LabelSelectorRequirement{{Key: schedulingv1alpha1.LabelAssignSchedulerName, Operator: metav1.LabelSelectorOpExists}},
			}))
	}
	objs = append(objs, accessPolicy(access), validatingBinding(AccessPolicyName, admissionregistrationv1.Deny),
		assignWarningsPolicy(), validatingBinding(AssignWarningsPolicyName, admissionregistrationv1.Warn))
	return objs
}

// namesData are the scheduler names assignment knows: every served name with "", every name a
// profile asks for and no running scheduler serves with the reason.
func namesData(served map[string]bool, notServed map[string]string) map[string]string {
	data := make(map[string]string, len(served)+len(notServed))
	for name, reason := range notServed {
		data[name] = reason
	}
	for name := range served {
		data[name] = ""
	}
	return data
}

// celMap is m as a CEL map literal of strings, in the order of its keys.
func celMap(m map[string]string) string {
	entries := make([]string, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		entries = append(entries, celString(k)+": "+celString(m[k]))
	}
	return "{" + strings.Join(entries, ", ") + "}"
}

// celString is s as a CEL string literal.
func celString(s string) string { return strconv.Quote(s) }

// celList is ss as a CEL list of strings.
func celList(ss []string) string {
	quoted := make([]string, len(ss))
	for i, s := range ss {
		quoted[i] = celString(s)
	}
	return "[" + strings.Join(quoted, ", ") + "]"
}

// Expressions the policies share. nsLabels are the labels of the request's Namespace.
var (
	nsLabels = "(has(namespaceObject.metadata.labels) ? namespaceObject.metadata.labels : {})"
	// podUntouched are the match conditions of the pods that no namespace label assigns: those
	// bound already, mirror pods and a DaemonSet's, as neverTouched says.
	podUntouched = []admissionregistrationv1.MatchCondition{
		{Name: "not-bound", Expression: "!has(object.spec.nodeName) || object.spec.nodeName == ''"},
		{Name: "not-mirror", Expression: "!has(object.metadata.annotations) || !('kubernetes.io/config.mirror' in object.metadata.annotations)"},
		{Name: "not-daemonset", Expression: "!has(object.metadata.ownerReferences) || !object.metadata.ownerReferences.exists(r, r.kind == 'DaemonSet' && r.apiVersion.startsWith('apps/'))"},
	}
)

// labelledNamespaces selects the namespaces that assign their pods, less the cluster's own and
// the operator's.
func labelledNamespaces(ns string) *metav1.LabelSelector {
	return &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
		{Key: schedulingv1alpha1.LabelAssignSchedulerName, Operator: metav1.LabelSelectorOpExists},
		{Key: corev1.LabelMetadataName, Operator: metav1.LabelSelectorOpNotIn, Values: append(slices.Clone(systemNamespaces), ns)},
	}}
}

// systemNamespaces are the cluster's own namespaces, whose pods are never assigned.
var systemNamespaces = []string{"kube-system", "kube-public", "kube-node-lease"}

// decisionVariables are the CEL variables of the decision about an object created in a labelled
// namespace, as webhooks.Assign decides it: want, the name the namespace asks for; named, the
// name the object names itself ("" for none); annotation, the decision; schedulerName, the
// name the object gets ("" keeps its own). names are the names assignment knows (namesData).
func decisionVariables(named string, names map[string]string, access []profileAccess) []admissionregistrationv1.Variable {
	mode, fallback := celString(schedulingv1alpha1.LabelAssignMode), celString(schedulingv1alpha1.LabelAssignFallback)
	return []admissionregistrationv1.Variable{
		{Name: "labels", Expression: nsLabels},
		{Name: "want", Expression: "variables.labels[" + celString(schedulingv1alpha1.LabelAssignSchedulerName) + "]"},
		{Name: "mode", Expression: mode + " in variables.labels ? variables.labels[" + mode + "] : ''"},
		{Name: "dryRun", Expression: "variables.mode == " + celString(schedulingv1alpha1.AssignModeDryRun)},
		{Name: "fallbackNone", Expression: fallback + " in variables.labels && variables.labels[" + fallback + "] == " + celString(schedulingv1alpha1.AssignFallbackNone)},
		{Name: "named", Expression: named},
		{Name: "denied", Expression: deniedExpression(access)},
		{Name: "names", Expression: celMap(names)},
		{Name: "reason", Expression: "variables.want in variables.names ? string(variables.names[variables.want]) : 'no SchedulerProfile has scheduler name ' + variables.want"},
		{Name: "annotation", Expression: strings.Join([]string{
			"variables.want == '' || variables.want == " + celString(schedulingv1alpha1.DefaultSchedulerName) + " ? 'skipped: the namespace assigns \"' + variables.want + '\", which is no scheduler of the operator'",
			"variables.named != '' && variables.named != " + celString(schedulingv1alpha1.DefaultSchedulerName) + " ? 'skipped: the pod names scheduler ' + variables.named",
			"!(variables.mode in ['', " + celString(schedulingv1alpha1.AssignModeEnforce) + ", " + celString(schedulingv1alpha1.AssignModeDryRun) + "]) ? 'skipped: unknown " + schedulingv1alpha1.LabelAssignMode + " \"' + variables.mode + '\", want " + schedulingv1alpha1.AssignModeEnforce + " or " + schedulingv1alpha1.AssignModeDryRun + "'",
			"variables.denied != '' ? 'skipped: ' + variables.denied",
			"variables.reason == '' && variables.dryRun ? 'dry-run: would assign ' + variables.want",
			"variables.reason == '' ? 'assigned'",
			"variables.dryRun && variables.fallbackNone ? 'dry-run: would assign ' + variables.want + ' although ' + variables.reason",
			"variables.dryRun ? 'dry-run: would fall back: ' + variables.reason",
			"variables.fallbackNone ? 'assigned although ' + variables.reason",
			"'fallback: ' + variables.reason",
		}, "\n  : ")},
		{Name: "schedulerName", Expression: "variables.annotation == 'assigned' || variables.annotation.startsWith('assigned although ') ? variables.want : ''"},
	}
}

// deniedExpression says, as a CEL string, why the namespace may not use the name it asks for
// (variables.want) by the access of the profiles; ” when it may.
func deniedExpression(access []profileAccess) string {
	expr := "''"
	for i := len(access) - 1; i >= 0; i-- {
		a := access[i]
		expr = "variables.want in " + celList(a.names) + " && !(" + selectorExpression(a.selector, "variables.labels") + ") ? " +
			celString("SchedulerProfile "+a.profile+" admits only the namespaces of its spec.access.namespaceSelector") + " : " + expr
	}
	return expr
}

// applyMutation is a mutation by an apply configuration.
func applyMutation(expression string) admissionregistrationv1.Mutation {
	return admissionregistrationv1.Mutation{PatchType: admissionregistrationv1.PatchTypeApplyConfiguration,
		ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{Expression: expression}}
}

// assignMutation writes, as one JSON patch, a pod's annotation and scheduler name from variables
// annotation and schedulerName, and the node restrictions of the name it gets (projectionPatch,
// whose variables.projectTo is variables.schedulerName). A JSON patch costs the apiserver less
// than an apply configuration, which merges the whole pod; one mutation costs less than two, as
// the apiserver encodes, patches, decodes and defaults the pod for each, even for an empty patch.
// The pod's scheduler name is always set (defaulted), and the first operation leaves it with
// annotations.
var assignMutation = jsonPatch("(has(object.metadata.annotations)" +
	" ? [JSONPatch{op: 'add', path: " + celString("/metadata/annotations/"+strings.ReplaceAll(schedulingv1alpha1.AnnotationAssignment, "/", "~1")) + ", value: variables.annotation}]" +
	" : [JSONPatch{op: 'add', path: '/metadata/annotations', value: {" + celString(schedulingv1alpha1.AnnotationAssignment) + ": variables.annotation}}])" +
	" + (variables.schedulerName == '' ? [] : [JSONPatch{op: 'add', path: '/spec/schedulerName', value: variables.schedulerName}])" +
	" + " + projectionPatch(true))

// jsonPatch is a mutation by the JSON patch that expression, a CEL list, gives.
func jsonPatch(expression string) admissionregistrationv1.Mutation {
	return admissionregistrationv1.Mutation{PatchType: admissionregistrationv1.PatchTypeJSONPatch, JSONPatch: &admissionregistrationv1.JSONPatch{Expression: expression}}
}

// podCreates matches the creation of pods.
func podCreates() []admissionregistrationv1.NamedRuleWithOperations {
	return []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
	}}}
}

// policyMeta is the metadata of an object of the policies.
func policyMeta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Labels: map[string]string{plan.LabelName: "scheduler-profile-operator", plan.LabelComponent: "assignment", plan.LabelManagedBy: schedulingv1alpha1.FieldManager}}
}

// assignPolicy assigns a pod of a labelled namespace that is not in a PodGroup.
func assignPolicy(ns string, names map[string]string, access []profileAccess, projections projectedNames) *admissionregistrationv1.MutatingAdmissionPolicy {
	return &admissionregistrationv1.MutatingAdmissionPolicy{
		TypeMeta:   mutatingPolicyType,
		ObjectMeta: policyMeta(AssignPolicyName),
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{NamespaceSelector: labelledNamespaces(ns), ResourceRules: podCreates()},
			MatchConditions: append(slices.Clone(podUntouched), admissionregistrationv1.MatchCondition{
				Name: "not-in-a-podgroup", Expression: "!has(object.spec.schedulingGroup)"}),
			Variables: append(decisionVariables("has(object.spec.schedulerName) ? object.spec.schedulerName : ''", names, access),
				projectionVariables("variables.schedulerName", projections)...),
			Mutations:          []admissionregistrationv1.Mutation{assignMutation},
			FailurePolicy:      ptr.To(admissionregistrationv1.Ignore),
			ReinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy,
		},
	}
}

// assignPodGroupsPolicy records the decision about the pods of a new PodGroup on the PodGroup:
// its annotation, and its label LabelAssignSchedulerName, the name the namespace asked for, which
// selects the PodGroups that decide for their pods.
func assignPodGroupsPolicy(ns string, names map[string]string, access []profileAccess) *admissionregistrationv1.MutatingAdmissionPolicy {
	return &admissionregistrationv1.MutatingAdmissionPolicy{
		TypeMeta:   mutatingPolicyType,
		ObjectMeta: policyMeta(AssignPodGroupsPolicyName),
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{NamespaceSelector: labelledNamespaces(ns), ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{podGroupsAPI.Group}, APIVersions: []string{podGroupsAPI.Version}, Resources: []string{podGroupsAPI.Resource}},
			}}}},
			Variables: decisionVariables("''", names, access),
			Mutations: []admissionregistrationv1.Mutation{applyMutation("Object{metadata: Object.metadata{annotations: {" +
				celString(schedulingv1alpha1.AnnotationAssignment) + ": variables.annotation}, labels: {" +
				celString(schedulingv1alpha1.LabelAssignSchedulerName) + ": variables.want}}}")},
			FailurePolicy:      ptr.To(admissionregistrationv1.Ignore),
			ReinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy,
		},
	}
}

// assignGangsPolicy gives a pod of a PodGroup the decision its PodGroup recorded at its creation,
// so that every pod of the group gets the same scheduler name whenever the served names change
// while the group is created. Its params are the PodGroups of the pod's namespace that carry a
// decision; only the pod's own group matches.
func assignGangsPolicy(ns string, access []profileAccess, projections projectedNames) *admissionregistrationv1.MutatingAdmissionPolicy {
	ann := celString(schedulingv1alpha1.AnnotationAssignment)
	return &admissionregistrationv1.MutatingAdmissionPolicy{
		TypeMeta:   mutatingPolicyType,
		ObjectMeta: policyMeta(AssignGangsPolicyName),
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
			ParamKind:        &admissionregistrationv1.ParamKind{APIVersion: podGroupsAPI.Group + "/" + podGroupsAPI.Version, Kind: "PodGroup"},
			MatchConstraints: &admissionregistrationv1.MatchResources{NamespaceSelector: labelledNamespaces(ns), ResourceRules: podCreates()},
			MatchConditions: append(slices.Clone(podUntouched),
				admissionregistrationv1.MatchCondition{Name: "in-this-podgroup", Expression: "has(object.spec.schedulingGroup) && has(object.spec.schedulingGroup.podGroupName) && object.spec.schedulingGroup.podGroupName == params.metadata.name"},
				admissionregistrationv1.MatchCondition{Name: "podgroup-decided", Expression: "has(params.metadata.annotations) && " + ann + " in params.metadata.annotations"}),
			Variables: append([]admissionregistrationv1.Variable{
				{Name: "labels", Expression: nsLabels},
				{Name: "want", Expression: "params.metadata.labels[" + celString(schedulingv1alpha1.LabelAssignSchedulerName) + "]"},
				{Name: "named", Expression: "has(object.spec.schedulerName) ? object.spec.schedulerName : ''"},
				{Name: "decided", Expression: "params.metadata.annotations[" + ann + "]"},
				// The access of the profile is asked again: it may have narrowed since the group's creation.
				{Name: "denied", Expression: deniedExpression(access)},
				{Name: "annotation", Expression: "variables.named != '' && variables.named != " + celString(schedulingv1alpha1.DefaultSchedulerName) +
					" ? 'skipped: the pod names scheduler ' + variables.named : variables.denied != '' && variables.decided.startsWith('assigned') ? 'skipped: ' + variables.denied" +
					" : variables.decided + ' (PodGroup ' + params.metadata.name + ')'"},
				{Name: "schedulerName", Expression: "variables.annotation.startsWith('assigned ') ? variables.want : ''"},
			}, projectionVariables("variables.schedulerName", projections)...),
			Mutations:          []admissionregistrationv1.Mutation{assignMutation},
			FailurePolicy:      ptr.To(admissionregistrationv1.Ignore),
			ReinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy,
		},
	}
}

// accessPolicy refuses a pod that names the scheduler of a profile whose spec.access does not
// select the pod's namespace. Without such a profile, it matches no pod.
func accessPolicy(access []profileAccess) *admissionregistrationv1.ValidatingAdmissionPolicy {
	var names []string
	var validations []admissionregistrationv1.Validation
	for _, a := range access {
		names = append(names, a.names...)
		validations = append(validations, admissionregistrationv1.Validation{
			Expression: "!(object.spec.schedulerName in " + celList(a.names) + ") || " + selectorExpression(a.selector, nsLabels),
			MessageExpression: "'namespace ' + request.namespace + ' may not use scheduler ' + object.spec.schedulerName + ': SchedulerProfile " +
				a.profile + " admits only the namespaces of its spec.access.namespaceSelector'",
			Reason: ptr.To(metav1.StatusReasonForbidden),
		})
	}
	names = slices.Compact(slices.Sorted(slices.Values(names)))
	match := "false"
	if len(names) > 0 {
		match = "has(object.spec.schedulerName) && object.spec.schedulerName in " + celList(names)
	}
	if len(validations) == 0 {
		validations = []admissionregistrationv1.Validation{{Expression: "true"}}
	}
	return &admissionregistrationv1.ValidatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicy"},
		ObjectMeta: policyMeta(AccessPolicyName),
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: podCreates()},
			MatchConditions:  []admissionregistrationv1.MatchCondition{{Name: "names-a-restricted-profile", Expression: match}},
			Validations:      validations,
			FailurePolicy:    ptr.To(admissionregistrationv1.Fail),
		},
	}
}

// assignWarningsPolicy warns the creator of a pod that assignment left on default-scheduler, or
// assigned to a name no scheduler serves, and of a namespace with an unknown mode.
func assignWarningsPolicy() *admissionregistrationv1.ValidatingAdmissionPolicy {
	ann := celString(schedulingv1alpha1.AnnotationAssignment)
	return &admissionregistrationv1.ValidatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicy"},
		ObjectMeta: policyMeta(AssignWarningsPolicyName),
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{
				NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: schedulingv1alpha1.LabelAssignSchedulerName, Operator: metav1.LabelSelectorOpExists}}},
				ResourceRules:     podCreates(),
			},
			MatchConditions: []admissionregistrationv1.MatchCondition{{Name: "assignment-annotated", Expression: "has(object.metadata.annotations) && " + ann + " in object.metadata.annotations"}},
			Variables:       []admissionregistrationv1.Variable{{Name: "note", Expression: "object.metadata.annotations[" + ann + "]"}},
			Validations: []admissionregistrationv1.Validation{
				{Expression: "!variables.note.startsWith('fallback: ')", MessageExpression: "'the pod stays on " + schedulingv1alpha1.DefaultSchedulerName + ": ' + variables.note.substring(10)"},
				{Expression: "!variables.note.startsWith('assigned although ')", MessageExpression: "'the pod is assigned to scheduler ' + object.spec.schedulerName + ' (fallback none) although ' + variables.note.substring(18) + ': it stays Pending until the scheduler serves'"},
				{Expression: "!variables.note.startsWith('skipped: unknown ')", MessageExpression: "'scheduler assignment ' + variables.note"},
			},
			FailurePolicy: ptr.To(admissionregistrationv1.Ignore),
		},
	}
}

// mutatingBinding binds a mutating policy: without params for a nil selector, else to the
// objects of the request's namespace that selector selects.
func mutatingBinding(policy string, selector *metav1.LabelSelector) *admissionregistrationv1.MutatingAdmissionPolicyBinding {
	var ref *admissionregistrationv1.ParamRef
	if selector != nil {
		ref = &admissionregistrationv1.ParamRef{Selector: selector, ParameterNotFoundAction: ptr.To(admissionregistrationv1.AllowAction)}
	}
	return &admissionregistrationv1.MutatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "MutatingAdmissionPolicyBinding"},
		ObjectMeta: policyMeta(policy),
		Spec:       admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: policy, ParamRef: ref},
	}
}

// validatingBinding binds a validating policy, without params, with action.
func validatingBinding(policy string, action admissionregistrationv1.ValidationAction) *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	return &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: admissionregistrationv1.SchemeGroupVersion.String(), Kind: "ValidatingAdmissionPolicyBinding"},
		ObjectMeta: policyMeta(policy),
		Spec:       admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: policy, ValidationActions: []admissionregistrationv1.ValidationAction{action}},
	}
}

// selectorExpression is a CEL expression that tells whether the labels, a CEL map, match sel;
// a nil or empty selector matches everything.
func selectorExpression(sel *metav1.LabelSelector, labels string) string {
	if sel == nil {
		return "true"
	}
	var terms []string
	for _, k := range slices.Sorted(maps.Keys(sel.MatchLabels)) {
		terms = append(terms, fmt.Sprintf("(%s in %s && %s[%s] == %s)", celString(k), labels, labels, celString(k), celString(sel.MatchLabels[k])))
	}
	for _, r := range sel.MatchExpressions {
		k := celString(r.Key)
		switch r.Operator {
		case metav1.LabelSelectorOpIn:
			terms = append(terms, fmt.Sprintf("(%s in %s && %s[%s] in %s)", k, labels, labels, k, celList(r.Values)))
		case metav1.LabelSelectorOpNotIn:
			terms = append(terms, fmt.Sprintf("(!(%s in %s) || !(%s[%s] in %s))", k, labels, labels, k, celList(r.Values)))
		case metav1.LabelSelectorOpExists:
			terms = append(terms, fmt.Sprintf("(%s in %s)", k, labels))
		case metav1.LabelSelectorOpDoesNotExist:
			terms = append(terms, fmt.Sprintf("!(%s in %s)", k, labels))
		default:
			// Admission refuses other operators (webhooks.ValidateAccess); a selector that cannot be
			// read admits nobody rather than everybody.
			terms = append(terms, "false")
		}
	}
	if len(terms) == 0 {
		return "true"
	}
	return strings.Join(terms, " && ")
}
