package advice

import (
	"context"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/scheduler/profile"
	"github.com/schedops/scheduler-profile-operator/scheduler/registry"
)

// unsignedFilter is a filter plugin of the tests' own that neither signs pods nor registers
// events, as a plugin written before KEP-5598 and QueueingHints.
type unsignedFilter struct{}

const unsignedFilterName = "TestUnsignedFilter"

func (unsignedFilter) Name() string { return unsignedFilterName }
func (unsignedFilter) Filter(context.Context, fwk.CycleState, *corev1.Pod, fwk.NodeInfo) *fwk.Status {
	return nil
}

func TestMain(m *testing.M) {
	own := registry.Plugin{Name: unsignedFilterName, Type: unsignedFilter{},
		New: func(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) { return unsignedFilter{}, nil }}
	if err := registry.Use(append(registry.Stock(), own)); err != nil {
		panic(err)
	}
	os.Exit(m.Run())
}

// adviceOf renders the profile of spec (the YAML of a SchedulerProfile's spec), checks that it is
// valid, and runs every check on it with the cluster.
func adviceOf(t *testing.T, spec string, cluster *Cluster) []Advice {
	t.Helper()
	p := &v1alpha1.SchedulerProfile{ObjectMeta: metav1.ObjectMeta{Name: "under-test"}}
	if err := yaml.UnmarshalStrict([]byte(spec), &p.Spec); err != nil {
		t.Fatalf("the spec of the test: %v", err)
	}
	cfg, err := profile.Render(p, profile.Settings{Namespace: "advice-test"})
	if err != nil {
		t.Fatalf("Render: %v", err)
	}
	if errs := profile.Validate(cfg.YAML); len(errs) > 0 {
		t.Fatalf("the profile of the test is invalid: %v", errs.ToAggregate())
	}
	got, err := For(cfg.YAML, p.Spec.Scheduler.FeatureGates, cluster, p)
	if err != nil {
		t.Fatalf("For: %v", err)
	}
	return got
}

func nodes(labelSets ...map[string]string) []corev1.Node {
	out := make([]corev1.Node, 0, len(labelSets))
	for i, l := range labelSets {
		out = append(out, corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-" + string(rune('a'+i)), Labels: l}})
	}
	return out
}

// times repeats a node's labels n times.
func times(n int, labels map[string]string) []map[string]string {
	out := make([]map[string]string, n)
	for i := range out {
		out[i] = labels
	}
	return out
}

func priorityClass(name string, policy *corev1.PreemptionPolicy) schedulingv1.PriorityClass {
	return schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: 1000, PreemptionPolicy: policy}
}

const (
	mostAllocated = `
pluginConfig:
- name: NodeResourcesFit
  args: {scoringStrategy: {type: MostAllocated}}
`
	// binpackSample is the binpack sample: MostAllocated, without the scorers that work against it.
	binpackSample = mostAllocated + `
plugins:
  score:
    disabled: [{name: NodeResourcesBalancedAllocation}, {name: PodTopologySpread}]
`
	zoneSpread = `
pluginConfig:
- name: PodTopologySpread
  args:
    defaultingType: List
    defaultConstraints:
    - {maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: DoNotSchedule}
`
	poolArgs = `
pluginConfig:
- name: NodePool
  args: {nodeSelector: {matchLabels: {pool: batch}}}
`
	pool = poolArgs + `
plugins:
  multiPoint: {enabled: [{name: NodePool}]}
`
	filterExtender = `
extenders:
- urlPrefix: http://extender.example:8888
  filterVerb: filter
`
)

var (
	zone    = map[string]string{"topology.kubernetes.io/zone": "a"}
	batch   = map[string]string{"pool": "batch"}
	noLabel = map[string]string{}
)

