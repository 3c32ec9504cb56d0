package assignment

import (
	"maps"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/scheduler/projection"
)

// ProjectPolicyName writes the node restrictions of a pod's profile onto a pod created with its
// scheduler name (spec.projection).
const ProjectPolicyName = "scheduler-profile-operator-project"

// projectedNames are the restrictions the policies write, by the scheduler name a running
// scheduler serves with them, with the annotation each writes (projection.Restriction.Note).
type projectedNames map[string]projected

// projected is the restriction of one served scheduler name and its note.
type projected struct {
	restriction projection.Restriction
	note        string
}

// projectionVariables are the CEL variables of the projection onto a pod of the restriction of
// the scheduler name that projectTo (a CEL string) gives: project, whether to write; projected,
// the pod's required terms ANDed with the restriction's, as projection.Project does. The terms
// are plain CEL maps (dyn): a policy's variables cannot name the types of the pod's schema.
func projectionVariables(projectTo string, names projectedNames) []admissionregistrationv1.Variable {
	notes := make(map[string]string, len(names))
	terms := make([]string, 0, len(names))
	for _, name := range slices.Sorted(maps.Keys(names)) {
		notes[name] = names[name].note
		terms = append(terms, celString(name)+": "+celTerms(names[name].restriction.Terms))
	}
	ann := "(has(object.metadata.annotations) ? object.metadata.annotations : {})"
	required := "object.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
	// The pod's terms as plain maps, which a JSON patch can write (the pod's own typed values
	// cannot be marshalled); an empty term selects no node, and ANDed it stays empty
	// (projection.And).
	plain := func(list string) string {
		return "(has(t." + list + ") ? t." + list + ".map(r, r.operator in ['Exists', 'DoesNotExist'] ? " +
			`{"key": dyn(r.key), "operator": dyn(r.operator)} : {"key": dyn(r.key), "operator": dyn(r.operator), "values": dyn(r.values.map(v, string(v)))}) : [])`
	}
	and := `{"matchExpressions": dyn(t.matchExpressions + a.matchExpressions), "matchFields": dyn(t.matchFields + a.matchFields)}`
	empty := "size(t.matchExpressions) == 0 && size(t.matchFields) == 0"
	return []admissionregistrationv1.Variable{
		{Name: "projectTo", Expression: projectTo},
		{Name: "restrictions", Expression: "{" + strings.Join(terms, ", ") + "}"},
		{Name: "projectionNotes", Expression: celMap(notes)},
		{Name: "project", Expression: "variables.projectTo in variables.restrictions && !(" +
			celString(schedulingv1alpha1.AnnotationProjectedNodeRestrictions) + " in " + ann + ") && !(" +
			celString(schedulingv1alpha1.AnnotationProjectNodeRestrictions) + " in " + ann + " && " + ann + "[" +
			celString(schedulingv1alpha1.AnnotationProjectNodeRestrictions) + "] == 'false')"},
		{Name: "podTerms", Expression: "has(object.spec.affinity) && has(object.spec.affinity.nodeAffinity) && has(" + required + ") && has(" +
			required + ".nodeSelectorTerms) ? " + required + `.nodeSelectorTerms.map(t, {"matchExpressions": dyn(` + plain("matchExpressions") +
			`), "matchFields": dyn(` + plain("matchFields") + ")}) : []"},
		{Name: "projected", Expression: "size(variables.podTerms) == 0 ? dyn(variables.restrictions[variables.projectTo]) : " +
			"dyn(variables.podTerms.map(t, variables.restrictions[variables.projectTo].map(a, " + empty + " ? t : " + and + ")).flatten())"},
	}
}

