package advice

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"

	configv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/names"

	"github.com/schedops/scheduler-profile-operator/scheduler/registry"
)

// lowPercentageOfNodesToScore is the percentageOfNodesToScore below which scoring barely
// applies: in a cluster of more than 100 nodes, the scheduler scores that share of the feasible
// nodes (and at least 100) and picks the best of those only.
const lowPercentageOfNodesToScore = 10

// scoreOnlyArgs are the args fields of plugins that run at other extension points too, which
// only their Score reads.
var scoreOnlyArgs = map[string][]string{
	names.NodeResourcesFit: {"scoringStrategy"},
	names.InterPodAffinity: {"hardPodAffinityWeight", "ignorePreferredTermsOfExistingPods"},
}

var deadChecks = []Check{
	{
		Code:  "SPA201",
		Title: "Args nothing reads",

		Family:  FamilyDead,
		Summary: "`spec.pluginConfig` has args for a plugin that runs at no extension point, so nothing reads them.",
		Fix:     "Enable the plugin (in `spec.plugins.multiPoint.enabled` or at its extension point), or remove its `spec.pluginConfig` entry.",
		run: func(in *Input) []string {
			var out []string
			for i, pc := range in.Profile.Written.PluginConfig {
				if len(in.Profile.runningPoints(pc.Name)) == 0 {
					out = append(out, fmt.Sprintf("spec.pluginConfig[%d] has args for %s, which runs at no extension point: nothing reads them", i, pc.Name))
				}
			}
			return out
		},
	},
	{
		Code:  "SPA202",
		Title: "Score args without scoring",

		Family:  FamilyDead,
		Summary: "`spec.pluginConfig` sets args that only a plugin's Score reads (NodeResourcesFit's scoringStrategy, InterPodAffinity's weights), while the plugin does not score.",
		Fix:     "Enable the plugin at score (remove it from `spec.plugins.score.disabled`), or remove the args.",
		run: func(in *Input) []string {
			var out []string
			for i, pc := range in.Profile.Written.PluginConfig {
				fields := writtenFields(pc, scoreOnlyArgs[pc.Name])
				if _, scores := in.Profile.scores(pc.Name); scores || len(fields) == 0 || len(in.Profile.runningPoints(pc.Name)) == 0 {
					continue
				}
				out = append(out, fmt.Sprintf("spec.pluginConfig[%d].args.%s: only %s's Score reads it, and %s does not score", i, strings.Join(fields, ", "), pc.Name, pc.Name))
			}
			return out
		},
	},
	{
		Code:  "SPA203",
		Title: "Weight not used",

		Family:  FamilyDead,
		Summary: "A plugin's weight is set where it is not used: at an extension point other than score, or in multiPoint for a plugin that does not score or whose score entry sets another weight.",
		Fix:     "Set the weight in `spec.plugins.score.enabled`, or in `spec.plugins.multiPoint.enabled` without a score entry for the same plugin.",
		run: func(in *Input) []string {
			var out []string
			forEachWritten(in.Profile.Written.Plugins, "enabled", func(point string, i int, pl configv1.Plugin) {
				if pl.Weight == nil || *pl.Weight == 0 || point == "score" {
					return
				}
				path := fmt.Sprintf("spec.plugins.%s.enabled[%d].weight %d", point, i, *pl.Weight)
				w, scores := in.Profile.scores(pl.Name)
				switch {
				case point != "multiPoint":
					out = append(out, fmt.Sprintf("%s: weights apply at score only", path))
				case !scores:
					out = append(out, fmt.Sprintf("%s: %s does not score", path, pl.Name))
				case w != *pl.Weight:
					out = append(out, fmt.Sprintf("%s: %s scores with weight %d, set at spec.plugins.score", path, pl.Name, w))
				}
			})
			return out
		},
	},
	{
		Code:  "SPA204",
		Title: "Disabled where it does not run",

		Family:  FamilyDead,
		Summary: "A plugin is disabled at an extension point that it does not implement, so the entry disables nothing, and the plugin keeps running where it does.",
		Fix:     "Disable the plugin at the extension points where it runs (`manager plugins` lists them), or in `spec.plugins.multiPoint.disabled` for all of them.",
		run: func(in *Input) []string {
			var out []string
			forEachWritten(in.Profile.Written.Plugins, "disabled", func(point string, i int, pl configv1.Plugin) {
				implements, known := implementsPoint(pl.Name, point)
				if point == "multiPoint" || pl.Name == "*" || !known || implements {
					return
				}
				msg := fmt.Sprintf("spec.plugins.%s.disabled[%d] %s: %s has no %s extension point, so this disables nothing", point, i, pl.Name, pl.Name, point)
				if running := in.Profile.runningPoints(pl.Name); len(running) > 0 {
					msg += "; it runs at " + strings.Join(running, ", ")
				}
				out = append(out, msg)
			})
			return out
		},
	},
	{
		Code:  "SPA205",
		Title: "Enabled but cancelled",

		Family:  FamilyDead,
		Summary: "A plugin is enabled, but the disabled lists cancel it at every extension point, so it runs nowhere.",
		Fix:     "Remove the plugin from the disabled lists where it should run, or remove the enabled entry.",
		run: func(in *Input) []string {
			var out []string
			forEachWritten(in.Profile.Written.Plugins, "enabled", func(point string, i int, pl configv1.Plugin) {
				if len(in.Profile.runningPoints(pl.Name)) == 0 {
					out = append(out, fmt.Sprintf("spec.plugins.%s.enabled[%d] %s: the disabled lists of spec.plugins cancel it, it runs at no extension point", point, i, pl.Name))
				}
			})
			return out
		},
	},
	{
		Code:  "SPA206",
		Title: "Very low percentageOfNodesToScore",

		Family:  FamilyDead,
		Summary: fmt.Sprintf("`spec.percentageOfNodesToScore` is below %d: in a cluster of more than 100 nodes, the scorers choose among that share of the feasible nodes only (at least 100), and a scoring intent barely applies.", lowPercentageOfNodesToScore),
		Fix:     "Leave `spec.percentageOfNodesToScore` unset (the scheduler adapts it to the cluster's size) or raise it.",
		run: func(in *Input) []string {
			pct := in.Profile.Config.PercentageOfNodesToScore
			if pct == nil || *pct <= 0 || *pct >= lowPercentageOfNodesToScore {
				return nil
			}
			return []string{fmt.Sprintf("spec.percentageOfNodesToScore %d: above 100 nodes, only %d%% of the feasible nodes are scored", *pct, *pct)}
		},
	},
}