// TestChecks runs each check on a profile that should fire it and on one near it that should
// not; TestEveryCheckIsTested checks that each check has both.
var checkCases = []struct {
	name    string
	code    string
	spec    string
	cluster *Cluster
	// want is a part of the message when the check fires, "" when it must not.
	want string
}{
	// SPA101: bin-packing outvoted.
	{name: "MostAllocated with weight 1 against the default scorers", code: "SPA101", spec: mostAllocated, want: "NodeResourcesFit weight 1: 20% of the weights"},
	{name: "the binpack sample: the scorers against it disabled", code: "SPA101", spec: binpackSample},
	{name: "MostAllocated with weight 3 against the default scorers", code: "SPA101", spec: mostAllocated + `
plugins:
  score:
    enabled: [{name: NodeResourcesFit, weight: 3}]
`},
	{name: "increasing RequestedToCapacityRatio with weight 1", code: "SPA101", want: "RequestedToCapacityRatio", spec: `
pluginConfig:
- name: NodeResourcesFit
  args:
    scoringStrategy:
      type: RequestedToCapacityRatio
      resources: [{name: cpu, weight: 1}]
      requestedToCapacityRatio: {shape: [{utilization: 0, score: 0}, {utilization: 100, score: 10}]}
`},
	{name: "decreasing RequestedToCapacityRatio spreads, no bin-packing", code: "SPA101", spec: `
pluginConfig:
- name: NodeResourcesFit
  args:
    scoringStrategy:
      type: RequestedToCapacityRatio
      resources: [{name: cpu, weight: 1}]
      requestedToCapacityRatio: {shape: [{utilization: 0, score: 10}, {utilization: 100, score: 0}]}
`},

	// SPA102: label preference outvoted.
	{name: "NodeLabelPreference with weight 1", code: "SPA102", want: "the label preference scores with NodeLabelPreference weight 1", spec: `
plugins:
  multiPoint: {enabled: [{name: NodeLabelPreference, weight: 1}]}
pluginConfig:
- name: NodeLabelPreference
  args: {preferences: [{key: spot, weight: 10}]}
`},
	{name: "NodeLabelPreference with weight 3 (the nodepool sample)", code: "SPA102", spec: `
plugins:
  multiPoint: {enabled: [{name: NodeLabelPreference, weight: 3}]}
pluginConfig:
- name: NodeLabelPreference
  args: {preferences: [{key: spot, weight: 10}]}
`},
	{name: "addedAffinity preferred terms with NodeAffinity's default weight", code: "SPA102", want: "addedAffinity scores with NodeAffinity weight 2", spec: `
pluginConfig:
- name: NodeAffinity
  args:
    addedAffinity:
      preferredDuringSchedulingIgnoredDuringExecution:
      - weight: 10
        preference: {matchExpressions: [{key: spot, operator: Exists}]}
`},
	{name: "addedAffinity preferred terms with weight 5", code: "SPA102", spec: `
plugins:
  score: {enabled: [{name: NodeAffinity, weight: 5}]}
pluginConfig:
- name: NodeAffinity
  args:
    addedAffinity:
      preferredDuringSchedulingIgnoredDuringExecution:
      - weight: 10
        preference: {matchExpressions: [{key: spot, operator: Exists}]}
`},

	// SPA103: spreading outvoted.
	{name: "listed soft spreading with PodTopologySpread's default weight", code: "SPA103", want: "spreading", spec: `
pluginConfig:
- name: PodTopologySpread
  args:
    defaultingType: List
    defaultConstraints:
    - {maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: ScheduleAnyway}
plugins:
  score:
    enabled: [{name: NodeLabelPreference, weight: 5}]
`},
	{name: "the spread sample: weight 5", code: "SPA103", spec: `
pluginConfig:
- name: PodTopologySpread
  args:
    defaultingType: List
    defaultConstraints:
    - {maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: ScheduleAnyway}
plugins:
  score:
    enabled: [{name: PodTopologySpread, weight: 5}]
`},

	// SPA104: bin-packing against balanced allocation.
	{name: "MostAllocated with BalancedAllocation", code: "SPA104", want: "NodeResourcesBalancedAllocation scoring (weight 1)", spec: mostAllocated + `
plugins:
  score:
    disabled: [{name: PodTopologySpread}]
`},
	{name: "LeastAllocated with BalancedAllocation: no bin-packing", code: "SPA104", spec: `
pluginConfig:
- name: NodeResourcesFit
  args: {scoringStrategy: {type: LeastAllocated}}
`},

	// SPA105: bin-packing against spreading.
	{name: "MostAllocated with the system default constraints", code: "SPA105", want: "system default constraints (weight 2)", spec: mostAllocated + `
plugins:
  score:
    disabled: [{name: NodeResourcesBalancedAllocation}]
`},
	{name: "MostAllocated with listed soft constraints", code: "SPA105", want: "defaultConstraints (weight 2)", spec: `
pluginConfig:
- name: NodeResourcesFit
  args: {scoringStrategy: {type: MostAllocated}}
- name: PodTopologySpread
  args:
    defaultingType: List
    defaultConstraints:
    - {maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: ScheduleAnyway}
`},
	{name: "MostAllocated with listed hard constraints only", code: "SPA105", spec: mostAllocated + zoneSpread[len("\npluginConfig:"):]},
	{name: "MostAllocated with PodTopologySpread not scoring", code: "SPA105", spec: binpackSample},

	// SPA201: args for a plugin that does not run.
	{name: "args for NodePool, which is not enabled", code: "SPA201", want: "spec.pluginConfig[0] has args for NodePool", spec: `
pluginConfig:
- name: NodePool
  args: {nodeSelector: {matchLabels: {pool: batch}}}
`},
	{name: "args for NodePool, enabled", code: "SPA201", spec: pool},

	// SPA202: args that only Score reads.
	{name: "MostAllocated with NodeResourcesFit not scoring", code: "SPA202", want: "spec.pluginConfig[0].args.scoringStrategy", spec: mostAllocated + `
plugins:
  score: {disabled: [{name: NodeResourcesFit}]}
`},
	{name: "ignoredResources with NodeResourcesFit not scoring", code: "SPA202", spec: `
plugins:
  score: {disabled: [{name: NodeResourcesFit}]}
pluginConfig:
- name: NodeResourcesFit
  args: {ignoredResources: [example.com/foo]}
`},

	// SPA203: a weight that is not used.
	{name: "a weight in multiPoint overridden at score", code: "SPA203", want: "spec.plugins.multiPoint.enabled[0].weight 4: NodeLabelPreference scores with weight 2", spec: `
plugins:
  multiPoint: {enabled: [{name: NodeLabelPreference, weight: 4}]}
  score: {enabled: [{name: NodeLabelPreference, weight: 2}]}
pluginConfig:
- name: NodeLabelPreference
  args: {preferences: [{key: spot, weight: 10}]}
`},
	{name: "a weight in multiPoint for a plugin that does not score", code: "SPA203", want: "NodePool does not score", spec: `
plugins:
  multiPoint: {enabled: [{name: NodePool, weight: 4}]}
pluginConfig:
- name: NodePool
  args: {nodeSelector: {matchLabels: {pool: batch}}}
`},
	{name: "a weight in multiPoint that scores", code: "SPA203", spec: `
plugins:
  multiPoint: {enabled: [{name: NodeLabelPreference, weight: 4}]}
pluginConfig:
- name: NodeLabelPreference
  args: {preferences: [{key: spot, weight: 10}]}
`},

	// SPA204: disabled where it does not run.
	{name: "BalancedAllocation disabled at filter", code: "SPA204", want: "NodeResourcesBalancedAllocation has no filter extension point, so this disables nothing; it runs at preScore, score", spec: `
plugins:
  filter: {disabled: [{name: NodeResourcesBalancedAllocation}]}
`},
	{name: "BalancedAllocation disabled at score", code: "SPA204", spec: `
plugins:
  score: {disabled: [{name: NodeResourcesBalancedAllocation}]}
`},

	// SPA205: enabled but cancelled everywhere.
	{name: "NodePool enabled in multiPoint, disabled at each of its points", code: "SPA205", want: "spec.plugins.multiPoint.enabled[0] NodePool", spec: poolArgs + `
plugins:
  multiPoint: {enabled: [{name: NodePool}]}
  preFilter: {disabled: [{name: NodePool}]}
  filter: {disabled: [{name: NodePool}]}
`},
	{name: "NodePool enabled in multiPoint, disabled at preFilter only", code: "SPA205", spec: poolArgs + `
plugins:
  multiPoint: {enabled: [{name: NodePool}]}
  preFilter: {disabled: [{name: NodePool}]}
`},

	// SPA206: percentageOfNodesToScore very low.
	{name: "percentageOfNodesToScore 5", code: "SPA206", want: "spec.percentageOfNodesToScore 5", spec: `percentageOfNodesToScore: 5`},
	{name: "percentageOfNodesToScore 10", code: "SPA206", spec: `percentageOfNodesToScore: 10`},

	// SPA301: a hard spread key no node carries.
	{name: "zone spread on nodes without zones", code: "SPA301", spec: zoneSpread, cluster: &Cluster{Nodes: nodes(noLabel, noLabel, noLabel)},
		want: "defaultConstraints[0] (DoNotSchedule) spreads on topology.kubernetes.io/zone, which 0 of 3 nodes carry"},
	{name: "zone spread on zoned nodes", code: "SPA301", spec: zoneSpread, cluster: &Cluster{Nodes: nodes(zone, zone, zone)}},
	{name: "zone spread without a cluster", code: "SPA301", spec: zoneSpread},

	// SPA302: a hard spread key few nodes carry.
	{name: "zone spread where 1 of 5 nodes has a zone", code: "SPA302", spec: zoneSpread, cluster: &Cluster{Nodes: nodes(zone, noLabel, noLabel, noLabel, noLabel)}, want: "1 of 5 nodes"},
	{name: "zone spread where 2 of 30 nodes have a zone", code: "SPA302", spec: zoneSpread, cluster: &Cluster{Nodes: nodes(append(times(2, zone), times(28, noLabel)...)...)}, want: "2 of 30 nodes"},
	{name: "zone spread where 2 of 5 nodes have a zone", code: "SPA302", spec: zoneSpread, cluster: &Cluster{Nodes: nodes(zone, zone, noLabel, noLabel, noLabel)}},

	// SPA303: a node selection that matches no node.
	{name: "a pool without nodes", code: "SPA303", spec: pool, cluster: &Cluster{Nodes: nodes(noLabel, noLabel)}, want: "nodeSelector matches 0 of 2 nodes"},
	{name: "a pool with nodes", code: "SPA303", spec: pool, cluster: &Cluster{Nodes: nodes(batch, batch, batch, noLabel)}},
	{name: "addedAffinity that no node matches", code: "SPA303", cluster: &Cluster{Nodes: nodes(noLabel)}, want: "addedAffinity.requiredDuringSchedulingIgnoredDuringExecution matches 0 of 1 nodes", spec: `
pluginConfig:
- name: NodeAffinity
  args:
    addedAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms: [{matchExpressions: [{key: pool, operator: In, values: [batch]}]}]
`},

	// SPA304: a node selection that matches few nodes.
	{name: "a pool of one node of four", code: "SPA304", spec: pool, cluster: &Cluster{Nodes: nodes(batch, noLabel, noLabel, noLabel)}, want: "matches 1 of 4 nodes"},
	{name: "a pool of three nodes of forty", code: "SPA304", spec: pool, cluster: &Cluster{Nodes: nodes(append(times(3, batch), times(37, noLabel)...)...)}, want: "matches 3 of 40 nodes"},
	{name: "a pool of two nodes of four", code: "SPA304", spec: pool, cluster: &Cluster{Nodes: nodes(batch, batch, noLabel, noLabel)}},
	{name: "a pool of all two nodes", code: "SPA304", spec: pool, cluster: &Cluster{Nodes: nodes(batch, batch)}},

	// SPA401: a plugin that does not sign pods.
	{name: "a filter that does not sign", code: "SPA401", want: "do not sign pods switch off opportunistic batching for the profile: TestUnsignedFilter", spec: `
plugins:
  filter: {enabled: [{name: TestUnsignedFilter}]}
`},
	{name: "a filter that does not sign, with batching off", code: "SPA401", spec: `
plugins:
  filter: {enabled: [{name: TestUnsignedFilter}]}
scheduler:
  featureGates: {OpportunisticBatching: false}
`},
	{name: "NodePool, which signs", code: "SPA401", spec: pool},

	// SPA402: extenders.
	{name: "an extender", code: "SPA402", spec: filterExtender, want: "spec.extenders, 1"},
	{name: "an extender, with batching off", code: "SPA402", spec: filterExtender + `
scheduler:
  featureGates: {OpportunisticBatching: false}
`},

	// SPA403: no QueueingHints.
	{name: "a filter without EventsToRegister", code: "SPA403", want: "every pod they rejected: TestUnsignedFilter", spec: `
plugins:
  filter: {enabled: [{name: TestUnsignedFilter}]}
`},
	{name: "NodePool, which has QueueingHints", code: "SPA403", spec: pool},
	{name: "an extender, which SPA402 is about", code: "SPA403", spec: filterExtender},

	// SPA501: preemption off while PriorityClasses may preempt.
	{name: "preemption off with a preempting PriorityClass", code: "SPA501", want: "while 1 PriorityClasses may preempt", spec: `
plugins:
  postFilter: {disabled: [{name: DefaultPreemption}]}
`, cluster: &Cluster{PriorityClasses: []schedulingv1.PriorityClass{priorityClass("high", nil), priorityClass("system-node-critical", nil)}}},
	{name: "preemption off with PriorityClasses that never preempt", code: "SPA501", spec: `
plugins:
  postFilter: {disabled: [{name: DefaultPreemption}]}
`, cluster: &Cluster{PriorityClasses: []schedulingv1.PriorityClass{priorityClass("low", ptr.To(corev1.PreemptNever)), priorityClass("system-cluster-critical", nil)}}},
	{name: "preemption on with a preempting PriorityClass", code: "SPA501", spec: `{}`,
		cluster: &Cluster{PriorityClasses: []schedulingv1.PriorityClass{priorityClass("high", nil)}}},

	// SPA502: a filter extender that is not ignorable.
	{name: "a filter extender that is not ignorable", code: "SPA502", spec: filterExtender, want: "spec.extenders[0] (filterVerb filter) is not ignorable"},
	{name: "an ignorable filter extender", code: "SPA502", spec: filterExtender + "  ignorable: true\n"},
	{name: "a prioritize-only extender", code: "SPA502", spec: `
extenders:
- urlPrefix: http://extender.example:8888
  prioritizeVerb: prioritize
  weight: 1
`},
}

