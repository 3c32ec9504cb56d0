// Package projection computes the node restrictions of a scheduler configuration that have an
// exact pod-level equivalent, and writes them onto a pod as required node affinity, ANDed with
// the pod's own terms as the scheduler ANDs NodeAffinity's addedAffinity with them.
//
// Autoscalers (Karpenter, cluster-autoscaler), the descheduler and Kueue read pod specs, not
// scheduler profiles: a pod that carries its profile's restrictions is provisioned for where its
// scheduler will place it. The operator's admission policy does this in the apiserver
// (controllers/assignment/policy.go); Project is the same operation in Go, which `manager
// simulate` applies and the policy's tests compare with.
package projection

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	schedulerconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/names"

	"github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/scheduler/apis/config"
	"github.com/schedops/scheduler-profile-operator/scheduler/plugins/nodepool"
	"github.com/schedops/scheduler-profile-operator/scheduler/profile"
)

// Restriction is what a scheduler name's configuration restricts its pods to, as required node
// affinity: Terms are ORed, the requirements of each term ANDed, as in a pod's
// requiredDuringSchedulingIgnoredDuringExecution. Sources name the settings they come from.
type Restriction struct {
	Terms   []corev1.NodeSelectorTerm
	Sources []string
}

// Note is the annotation AnnotationProjectedNodeRestrictions of a pod that got the restriction
// of profile's scheduler.
func (r Restriction) Note(profileName string) string {
	return "SchedulerProfile " + profileName + ": " + strings.Join(r.Sources, "; ")
}

// Of reads the restrictions of every profile of a rendered configuration, by scheduler name;
// a profile without any is left out.
func Of(data []byte) (map[string]Restriction, error) {
	cfg, err := profile.DecodeConfig(data)
	if err != nil {
		return nil, err
	}
	out := map[string]Restriction{}
	for i := range cfg.Profiles {
		r, err := ofProfile(&cfg.Profiles[i])
		if err != nil {
			return nil, fmt.Errorf("profile %s: %w", cfg.Profiles[i].SchedulerName, err)
		}
		if len(r.Terms) > 0 {
			out[cfg.Profiles[i].SchedulerName] = r
		}
	}
	return out, nil
}

// ofProfile is the restriction of one profile after upstream's defaulting: NodePool's selector
// and NodeAffinity's addedAffinity, each only when its plugin runs at filter.
func ofProfile(p *schedulerconfig.KubeSchedulerProfile) (Restriction, error) {
	var r Restriction
	if filters(p, nodepool.Name) {
		args, ok := argsOf(p, nodepool.Name).(*config.NodePoolArgs)
		if !ok {
			return Restriction{}, fmt.Errorf("%s has no NodePoolArgs", nodepool.Name)
		}
		if term, ok := selectorTerm(args.NodeSelector); ok {
			r.Terms = []corev1.NodeSelectorTerm{term}
			r.Sources = append(r.Sources, fmt.Sprintf("%s nodeSelector (%s)", nodepool.Name, metav1.FormatLabelSelector(args.NodeSelector)))
		}
	}
	if filters(p, names.NodeAffinity) {
		args, ok := argsOf(p, names.NodeAffinity).(*schedulerconfig.NodeAffinityArgs)
		if ok && args.AddedAffinity != nil && args.AddedAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
			added := args.AddedAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
			if r.Terms == nil {
				r.Terms = slices.Clone(added)
			} else {
				r.Terms = And(added, r.Terms)
			}
			r.Sources = append(r.Sources, names.NodeAffinity+" addedAffinity required terms")
		}
	}
	return r, nil
}

// filters tells whether the framework runs the plugin at filter, as it expands multiPoint
// (frameworkImpl.expandMultiPointPlugins): enabled at filter, or enabled at multiPoint and not
// disabled at filter by name or by "*". Both plugins read here implement Filter.
func filters(p *schedulerconfig.KubeSchedulerProfile, name string) bool {
	named := func(set []schedulerconfig.Plugin, n string) bool {
		return slices.ContainsFunc(set, func(pl schedulerconfig.Plugin) bool { return pl.Name == n })
	}
	if named(p.Plugins.Filter.Enabled, name) {
		return true
	}
	if named(p.Plugins.Filter.Disabled, name) || named(p.Plugins.Filter.Disabled, "*") {
		return false
	}
	return named(p.Plugins.MultiPoint.Enabled, name)
}