// forEachWritten calls fn for each entry of the enabled or disabled lists of the plugins as
// written, extension point by extension point in the order of upstream's type.
func forEachWritten(plugins *configv1.Plugins, list string, fn func(point string, i int, pl configv1.Plugin)) {
	if plugins == nil {
		return
	}
	v := reflect.ValueOf(plugins).Elem()
	for i, f := range reflect.VisibleFields(v.Type()) {
		set, ok := v.Field(i).Interface().(configv1.PluginSet)
		if !ok {
			continue
		}
		entries := set.Enabled
		if list == "disabled" {
			entries = set.Disabled
		}
		for j, pl := range entries {
			fn(strings.Split(f.Tag.Get("json"), ",")[0], j, pl)
		}
	}
}

// writtenFields are those of fields that the written args of pc set.
func writtenFields(pc configv1.PluginConfig, fields []string) []string {
	var args map[string]json.RawMessage
	if len(fields) == 0 || json.Unmarshal(pc.Args.Raw, &args) != nil {
		return nil
	}
	var out []string
	for _, f := range fields {
		if _, ok := args[f]; ok {
			out = append(out, f)
		}
	}
	return out
}

// pluginPoints are the extension points of every plugin of the registry, by name: the JSON
// names of the plugin sets (filter, score, ...).
var pluginPoints = sync.OnceValues(func() (map[string][]string, error) {
	infos, err := registry.Plugins(context.Background())
	if err != nil {
		return nil, err
	}
	out := make(map[string][]string, len(infos))
	for _, info := range infos {
		for _, p := range info.ExtensionPoints {
			out[info.Name] = append(out[info.Name], lowerFirst(p))
		}
	}
	return out, nil
})

// implementsPoint tells whether the plugin name implements point; known is false when the
// registry cannot tell.
func implementsPoint(name, point string) (implements, known bool) {
	points, err := pluginPoints()
	if err != nil {
		return false, false
	}
	ps, ok := points[name]
	return slices.Contains(ps, point), ok
}
