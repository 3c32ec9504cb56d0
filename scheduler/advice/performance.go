package advice

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/kubernetes/pkg/scheduler/framework"
)

// extenderName is the name under which the framework registers the events of extenders.
const extenderName = framework.ExtenderName

var performanceChecks = []Check{
	{
		Code:  "SPA401",
		Title: "Plugin switches off batching",

		Family: FamilyPerformance,
		Summary: "A plugin at preFilter, filter, preScore or score does not sign pods (it is no SignPlugin), which switches off the scheduler's " +
			"opportunistic batching (KEP-5598) for every pod of the profile: each pod gets a full scheduling cycle, even one just like the last.",
		Fix: "Implement `SignPod` in the plugin (return no fragment when its decision depends on the node only), or run it in a " +
			"profile of its own for the pods that need it.",
		run: func(in *Input) []string {
			if !in.Profile.Batching || len(in.Profile.Unsigned) == 0 {
				return nil
			}
			return []string{fmt.Sprintf("plugins that do not sign pods switch off opportunistic batching for the profile: %s", strings.Join(in.Profile.Unsigned, ", "))}
		},
	},
	{
		Code:  "SPA402",
		Title: "Extenders switch off batching",

		Family:  FamilyPerformance,
		Summary: "The scheduler has extenders, which switch off opportunistic batching (KEP-5598) for every pod of the profile.",
		Fix:     "Move the extender's logic into a compiled-in plugin that signs pods, or accept the cost and silence the code.",
		run: func(in *Input) []string {
			if !in.Profile.Batching || len(in.Profile.Extenders) == 0 {
				return nil
			}
			return []string{fmt.Sprintf("the scheduler's extenders (spec.extenders, %d) switch off opportunistic batching for the profile", len(in.Profile.Extenders))}
		},
	},
	{
		Code:  "SPA403",
		Title: "Plugin without QueueingHints",

		Family: FamilyPerformance,
		Summary: "A plugin registers cluster events without QueueingHints (or registers none, so it gets them all), unlike the plugins of the default profile: " +
			"each such event moves every pod the plugin rejected back to the active queue to be tried again, which costs scheduling cycles on a busy cluster.",
		Fix: "Implement `EventsToRegister` in the plugin with a `QueueingHintFn` for each event.",
		run: func(in *Input) []string {
			var lacking []string
			for _, name := range in.Profile.Unhinted {
				// Extenders have no hints at all; SPA402 is about them.
				if name != extenderName && (in.Profile.Default == nil || !slices.Contains(in.Profile.Default.Unhinted, name)) {
					lacking = append(lacking, name)
				}
			}
			if len(lacking) == 0 {
				return nil
			}
			return []string{fmt.Sprintf("plugins register events without QueueingHints, so each such event retries every pod they rejected: %s", strings.Join(lacking, ", "))}
		},
	},
}
