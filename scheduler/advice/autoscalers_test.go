package advice

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	schedulerconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/names"

	"github.com/schedops/scheduler-profile-operator/scheduler/plugins/nodepool"
)

// The cases of the autoscalers' family run with the others (TestChecks).
func init() {
	checkCases = append(checkCases, autoscalerCases...)
}

const addedAffinity = `
pluginConfig:
- name: NodeAffinity
  args:
    addedAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms: [{matchExpressions: [{key: pool, operator: In, values: [batch]}]}]
`

// projectionOff turns off the projection of node restrictions.
const projectionOff = `
projection: {nodeRestrictions: Disabled}
`

var autoscalerCases = []struct {
	name    string
	code    string
	spec    string
	cluster *Cluster
	want    string
}{
	{name: "an out-of-tree filter", code: "SPA601", want: "read pod specs and will not provision for what the scheduler filters by: filter plugin TestUnsignedFilter", spec: `
plugins:
  filter: {enabled: [{name: TestUnsignedFilter}]}
`},
	{name: "NodePool only, which the operator projects", code: "SPA601", spec: pool},
	{name: "NodePool, projection off", code: "SPA602", spec: pool + projectionOff,
		want: "spec.projection.nodeRestrictions is Disabled: autoscalers do not see NodePool nodeSelector on the pods"},
	{name: "NodePool and addedAffinity, projection off", code: "SPA602", spec: projectionOff + `
plugins:
  multiPoint: {enabled: [{name: NodePool}]}
pluginConfig:
- name: NodePool
  args: {nodeSelector: {matchLabels: {pool: batch}}}
- name: NodeAffinity
  args:
    addedAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms: [{matchExpressions: [{key: zone, operator: In, values: [z1]}]}]
`,
		want: "NodePool nodeSelector and NodeAffinity addedAffinity required terms"},
	{name: "NodePool, projection on", code: "SPA602", spec: pool},
	{name: "no restriction, projection off", code: "SPA602", spec: projectionOff},
	{name: "addedAffinity only, which the operator projects", code: "SPA601", spec: addedAffinity},
	{name: "a filter extender that is not ignorable", code: "SPA601", spec: filterExtender,
		want: "spec.extenders[0] (urlPrefix http://extender.example:8888, filterVerb filter)"},
	{name: "an ignorable filter extender", code: "SPA601", spec: filterExtender + "  ignorable: true\n",
		want: "spec.extenders[0] (urlPrefix http://extender.example:8888, filterVerb filter)"},
	{name: "a prioritize-only extender", code: "SPA601", spec: `
extenders:
- urlPrefix: http://extender.example:8888
  prioritizeVerb: prioritize
  weight: 1
`},
	{name: "DoNotSchedule default constraints", code: "SPA601", spec: zoneSpread,
		want: "spec.pluginConfig[PodTopologySpread].args.defaultConstraints[0] (DoNotSchedule on topology.kubernetes.io/zone)"},
	{name: "ScheduleAnyway default constraints", code: "SPA601", spec: `
pluginConfig:
- name: PodTopologySpread
  args:
    defaultingType: List
    defaultConstraints:
    - {maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: ScheduleAnyway}
`},
	{name: "DoNotSchedule default constraints, PodTopologySpread disabled at filter", code: "SPA601", spec: zoneSpread + `
plugins:
  filter: {disabled: [{name: PodTopologySpread}]}
`},
	{name: "an in-tree filter disabled", code: "SPA601", spec: `
plugins:
  filter: {disabled: [{name: TaintToleration}]}
`},
	{name: "an out-of-tree filter, a filter extender and DoNotSchedule defaults, all named", code: "SPA601",
		want: "filter plugin TestUnsignedFilter; spec.extenders[0] (urlPrefix http://extender.example:8888, filterVerb filter); " +
			"spec.pluginConfig[PodTopologySpread].args.defaultConstraints[0] (DoNotSchedule on topology.kubernetes.io/zone)",
		spec: zoneSpread + filterExtender + `
plugins:
  filter: {enabled: [{name: TestUnsignedFilter}]}
`},
}

// TestHiddenFilters: a filter the framework runs is hidden unless it is in-tree or NodePool,
// whatever registry built the profile.
func TestHiddenFilters(t *testing.T) {
	p := &Profile{Running: schedulerconfig.Plugins{Filter: schedulerconfig.PluginSet{Enabled: []schedulerconfig.Plugin{
		{Name: names.NodeAffinity}, {Name: nodepool.Name}, {Name: "AvoidNodeLabels"}, {Name: names.PodTopologySpread},
	}}}}
	if diff := cmp.Diff([]string{"filter plugin AvoidNodeLabels"}, hiddenFilters(p)); diff != "" {
		t.Errorf("hiddenFilters (-want +got):\n%s", diff)
	}
}