// argsOf are the defaulted args of a plugin.
func argsOf(p *schedulerconfig.KubeSchedulerProfile, name string) any {
	for _, pc := range p.PluginConfig {
		if pc.Name == name {
			return pc.Args
		}
	}
	return nil
}

// selectorTerm is a label selector as one node selector term: the same nodes, since a label
// selector's operators mean on a node's labels what a node selector's do (NotIn and DoesNotExist
// also match a node without the label). A selector that selects every node is no term.
func selectorTerm(sel *metav1.LabelSelector) (corev1.NodeSelectorTerm, bool) {
	if sel == nil {
		return corev1.NodeSelectorTerm{}, false
	}
	var term corev1.NodeSelectorTerm
	for _, k := range slices.Sorted(func(yield func(string) bool) {
		for k := range sel.MatchLabels {
			if !yield(k) {
				return
			}
		}
	}) {
		term.MatchExpressions = append(term.MatchExpressions, corev1.NodeSelectorRequirement{Key: k, Operator: corev1.NodeSelectorOpIn, Values: []string{sel.MatchLabels[k]}})
	}
	for _, r := range sel.MatchExpressions {
		term.MatchExpressions = append(term.MatchExpressions, corev1.NodeSelectorRequirement{Key: r.Key, Operator: corev1.NodeSelectorOperator(r.Operator), Values: slices.Clone(r.Values)})
	}
	return term, len(term.MatchExpressions) > 0
}

// And is the terms that select the nodes both pod and added select: each term of pod ANDed with
// each of added. A term with no requirement selects no node, and so does its AND with another.
func And(pod, added []corev1.NodeSelectorTerm) []corev1.NodeSelectorTerm {
	out := make([]corev1.NodeSelectorTerm, 0, len(pod)*len(added))
	for _, t := range pod {
		for _, a := range added {
			out = append(out, and(t, a))
		}
	}
	return out
}

// and is one term ANDed with another; an empty term stays empty.
func and(t, a corev1.NodeSelectorTerm) corev1.NodeSelectorTerm {
	if empty(t) {
		return *t.DeepCopy()
	}
	return corev1.NodeSelectorTerm{
		MatchExpressions: append(slices.Clone(t.MatchExpressions), a.MatchExpressions...),
		MatchFields:      append(slices.Clone(t.MatchFields), a.MatchFields...),
	}
}

// empty tells whether a term has no requirement: it selects no node.
func empty(t corev1.NodeSelectorTerm) bool {
	return len(t.MatchExpressions) == 0 && len(t.MatchFields) == 0
}

// OptedOut tells whether the pod's author turned projection off for it, or it was projected
// already (a copy of a projected pod).
func OptedOut(pod *corev1.Pod) bool {
	_, projected := pod.Annotations[v1alpha1.AnnotationProjectedNodeRestrictions]
	return projected || pod.Annotations[v1alpha1.AnnotationProjectNodeRestrictions] == "false"
}

// Project writes r onto the pod, as the projection policy does at the pod's creation: its
// required node affinity becomes its own terms ANDed with r's (r's alone when it has none), and
// the annotation AnnotationProjectedNodeRestrictions says so with note. It does nothing to a
// pod that OptedOut, or for a restriction without terms, and tells whether it wrote.
func Project(pod *corev1.Pod, r Restriction, note string) bool {
	if len(r.Terms) == 0 || OptedOut(pod) {
		return false
	}
	if pod.Spec.Affinity == nil {
		pod.Spec.Affinity = &corev1.Affinity{}
	}
	if pod.Spec.Affinity.NodeAffinity == nil {
		pod.Spec.Affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	na := pod.Spec.Affinity.NodeAffinity
	if na.RequiredDuringSchedulingIgnoredDuringExecution == nil || len(na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms) == 0 {
		na.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{NodeSelectorTerms: slices.Clone(r.Terms)}
	} else {
		na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms = And(na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms, r.Terms)
	}
	metav1.SetMetaDataAnnotation(&pod.ObjectMeta, v1alpha1.AnnotationProjectedNodeRestrictions, note)
	return true
}
