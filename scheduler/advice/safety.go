package advice

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/names"
)

// systemPriorityClassPrefix starts the names of the PriorityClasses that Kubernetes creates
// itself (system-cluster-critical, system-node-critical), for pods of the default scheduler.
const systemPriorityClassPrefix = "system-"

var safetyChecks = []Check{
	{
		Code:  "SPA501",
		Title: "Preemption off while PriorityClasses preempt",

		Family: FamilySafety,
		Summary: "DefaultPreemption does not run at postFilter while the cluster has PriorityClasses (other than the system ones) that may preempt: " +
			"their pods wait for room instead of taking it from lower-priority pods.",
		Fix: "Enable DefaultPreemption (remove it from `spec.plugins.postFilter.disabled` or `spec.plugins.multiPoint.disabled`), " +
			"or set `preemptionPolicy: Never` on those PriorityClasses if waiting is meant.",
		NeedsCluster: true,
		run: func(in *Input) []string {
			for _, pl := range in.Profile.Running.PostFilter.Enabled {
				if pl.Name == names.DefaultPreemption {
					return nil
				}
			}
			var preempting []string
			for _, pc := range in.Cluster.PriorityClasses {
				if strings.HasPrefix(pc.Name, systemPriorityClassPrefix) || (pc.PreemptionPolicy != nil && *pc.PreemptionPolicy == corev1.PreemptNever) {
					continue
				}
				preempting = append(preempting, pc.Name)
			}
			if len(preempting) == 0 {
				return nil
			}
			return []string{fmt.Sprintf("DefaultPreemption does not run at postFilter, while %d PriorityClasses may preempt (preemptionPolicy is not Never)", len(preempting))}
		},
	},
	{
		Code:  "SPA502",
		Title: "Filter extender not ignorable",

		Family:  FamilySafety,
		Summary: "An extender with a filterVerb is not ignorable: while it cannot be reached, the scheduler schedules none of the profile's pods.",
		Fix:     "Set `ignorable: true` on the extender, unless no pod may be scheduled without its filter.",
		run: func(in *Input) []string {
			var out []string
			for i, e := range in.Profile.Extenders {
				if e.FilterVerb != "" && !e.Ignorable {
					out = append(out, fmt.Sprintf("spec.extenders[%d] (filterVerb %s) is not ignorable: while it is unreachable no pod is scheduled", i, e.FilterVerb))
				}
			}
			return out
		},
	},
}
