package advice

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	schedulerconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/names"

	"github.com/schedops/scheduler-profile-operator/scheduler/plugins/nodelabelpreference"
)

// minIntentShare is the share of the weights below which a scoring intent does not decide: the
// other scorers together can give a node twice the points the intent can.
const minIntentShare = 1.0 / 3

// conditionalScorers score the nodes of a pod differently only when the pod asks for it (a
// toleration, a preferred affinity, a volume, a resource claim): for other pods they give every
// node the same score, so their weight does not dilute an intent.
var conditionalScorers = sets.New(names.TaintToleration, names.NodeAffinity, names.InterPodAffinity, names.VolumeBinding, names.DynamicResources)

var intentChecks = []Check{
	{
		Code:  "SPA101",
		Title: "Bin-packing outvoted",

		Family:  FamilyIntent,
		Summary: "Bin-packing (NodeResourcesFit with MostAllocated or an increasing RequestedToCapacityRatio) has less than a third of the score weights of the scorers that rank every pod's nodes.",
		Fix: "Raise NodeResourcesFit's weight in `spec.plugins.score.enabled` (e.g. `{name: NodeResourcesFit, weight: 5}`), " +
			"or disable the scorers that outvote it in `spec.plugins.score.disabled`.",
		run: func(in *Input) []string {
			if what := binPacking(in.Profile); what != "" {
				return outvoted(in.Profile, names.NodeResourcesFit, "bin-packing ("+what+")")
			}
			return nil
		},
	},
	{
		Code:  "SPA102",
		Title: "Label preference outvoted",

		Family:  FamilyIntent,
		Summary: "A label preference (NodeLabelPreference, or NodeAffinity's addedAffinity with preferred terms) has less than a third of the score weights of the scorers that rank every pod's nodes.",
		Fix:     "Raise the plugin's weight in `spec.plugins.score.enabled` or `spec.plugins.multiPoint.enabled`, or disable the scorers that outvote it.",
		run: func(in *Input) []string {
			var out []string
			if _, ok := in.Profile.scores(nodelabelpreference.Name); ok {
				out = append(out, outvoted(in.Profile, nodelabelpreference.Name, "the label preference")...)
			}
			if prefersLabels(in.Profile) {
				out = append(out, outvoted(in.Profile, names.NodeAffinity, "the label preference of addedAffinity")...)
			}
			return out
		},
	},
	{
		Code:  "SPA103",
		Title: "Spreading outvoted",

		Family:  FamilyIntent,
		Summary: "Spreading by PodTopologySpread's listed default constraints (whenUnsatisfiable: ScheduleAnyway) has less than a third of the score weights of the scorers that rank every pod's nodes.",
		Fix:     "Raise PodTopologySpread's weight in `spec.plugins.score.enabled` (e.g. `{name: PodTopologySpread, weight: 5}`).",
		run: func(in *Input) []string {
			args, ok := in.Profile.args(names.PodTopologySpread).(*schedulerconfig.PodTopologySpreadArgs)
			if !ok || args.DefaultingType != schedulerconfig.ListDefaulting || !hasConstraint(args, corev1.ScheduleAnyway) {
				return nil
			}
			return outvoted(in.Profile, names.PodTopologySpread, "spreading (spec.pluginConfig[PodTopologySpread].args.defaultConstraints)")
		},
	},
	{
		Code:  "SPA104",
		Title: "Bin-packing against balanced allocation",

		Family:  FamilyIntent,
		Summary: "Bin-packing runs with NodeResourcesBalancedAllocation scoring, which prefers the nodes whose resources stay balanced whatever their allocation, and so pulls pods away from the fullest nodes.",
		Fix:     "Add `{name: NodeResourcesBalancedAllocation}` to `spec.plugins.score.disabled`.",
		run: func(in *Input) []string {
			what := binPacking(in.Profile)
			w, ok := in.Profile.scores(names.NodeResourcesBalancedAllocation)
			if what == "" || !ok {
				return nil
			}
			fit, _ := in.Profile.scores(names.NodeResourcesFit)
			return []string{fmt.Sprintf("bin-packing (%s, weight %d) runs with NodeResourcesBalancedAllocation scoring (weight %d): disable it in spec.plugins.score.disabled", what, fit, w)}
		},
	},
	{
		Code:  "SPA105",
		Title: "Bin-packing against topology spreading",

		Family:  FamilyIntent,
		Summary: "Bin-packing runs with PodTopologySpread scoring soft default constraints (the system defaults, or listed ScheduleAnyway ones), which spread each workload's pods over nodes and zones.",
		Fix: "Add `{name: PodTopologySpread}` to `spec.plugins.score.disabled`, or set its args to " +
			"`defaultingType: List` with no ScheduleAnyway constraint.",
		run: func(in *Input) []string {
			what := binPacking(in.Profile)
			w, ok := in.Profile.scores(names.PodTopologySpread)
			args, typed := in.Profile.args(names.PodTopologySpread).(*schedulerconfig.PodTopologySpreadArgs)
			if what == "" || !ok || !typed {
				return nil
			}
			switch {
			case args.DefaultingType == schedulerconfig.SystemDefaulting:
				return []string{fmt.Sprintf("bin-packing (%s) runs with PodTopologySpread scoring the system default constraints (weight %d), which spread every workload's pods: disable it in spec.plugins.score.disabled", what, w)}
			case hasConstraint(args, corev1.ScheduleAnyway):
				return []string{fmt.Sprintf("bin-packing (%s) runs with PodTopologySpread scoring spec.pluginConfig[PodTopologySpread].args.defaultConstraints (weight %d), which spread every workload's pods", what, w)}
			}
			return nil
		},
	},
}