func TestChecks(t *testing.T) {
	for _, tc := range checkCases {
		t.Run(tc.code+"/"+tc.name, func(t *testing.T) {
			var got []string
			for _, a := range adviceOf(t, tc.spec, tc.cluster) {
				if a.Code == tc.code {
					got = append(got, a.Message)
				}
			}
			switch {
			case tc.want == "" && len(got) > 0:
				t.Errorf("%s fired, want it quiet: %q", tc.code, got)
			case tc.want != "" && len(got) == 0:
				t.Errorf("%s did not fire, want a message with %q", tc.code, tc.want)
			case tc.want != "" && !strings.Contains(strings.Join(got, "\n"), tc.want):
				t.Errorf("%s said %q, want a message with %q", tc.code, got, tc.want)
			}
		})
	}
}

// TestEveryCheckIsTested: each check has a case that fires it and one near it that does not,
// and every case names a check that exists.
func TestEveryCheckIsTested(t *testing.T) {
	fires, quiet := sets.New[string](), sets.New[string]()
	for _, tc := range checkCases {
		if tc.want != "" {
			fires.Insert(tc.code)
		} else {
			quiet.Insert(tc.code)
		}
	}
	codes := sets.New[string]()
	for _, c := range Checks() {
		codes.Insert(c.Code)
		if !fires.Has(c.Code) || !quiet.Has(c.Code) {
			t.Errorf("%s has no case that fires (%t) or none that is quiet (%t)", c.Code, fires.Has(c.Code), quiet.Has(c.Code))
		}
	}
	if extra := fires.Union(quiet).Difference(codes); extra.Len() > 0 {
		t.Errorf("cases name checks that do not exist: %v", sets.List(extra))
	}
}

