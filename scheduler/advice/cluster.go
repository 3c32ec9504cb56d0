package advice

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/component-helpers/scheduling/corev1/nodeaffinity"
	schedulerconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/names"

	pluginconfig "github.com/schedops/scheduler-profile-operator/scheduler/apis/config"
	"github.com/schedops/scheduler-profile-operator/scheduler/plugins/nodepool"
)

// few tells whether matched of nodes are only a few: one node (a drain or a failure of it
// leaves the pods that need it Pending), or less than a tenth of the nodes.
func few(matched, nodes int) bool {
	return matched > 0 && matched < nodes && (matched == 1 || matched*10 < nodes)
}

var clusterChecks = []Check{
	{
		Code:  "SPA301",
		Title: "Hard spread key on no node",

		Family:       FamilyCluster,
		Summary:      "A listed default constraint of PodTopologySpread with `whenUnsatisfiable: DoNotSchedule` has a topologyKey that no node carries: every pod of a workload (a Service, ReplicaSet or StatefulSet) without constraints of its own stays Pending.",
		Fix:          "Label the nodes with the key (e.g. `topology.kubernetes.io/zone`), or make the constraint `whenUnsatisfiable: ScheduleAnyway`.",
		NeedsCluster: true,
		run: func(in *Input) []string {
			return spreadKeys(in, func(carriers, nodes int) bool { return carriers == 0 && nodes > 0 })
		},
	},
	{
		Code:  "SPA302",
		Title: "Hard spread key on few nodes",

		Family:       FamilyCluster,
		Summary:      "A listed default constraint of PodTopologySpread with `whenUnsatisfiable: DoNotSchedule` has a topologyKey that only a few nodes carry (one, or less than a tenth of the nodes): a workload's pods can only land on those.",
		Fix:          "Label the other nodes with the key, or make the constraint `whenUnsatisfiable: ScheduleAnyway`.",
		NeedsCluster: true,
		run: func(in *Input) []string {
			return spreadKeys(in, few)
		},
	},
	{
		Code:  "SPA303",
		Title: "Node selection matches no node",

		Family:       FamilyCluster,
		Summary:      "A node selection that applies to every pod (NodePool's nodeSelector, NodeAffinity's addedAffinity required terms) matches no node: every pod stays Pending.",
		Fix:          "Label the nodes the profile is for, or correct the selector.",
		NeedsCluster: true,
		run: func(in *Input) []string {
			return selections(in, func(matched, nodes int) bool { return matched == 0 && nodes > 0 })
		},
	},
	{
		Code:  "SPA304",
		Title: "Node selection matches few nodes",

		Family:       FamilyCluster,
		Summary:      "A node selection that applies to every pod matches only a few nodes (one, or less than a tenth of the nodes): a drain or a failure of one leaves the profile's pods Pending, or few nodes take them all.",
		Fix:          "Label more nodes for the profile, or silence the code if the few nodes are meant.",
		NeedsCluster: true,
		run: func(in *Input) []string {
			return selections(in, few)
		},
	},
}

// spreadKeys reports the DoNotSchedule default constraints of PodTopologySpread, when it
// filters, whose topology key is carried by a number of nodes that fires.
func spreadKeys(in *Input, fires func(carriers, nodes int) bool) []string {
	args, ok := in.Profile.args(names.PodTopologySpread).(*schedulerconfig.PodTopologySpreadArgs)
	if !ok || !in.Profile.filters(names.PodTopologySpread) || args.DefaultingType != schedulerconfig.ListDefaulting {
		return nil
	}
	var out []string
	for i, c := range args.DefaultConstraints {
		if c.WhenUnsatisfiable != corev1.DoNotSchedule {
			continue
		}
		carriers := 0
		for _, n := range in.Cluster.Nodes {
			if _, ok := n.Labels[c.TopologyKey]; ok {
				carriers++
			}
		}
		if fires(carriers, len(in.Cluster.Nodes)) {
			out = append(out, fmt.Sprintf("spec.pluginConfig[PodTopologySpread].args.defaultConstraints[%d] (DoNotSchedule) spreads on %s, which %d of %d nodes carry", i, c.TopologyKey, carriers, len(in.Cluster.Nodes)))
		}
	}
	return out
}

// selections reports the node selections of NodePool and NodeAffinity, when they filter, that
// match a number of nodes that fires.
func selections(in *Input, fires func(matched, nodes int) bool) []string {
	var out []string
	report := func(what string, match func(*corev1.Node) bool) {
		matched := 0
		for i := range in.Cluster.Nodes {
			if match(&in.Cluster.Nodes[i]) {
				matched++
			}
		}
		if fires(matched, len(in.Cluster.Nodes)) {
			out = append(out, fmt.Sprintf("%s matches %d of %d nodes", what, matched, len(in.Cluster.Nodes)))
		}
	}
	if args, ok := in.Profile.args(nodepool.Name).(*pluginconfig.NodePoolArgs); ok && in.Profile.filters(nodepool.Name) && args.NodeSelector != nil {
		if sel, err := metav1.LabelSelectorAsSelector(args.NodeSelector); err == nil {
			report("spec.pluginConfig[NodePool].args.nodeSelector", func(n *corev1.Node) bool { return sel.Matches(labelsOf(n)) })
		}
	}
	if args, ok := in.Profile.args(names.NodeAffinity).(*schedulerconfig.NodeAffinityArgs); ok && in.Profile.filters(names.NodeAffinity) &&
		args.AddedAffinity != nil && args.AddedAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		sel := nodeaffinity.NewLazyErrorNodeSelector(args.AddedAffinity.RequiredDuringSchedulingIgnoredDuringExecution)
		report("spec.pluginConfig[NodeAffinity].args.addedAffinity.requiredDuringSchedulingIgnoredDuringExecution", func(n *corev1.Node) bool {
			ok, err := sel.Match(n)
			return ok && err == nil
		})
	}
	return out
}

func labelsOf(n *corev1.Node) labels.Set { return labels.Set(n.Labels) }