// binPacking describes the bin-packing strategy of NodeResourcesFit when it scores with one: its
// scoringStrategy is MostAllocated, or RequestedToCapacityRatio with a shape that scores a full
// node above an empty one.
func binPacking(p *Profile) string {
	if _, ok := p.scores(names.NodeResourcesFit); !ok {
		return ""
	}
	args, ok := p.args(names.NodeResourcesFit).(*schedulerconfig.NodeResourcesFitArgs)
	if !ok || args.ScoringStrategy == nil {
		return ""
	}
	switch s := args.ScoringStrategy; s.Type {
	case schedulerconfig.MostAllocated:
		return "spec.pluginConfig[NodeResourcesFit].args.scoringStrategy.type MostAllocated"
	case schedulerconfig.RequestedToCapacityRatio:
		if r := s.RequestedToCapacityRatio; r != nil && len(r.Shape) > 1 && r.Shape[len(r.Shape)-1].Score > r.Shape[0].Score {
			return "spec.pluginConfig[NodeResourcesFit].args.scoringStrategy.type RequestedToCapacityRatio"
		}
	}
	return ""
}

// prefersLabels tells whether NodeAffinity scores with preferred terms of its addedAffinity,
// which then apply to every pod.
func prefersLabels(p *Profile) bool {
	args, ok := p.args(names.NodeAffinity).(*schedulerconfig.NodeAffinityArgs)
	_, scores := p.scores(names.NodeAffinity)
	return ok && scores && args.AddedAffinity != nil && len(args.AddedAffinity.PreferredDuringSchedulingIgnoredDuringExecution) > 0
}

func hasConstraint(args *schedulerconfig.PodTopologySpreadArgs, when corev1.UnsatisfiableConstraintAction) bool {
	for _, c := range args.DefaultConstraints {
		if c.WhenUnsatisfiable == when {
			return true
		}
	}
	return false
}

// outvoted reports the intent of plugin name when its weight is less than minIntentShare of the
// weights of the scorers that rank every pod's nodes (all but conditionalScorers, and the plugin
// itself always). The message gives both shares, of those scorers and of all.
func outvoted(p *Profile, name, intent string) []string {
	var own, all, ranking int32
	for _, pl := range p.Running.Score.Enabled {
		all += pl.Weight
		switch {
		case pl.Name == name:
			own = pl.Weight
			ranking += pl.Weight
		case !conditionalScorers.Has(pl.Name) || (pl.Name == names.NodeAffinity && prefersLabels(p)):
			ranking += pl.Weight
		}
	}
	if ranking == 0 || float64(own)/float64(ranking) >= minIntentShare {
		return nil
	}
	return []string{fmt.Sprintf("%s scores with %s weight %d: %s of the weights of the scorers that rank every pod's nodes (%d), %s of all score weights (%d); raise it in spec.plugins.score.enabled",
		intent, name, own, percent(float64(own)/float64(ranking)), ranking, percent(float64(own)/float64(all)), all)}
}
