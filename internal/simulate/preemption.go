package simulate

import (
	"cmp"
	"context"
	"math"
	"reflect"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/util/workqueue"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	extenderv1 "k8s.io/kube-scheduler/extender/v1"
	fwk "k8s.io/kube-scheduler/framework"
	schedulerconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/defaultpreemption"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/feature"
	"k8s.io/kubernetes/pkg/scheduler/framework/preemption"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
)

// preemptionName is the name the simulation runs upstream's DefaultPreemption under, with the
// profile's args: a plugin of that name cannot be registered twice.
const preemptionName = "SimulatedDefaultPreemption"

// exactPreemption is upstream's DefaultPreemption made to give the same answer every run, for
// the simulation only. Upstream leaves four choices to chance, and this plugin fixes each
// where upstream lets a plugin decide:
//   - the dry run lists the nodes where preemption might help in the order of a Go map (the
//     Filter step's statuses, NodeToStatus.NodesForStatusCode), and stops once it has enough
//     candidates, so with more such nodes than it looks for (at least 100), which it checks
//     depends on the map: here they are listed in the scheduler's order (PostFilter);
//   - the dry run starts at a random node (GetOffsetAndNumCandidates draws rand.Int31n): here
//     at the first node of that order;
//   - the dry run checks the nodes on several goroutines and stops once it has enough
//     candidates, so which ones it found depends on timing: here it checks them one by one, in
//     order, through a Handle whose Parallelizer runs serially;
//   - the best candidate is picked by five criteria, then by the order of a Go map, and a
//     victim without status.startTime counts as started now: here by the same five criteria, a
//     victim without a start time counts as started last, and then the node of the smallest
//     name wins.
//
// Its victims are evicted within the scheduling cycle, as upstream does without the
// SchedulerAsyncPreemption gate, so that they are gone before the preemptor is tried again.
type exactPreemption struct {
	*defaultpreemption.DefaultPreemption
}

var (
	_ fwk.PostFilterPlugin  = &exactPreemption{}
	_ fwk.PreEnqueuePlugin  = &exactPreemption{}
	_ preemption.Interface  = &exactPreemption{}
	_ fwk.EnqueueExtensions = &exactPreemption{}
)

// newExactPreemption builds DefaultPreemption with args on a serial handle, and its evaluator
// with this plugin's choices.
func newExactPreemption(ctx context.Context, args runtime.Object, fh fwk.Handle) (fwk.Plugin, error) {
	fts := feature.NewSchedulerFeaturesFromGates(utilfeature.DefaultFeatureGate)
	fts.EnableAsyncPreemption = false
	h := serialHandle{fh}
	dp, err := defaultpreemption.New(ctx, args, h, fts)
	if err != nil {
		return nil, err
	}
	pl := &exactPreemption{DefaultPreemption: dp}
	dp.Evaluator = preemption.NewEvaluator(defaultpreemption.Name, h, pl, dp.Executor)
	return pl, nil
}

// Name is the name the plugin is registered under.
func (pl *exactPreemption) Name() string { return preemptionName }

// PostFilter is upstream's, with the nodes where preemption might help listed in the
// scheduler's order.
func (pl *exactPreemption) PostFilter(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, m fwk.NodeToStatusReader) (*fwk.PostFilterResult, *fwk.Status) {
	return pl.DefaultPreemption.PostFilter(ctx, state, pod, inNodeOrder{m})
}

// inNodeOrder lists the nodes of a status code in the order of the lister, the scheduler's
// snapshot, rather than of the reader's map.
type inNodeOrder struct {
	fwk.NodeToStatusReader
}

func (m inNodeOrder) NodesForStatusCode(lister fwk.NodeInfoLister, code fwk.Code) ([]fwk.NodeInfo, error) {
	nodes, err := m.NodeToStatusReader.NodesForStatusCode(lister, code)
	if err != nil || len(nodes) < 2 {
		return nodes, err
	}
	all, err := lister.List()
	if err != nil {
		return nil, err
	}
	order := make(map[string]int, len(all))
	for i, n := range all {
		order[n.Node().Name] = i
	}
	slices.SortFunc(nodes, func(a, b fwk.NodeInfo) int {
		return cmp.Compare(order[a.Node().Name], order[b.Node().Name])
	})
	return nodes, nil
}