// TestDefaultProfileIsQuiet: a profile that changes nothing raises no advice, with a cluster
// of zoned nodes and the system PriorityClasses.
func TestDefaultProfileIsQuiet(t *testing.T) {
	cluster := &Cluster{
		Nodes:           nodes(times(3, zone)...),
		PriorityClasses: []schedulingv1.PriorityClass{priorityClass("system-node-critical", nil), priorityClass("high", nil)},
	}
	if got := adviceOf(t, `{}`, cluster); len(got) > 0 {
		t.Errorf("the default profile raises advice: %v", got)
	}
}

// TestIgnored: the annotation silences the codes it lists, and only those.
func TestIgnored(t *testing.T) {
	in := &Input{Profile: loadSpec(t, mostAllocated)}
	all := Codes(Run(in, nil))
	if want := []string{"SPA101", "SPA104", "SPA105"}; !slices.Equal(all, want) {
		t.Fatalf("codes without the annotation %v, want %v", all, want)
	}
	ignore := Ignored(map[string]string{v1alpha1.AnnotationAdviceIgnore: " SPA101, SPA105,,unknown"})
	if got, want := Codes(Run(in, ignore)), []string{"SPA104"}; !slices.Equal(got, want) {
		t.Errorf("codes with %s %v, want %v", v1alpha1.AnnotationAdviceIgnore, got, want)
	}
}