// projectionPatch is a CEL list of JSON patch operations that write variables.projected as the
// pod's required node selector terms, and the annotation, when variables.project says so: an add
// replaces what is there, and the pod's other affinity stays. annotated says that the pod has
// annotations when the patch applies (an operation before it in the patch added them); else the
// patch asks the pod.
func projectionPatch(annotated bool) string {
	key := "[JSONPatch{op: 'add', path: " + celString("/metadata/annotations/"+strings.ReplaceAll(schedulingv1alpha1.AnnotationProjectedNodeRestrictions, "/", "~1")) +
		", value: variables.projectionNotes[variables.projectTo]}]"
	annotation := key
	if !annotated {
		annotation = "(has(object.metadata.annotations) ? " + key +
			" : [JSONPatch{op: 'add', path: '/metadata/annotations', value: {" + celString(schedulingv1alpha1.AnnotationProjectedNodeRestrictions) +
			": variables.projectionNotes[variables.projectTo]}}])"
	}
	return "(!variables.project ? [] : " + annotation + " + " +
		"(!has(object.spec.affinity) ? [JSONPatch{op: 'add', path: '/spec/affinity', value: {'nodeAffinity': {'requiredDuringSchedulingIgnoredDuringExecution': {'nodeSelectorTerms': variables.projected}}}}]" +
		" : !has(object.spec.affinity.nodeAffinity) ? [JSONPatch{op: 'add', path: '/spec/affinity/nodeAffinity', value: {'requiredDuringSchedulingIgnoredDuringExecution': {'nodeSelectorTerms': variables.projected}}}]" +
		" : [JSONPatch{op: 'add', path: '/spec/affinity/nodeAffinity/requiredDuringSchedulingIgnoredDuringExecution', value: {'nodeSelectorTerms': variables.projected}}]))"
}

// celTerms is node selector terms as a CEL list of maps. The apiserver's CEL wants the values of
// a map literal to have one type: those of several are made dyn.
func celTerms(terms []corev1.NodeSelectorTerm) string {
	out := make([]string, len(terms))
	for i, t := range terms {
		out[i] = `{"matchExpressions": dyn(` + celRequirements(t.MatchExpressions) + `), "matchFields": dyn(` + celRequirements(t.MatchFields) + ")}"
	}
	return "[" + strings.Join(out, ", ") + "]"
}

// celRequirements is node selector requirements as a CEL list of maps.
func celRequirements(reqs []corev1.NodeSelectorRequirement) string {
	out := make([]string, len(reqs))
	for i, r := range reqs {
		out[i] = `{"key": dyn(` + celString(r.Key) + `), "operator": dyn(` + celString(string(r.Operator)) + ")"
		if len(r.Values) > 0 {
			out[i] += `, "values": dyn(` + celList(r.Values) + ")"
		}
		out[i] += "}"
	}
	return "[" + strings.Join(out, ", ") + "]"
}

// projectPolicy projects onto a pod created with a restricted scheduler name. A pod that
// assignment gives the name is projected by the assignment policy that gives it, which runs the
// same mutation after its own; this one then finds the annotation and leaves the pod.
func projectPolicy(names projectedNames) *admissionregistrationv1.MutatingAdmissionPolicy {
	match := "false"
	if len(names) > 0 {
		match = "has(object.spec.schedulerName) && object.spec.schedulerName in " + celList(slices.Sorted(maps.Keys(names)))
	}
	return &admissionregistrationv1.MutatingAdmissionPolicy{
		TypeMeta:   mutatingPolicyType,
		ObjectMeta: policyMeta(ProjectPolicyName),
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
			MatchConstraints:   &admissionregistrationv1.MatchResources{ResourceRules: podCreates()},
			MatchConditions:    append(slices.Clone(podUntouched), admissionregistrationv1.MatchCondition{Name: "names-a-restricted-profile", Expression: match}),
			Variables:          projectionVariables("object.spec.schedulerName", names),
			Mutations:          []admissionregistrationv1.Mutation{jsonPatch(projectionPatch(false))},
			FailurePolicy:      ptr.To(admissionregistrationv1.Ignore),
			ReinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy,
		},
	}
}