// GetOffsetAndNumCandidates starts the dry run at the first node, with upstream's number of
// candidates.
func (pl *exactPreemption) GetOffsetAndNumCandidates(nodes int32) (int32, int32) {
	_, n := pl.DefaultPreemption.GetOffsetAndNumCandidates(nodes)
	return 0, n
}

// OrderedScoreFuncs are upstream's criteria for the best candidate (pickOneNodeForPreemption),
// in its order, and the node's name last.
func (pl *exactPreemption) OrderedScoreFuncs(_ context.Context, nodesToVictims map[string]*extenderv1.Victims) []func(node string) int64 {
	return candidateScores(nodesToVictims)
}

// candidateScores: fewest PDB violations, lowest highest victim priority, lowest sum of
// priorities, fewest victims, latest start of the highest-priority victims, smallest name.
func candidateScores(nodesToVictims map[string]*extenderv1.Victims) []func(node string) int64 {
	names := slices.Sorted(func(yield func(string) bool) {
		for n := range nodesToVictims {
			if !yield(n) {
				return
			}
		}
	})
	return []func(string) int64{
		func(n string) int64 { return -nodesToVictims[n].NumPDBViolations },
		func(n string) int64 { return -int64(corev1helpers.PodPriority(nodesToVictims[n].Pods[0])) },
		func(n string) int64 {
			var sum int64
			for _, p := range nodesToVictims[n].Pods {
				sum += int64(corev1helpers.PodPriority(p)) + int64(math.MaxInt32+1)
			}
			return -sum
		},
		func(n string) int64 { return -int64(len(nodesToVictims[n].Pods)) },
		func(n string) int64 { return earliestStart(nodesToVictims[n].Pods) },
		func(n string) int64 { return -int64(slices.Index(names, n)) },
	}
}

// earliestStart is the earliest start, in Unix nanoseconds, of the victims of the highest
// priority (the first victim's); a victim that has not started counts as starting last.
func earliestStart(victims []*corev1.Pod) int64 {
	start := func(p *corev1.Pod) int64 {
		if p.Status.StartTime == nil {
			return math.MaxInt64
		}
		return p.Status.StartTime.UnixNano()
	}
	top := corev1helpers.PodPriority(victims[0])
	earliest := start(victims[0])
	for _, p := range victims {
		if corev1helpers.PodPriority(p) == top {
			earliest = min(earliest, start(p))
		}
	}
	return earliest
}

// serialHandle is a framework Handle whose Parallelizer runs every piece in order, on the
// caller's goroutine, and stops when the context is done, as upstream's does with parallelism 1.
type serialHandle struct {
	fwk.Handle
}

func (h serialHandle) Parallelizer() fwk.Parallelizer { return serial{h.Handle.Parallelizer()} }

type serial struct {
	fwk.Parallelizer
}

func (serial) Until(ctx context.Context, pieces int, do workqueue.DoWorkPieceFunc, _ string) {
	for i := 0; i < pieces && ctx.Err() == nil; i++ {
		do(i)
	}
}

// withExactPreemption renames DefaultPreemption to preemptionName in every extension point and
// plugin config of cfg's profiles, and returns the registry that builds it.
func withExactPreemption(cfg *schedulerconfig.KubeSchedulerConfiguration) frameworkruntime.Registry {
	for i := range cfg.Profiles {
		prof := &cfg.Profiles[i]
		if prof.Plugins != nil {
			sets := reflect.ValueOf(prof.Plugins).Elem()
			for f := range sets.NumField() {
				set, ok := sets.Field(f).Addr().Interface().(*schedulerconfig.PluginSet)
				if !ok {
					continue
				}
				renamePlugin(set.Enabled)
				renamePlugin(set.Disabled)
			}
		}
		for j := range prof.PluginConfig {
			if prof.PluginConfig[j].Name == defaultpreemption.Name {
				prof.PluginConfig[j].Name = preemptionName
			}
		}
	}
	return frameworkruntime.Registry{preemptionName: newExactPreemption}
}

func renamePlugin(plugins []schedulerconfig.Plugin) {
	for i := range plugins {
		if plugins[i].Name == defaultpreemption.Name {
			plugins[i].Name = preemptionName
		}
	}
}
