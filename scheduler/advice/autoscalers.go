package advice

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	schedulerconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/names"

	"github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/scheduler/apis/config"
	"github.com/schedops/scheduler-profile-operator/scheduler/plugins/nodepool"
)

var autoscalerChecks = []Check{
	{
		Code:  "SPA601",
		Title: "Filters no autoscaler can see",

		Family: FamilyAutoscalers,
		Summary: "The scheduler filters nodes by something no pod spec carries (a filter plugin that is not kube-scheduler's own, " +
			"NodePool excepted; an extender with a filterVerb; a default constraint of PodTopologySpread with " +
			"`whenUnsatisfiable: DoNotSchedule`), which autoscalers (Karpenter, cluster-autoscaler), reading only pod specs, do not " +
			"provision for: they may launch nodes that the scheduler then rejects while the profile's pods stay Pending.",
		Fix: "Express the restriction on the pods (node affinity, `topologySpreadConstraints`), or select nodes with NodePool's " +
			"`nodeSelector` or NodeAffinity's `addedAffinity` required terms, which the operator writes onto the profile's pods " +
			"(`spec.projection`). If no autoscaler runs in the cluster, silence the code with the annotation `" +
			v1alpha1.AnnotationAdviceIgnore + "`.",
		run: func(in *Input) []string {
			hidden := hiddenFilters(in.Profile)
			if len(hidden) == 0 {
				return nil
			}
			return []string{fmt.Sprintf("autoscalers (Karpenter, cluster-autoscaler) read pod specs and will not provision for what the scheduler filters by: %s",
				strings.Join(hidden, "; "))}
		},
	},
	{
		Code:  "SPA602",
		Title: "Node restrictions not projected",

		Family: FamilyAutoscalers,
		Summary: "The profile keeps its pods on some nodes (NodePool's `nodeSelector`, NodeAffinity's `addedAffinity` required terms) " +
			"while `spec.projection.nodeRestrictions` is `Disabled`: its pods do not carry the restriction, so autoscalers " +
			"(Karpenter, cluster-autoscaler), which read only pod specs, may launch nodes the scheduler will not use.",
		Fix: "Remove `spec.projection.nodeRestrictions: Disabled` (projection is on by default), or put the restriction into the " +
			"pods' own node affinity. If no autoscaler runs in the cluster, silence the code with the annotation `" +
			v1alpha1.AnnotationAdviceIgnore + "`.",
		run: func(in *Input) []string {
			if !in.ProjectionDisabled {
				return nil
			}
			var restricted []string
			if in.Profile.filters(nodepool.Name) {
				if args, ok := in.Profile.args(nodepool.Name).(*config.NodePoolArgs); ok && args.NodeSelector != nil &&
					(len(args.NodeSelector.MatchLabels) > 0 || len(args.NodeSelector.MatchExpressions) > 0) {
					restricted = append(restricted, nodepool.Name+" nodeSelector")
				}
			}
			if in.Profile.filters(names.NodeAffinity) {
				if args, ok := in.Profile.args(names.NodeAffinity).(*schedulerconfig.NodeAffinityArgs); ok && args.AddedAffinity != nil &&
					args.AddedAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
					restricted = append(restricted, names.NodeAffinity+" addedAffinity required terms")
				}
			}
			if len(restricted) == 0 {
				return nil
			}
			return []string{fmt.Sprintf("spec.projection.nodeRestrictions is Disabled: autoscalers do not see %s on the pods", strings.Join(restricted, " and "))}
		},
	},
}

// hiddenFilters names what the profile's scheduler filters nodes by that no pod spec carries:
// out-of-tree filters but NodePool, extenders with a filterVerb, and PodTopologySpread's listed
// DoNotSchedule default constraints while it filters. NodePool's nodeSelector and
// NodeAffinity's addedAffinity are left out because the operator writes them onto the pods; a
// disabled in-tree filter only makes the scheduler accept more than an autoscaler expects.
func hiddenFilters(p *Profile) []string {
	var out []string
	inTree := plugins.NewInTreeRegistry()
	for _, pl := range p.Running.Filter.Enabled {
		if inTree[pl.Name] == nil && pl.Name != nodepool.Name {
			out = append(out, "filter plugin "+pl.Name)
		}
	}
	for i, e := range p.Extenders {
		if e.FilterVerb != "" {
			out = append(out, fmt.Sprintf("spec.extenders[%d] (urlPrefix %s, filterVerb %s)", i, e.URLPrefix, e.FilterVerb))
		}
	}
	// With System defaulting the constraints are upstream's, which are all ScheduleAnyway.
	args, ok := p.args(names.PodTopologySpread).(*schedulerconfig.PodTopologySpreadArgs)
	if ok && p.filters(names.PodTopologySpread) && args.DefaultingType == schedulerconfig.ListDefaulting {
		for i, c := range args.DefaultConstraints {
			if c.WhenUnsatisfiable == corev1.DoNotSchedule {
				out = append(out, fmt.Sprintf("spec.pluginConfig[PodTopologySpread].args.defaultConstraints[%d] (DoNotSchedule on %s)", i, c.TopologyKey))
			}
		}
	}
	return out
}