// loadSpec renders and loads the profile of spec.
func loadSpec(t *testing.T, spec string) *Profile {
	t.Helper()
	p := &v1alpha1.SchedulerProfile{ObjectMeta: metav1.ObjectMeta{Name: "under-test"}}
	if err := yaml.UnmarshalStrict([]byte(spec), &p.Spec); err != nil {
		t.Fatalf("the spec of the test: %v", err)
	}
	cfg, err := profile.Render(p, profile.Settings{Namespace: "advice-test"})
	if err != nil {
		t.Fatalf("Render: %v", err)
	}
	loaded, err := Load(cfg.YAML, p.Spec.Scheduler.FeatureGates)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return loaded
}

// codeFamilies is the first digit of the codes of each family: a code never changes, and a new
// check takes the next free code of its family.
var codeFamilies = map[Family]byte{FamilyIntent: '1', FamilyDead: '2', FamilyCluster: '3', FamilyPerformance: '4', FamilySafety: '5', FamilyAutoscalers: '6'}

func TestCodes(t *testing.T) {
	seen := sets.New[string]()
	for _, c := range Checks() {
		if !codeRE.MatchString(c.Code) || c.Code[3] != codeFamilies[c.Family] {
			t.Errorf("%s (%s): want SPA and three digits, the first %c for its family", c.Code, c.Family, codeFamilies[c.Family])
		}
		if seen.Has(c.Code) {
			t.Errorf("%s is the code of two checks", c.Code)
		}
		seen.Insert(c.Code)
		if c.Title == "" || c.Summary == "" || c.Fix == "" || c.run == nil {
			t.Errorf("%s needs a title, a summary, a fix and a run function", c.Code)
		}
	}
}

var codeRE = regexp.MustCompile(`^SPA[1-9][0-9]{2}$`)
