package profile

import (
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/schedops/scheduler-profile-operator/api/v1alpha1"
)

// TestValidateInvalid renders profiles that the scheduler would refuse (or that are surely
// mistakes) and checks the exact errors Validate reports, with their SchedulerProfile paths.
func TestValidateInvalid(t *testing.T) {
	tests := []struct {
		name string
		// spec is the profile's spec in YAML.
		spec string
		// want are the errors, exactly, in order.
		want []string
	}{
		// In-tree plugin args.
		{name: "NodeResourcesFit unknown scoring strategy",
			spec: `{pluginConfig: [{name: NodeResourcesFit, args: {scoringStrategy: {type: Most}}}]}`,
			want: []string{`spec.pluginConfig[0].args.scoringStrategy.type: Unsupported value: "Most": supported values: "LeastAllocated", "MostAllocated", "RequestedToCapacityRatio"`}},
		{name: "NodeResourcesFit resource weight out of range",
			spec: `{pluginConfig: [{name: NodeResourcesFit, args: {scoringStrategy: {type: MostAllocated, resources: [{name: cpu, weight: 101}]}}}]}`,
			want: []string{`spec.pluginConfig[0].args.scoringStrategy.resources[0].weight: Invalid value: 101: resource weight of cpu not in valid range (0, 100]`}},
		{name: "NodeResourcesFit bad ignored resource group",
			spec: `{pluginConfig: [{name: NodeResourcesFit, args: {ignoredResourceGroups: ["example.com/gpu"]}}]}`,
			want: []string{`spec.pluginConfig[0].args.ignoredResourceGroups[0]: Invalid value: "example.com/gpu": resource group name can't contain '/'`}},
		{name: "NodeResourcesBalancedAllocation weight other than 1",
			spec: `{pluginConfig: [{name: NodeResourcesBalancedAllocation, args: {resources: [{name: cpu, weight: 2}]}}]}`,
			want: []string{`spec.pluginConfig[0].args.resources[0].weight: Invalid value: 2: must be 1`}},
		{name: "InterPodAffinity hard weight out of range",
			spec: `{pluginConfig: [{name: InterPodAffinity, args: {hardPodAffinityWeight: 101}}]}`,
			want: []string{`spec.pluginConfig[0].args.hardPodAffinityWeight: Invalid value: 101: not in valid range [0, 100]`}},
		{name: "PodTopologySpread zero maxSkew",
			spec: `{pluginConfig: [{name: PodTopologySpread, args: {defaultingType: List, defaultConstraints: [{maxSkew: 0, topologyKey: zone, whenUnsatisfiable: ScheduleAnyway}]}}]}`,
			want: []string{`spec.pluginConfig[0].args.defaultConstraints[0].maxSkew: Invalid value: 0: not in valid range (0, inf)`}},
		{name: "PodTopologySpread unknown defaulting type",
			spec: `{pluginConfig: [{name: PodTopologySpread, args: {defaultingType: Sometimes}}]}`,
			want: []string{`spec.pluginConfig[0].args.defaultingType: Unsupported value: "Sometimes": supported values: "System", "List"`}},
		{name: "DefaultPreemption percentage out of range",
			spec: `{pluginConfig: [{name: DefaultPreemption, args: {minCandidateNodesPercentage: 101}}]}`,
			want: []string{`spec.pluginConfig[0].args.minCandidateNodesPercentage: Invalid value: 101: not in valid range [0, 100]`}},
		{name: "DefaultPreemption negative absolute",
			spec: `{pluginConfig: [{name: DefaultPreemption, args: {minCandidateNodesAbsolute: -1}}]}`,
			want: []string{`spec.pluginConfig[0].args.minCandidateNodesAbsolute: Invalid value: -1: not in valid range [0, inf)`}},
		{name: "NodeAffinity bad added affinity",
			spec: `{pluginConfig: [{name: NodeAffinity, args: {addedAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: zone, operator: Near}]}]}}}}]}`,
			want: []string{`spec.pluginConfig[0].args.addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator: Unsupported value: "Near": supported values: "In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt"`}},
		{name: "VolumeBinding negative timeout",
			spec: `{pluginConfig: [{name: VolumeBinding, args: {bindTimeoutSeconds: -1}}]}`,
			want: []string{`spec.pluginConfig[0].args.bindTimeoutSeconds: Invalid value: -1: invalid BindTimeoutSeconds, should not be a negative value`}},

		// Our plugins' args.
		{name: "NodePool without node selector",
			spec: `{plugins: {multiPoint: {enabled: [{name: NodePool}]}}, pluginConfig: [{name: NodePool, args: {}}]}`,
			want: []string{`spec.pluginConfig[0].args.nodeSelector: Required value: the scheduler's node pool must be selected`}},
		{name: "NodePool enabled without pluginConfig",
			spec: `{plugins: {multiPoint: {enabled: [{name: NodePool}]}}}`,
			want: []string{`spec.pluginConfig[NodePool].args.nodeSelector: Required value: the scheduler's node pool must be selected`}},
		{name: "NodePool bad selector operator",
			spec: `{plugins: {multiPoint: {enabled: [{name: NodePool}]}}, pluginConfig: [{name: NodePool, args: {nodeSelector: {matchExpressions: [{key: pool, operator: Near}]}}}]}`,
			want: []string{`spec.pluginConfig[0].args.nodeSelector.matchExpressions[0].operator: Invalid value: "Near": not a valid selector operator`}},
		{name: "NodeLabelPreference weight and key",
			spec: `{pluginConfig: [{name: NodeLabelPreference, args: {preferences: [{key: "bad key!", weight: 101}]}}]}`,
			want: []string{
				`spec.pluginConfig[0].args.preferences[0].key: Invalid value: "bad key!": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
				`spec.pluginConfig[0].args.preferences[0].weight: Invalid value: 101: must be in the range 1-100`,
			}},

		// Unknown fields in args (strict decoding).
		{name: "unknown field in our args",
			spec: `{pluginConfig: [{name: NodePool, args: {nodeSelector: {matchLabels: {pool: a}}, bogus: 1}}]}`,
			want: []string{`spec.pluginConfig[0].args.bogus: Forbidden: unknown field`}},
		{name: "unknown nested field in in-tree args",
			spec: `{pluginConfig: [{name: NodeAffinity}, {name: NodeResourcesFit, args: {scoringStrategy: {type: MostAllocated, bogus: true}}}]}`,
			want: []string{`spec.pluginConfig[1].args.scoringStrategy.bogus: Forbidden: unknown field`}},
		{name: "two unknown fields",
			spec: `{pluginConfig: [{name: InterPodAffinity, args: {a: 1, b: 2}}]}`,
			want: []string{
				`spec.pluginConfig[0].args.a: Forbidden: unknown field`,
				`spec.pluginConfig[0].args.b: Forbidden: unknown field`,
			}},
		{name: "args of another kind",
			spec: `{pluginConfig: [{name: NodeAffinity, args: {kind: NodeResourcesFitArgs, apiVersion: kubescheduler.config.k8s.io/v1}}]}`,
			want: []string{`spec.pluginConfig[0].args: Invalid value: args for plugin NodeAffinity were not of type NodeAffinityArgs.kubescheduler.config.k8s.io, got NodeResourcesFitArgs.kubescheduler.config.k8s.io`}},

		// Unknown and misplaced plugins.
		{name: "unknown score plugin",
			spec: `{plugins: {score: {enabled: [{name: NodeResourcesMagic}]}}}`,
			want: []string{`spec.plugins.score.enabled[0].name: Not found: "NodeResourcesMagic"`}},
		{name: "unknown multiPoint plugin",
			spec: `{plugins: {multiPoint: {enabled: [{name: NodePool2}]}}}`,
			want: []string{`spec.plugins.multiPoint.enabled[0].name: Not found: "NodePool2"`}},
		{name: "args for an unknown plugin",
			spec: `{pluginConfig: [{name: NodeResourcesFit}, {name: NodeResourceFit, args: {}}]}`,
			want: []string{`spec.pluginConfig[1].name: Not found: "NodeResourceFit"`}},
		{name: "score plugin at filter",
			spec: `{plugins: {filter: {enabled: [{name: ImageLocality}]}}}`,
			want: []string{`spec.plugins.filter.enabled[0].name: Invalid value: "ImageLocality": the plugin does not implement the Filter extension point`}},
		{name: "filter plugin at queueSort",
			spec: `{plugins: {queueSort: {enabled: [{name: NodeAffinity}], disabled: [{name: "*"}]}}}`,
			want: []string{`spec.plugins.queueSort.enabled[0].name: Invalid value: "NodeAffinity": the plugin does not implement the QueueSort extension point`}},
		{name: "removed plugin",
			spec: `{plugins: {score: {enabled: [{name: NodeLabel}]}}}`,
			want: []string{`spec.plugins.score.enabled[0].name: Not found: "NodeLabel"`}},
		{name: "removed plugin in filter",
			spec: `{plugins: {filter: {enabled: [{name: ServiceAffinity}]}}}`,
			want: []string{`spec.plugins.filter.enabled[0].name: Not found: "ServiceAffinity"`}},
		{name: "no queue sort plugin",
			spec: `{plugins: {queueSort: {disabled: [{name: "*"}]}}}`,
			want: []string{`spec.plugins.queueSort: Invalid value: only one queue sort plugin required for profile with scheduler name "invalid", but got 0`}},
		{name: "two queue sort plugins",
			spec: `{plugins: {queueSort: {enabled: [{name: PrioritySort}, {name: PrioritySort}]}}}`,
			want: []string{`spec.plugins.queueSort.enabled: Invalid value: 2: only one queue sort plugin can be enabled`}},
		{name: "no bind plugin",
			spec: `{plugins: {multiPoint: {disabled: [{name: DefaultBinder}]}}}`,
			want: []string{`spec.plugins.bind: Invalid value: at least one bind plugin is needed for profile with scheduler name "invalid"`}},
		{name: "duplicate pluginConfig",
			spec: `{pluginConfig: [{name: NodeAffinity}, {name: NodeAffinity}]}`,
			want: []string{`spec.pluginConfig[1]: Duplicate value: "NodeAffinity"`}},

		// Extenders.
		{name: "extender without urlPrefix",
			spec: `{extenders: [{filterVerb: filter}]}`,
			want: []string{`spec.extenders[0].urlPrefix: Required value: the URL of the extender`}},
		{name: "two binding extenders",
			spec: `{extenders: [{urlPrefix: "http://a", bindVerb: bind}, {urlPrefix: "http://b", bindVerb: bind}]}`,
			want: []string{`spec.extenders: Invalid value: "found 2 extenders implementing bind": only one extender can implement bind`}},
		{name: "prioritizing extender with zero weight",
			spec: `{extenders: [{urlPrefix: "http://a", prioritizeVerb: prioritize}]}`,
			want: []string{`spec.extenders[0].weight: Invalid value: 0: must have a positive weight applied to it`}},
		{name: "prioritizing extender with negative weight",
			spec: `{extenders: [{urlPrefix: "http://a", filterVerb: filter}, {urlPrefix: "http://b", prioritizeVerb: prioritize, weight: -2}]}`,
			want: []string{`spec.extenders[1].weight: Invalid value: -2: must have a positive weight applied to it`}},
		{name: "extender managing a bad resource name",
			spec: `{extenders: [{urlPrefix: "http://a", filterVerb: filter, managedResources: [{name: "not a resource"}]}]}`,
			want: []string{`spec.extenders[0].managedResources[0].name: Invalid value: "not a resource": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`}},

		// Profile fields.
		{name: "percentage above 100",
			spec: `{percentageOfNodesToScore: 101}`,
			want: []string{`spec.percentageOfNodesToScore: Invalid value: 101: not in valid range [0-100]`}},
		{name: "negative percentage",
			spec: `{percentageOfNodesToScore: -1}`,
			want: []string{`spec.percentageOfNodesToScore: Invalid value: -1: not in valid range [0-100]`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := &v1alpha1.SchedulerProfile{}
			p.Name = "invalid"
			if err := yaml.UnmarshalStrict([]byte(tc.spec), &p.Spec); err != nil {
				t.Fatalf("parsing the spec: %v", err)
			}
			cfg := mustRender(t, p)
			errs := Validate(cfg.YAML)
			var got []string
			for _, e := range errs {
				got = append(got, e.Error())
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Errorf("errors:\n  got:  %q\n  want: %q", got, tc.want)
			}
		})
	}
}
