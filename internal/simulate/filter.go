package simulate

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/workqueue"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/metrics"
)

// The Filter step of a scheduling cycle visits the nodes one at a time, in the scheduler's order,
// and stops at the first that make enough (inOrder), so that ties are broken the same way every
// run. A node's verdict does not depend on the verdicts on other nodes, or on when it is
// evaluated within the step: upstream evaluates the nodes on 16 goroutines in any order, and
// evaluates more than it keeps. So the simulation evaluates the nodes the step will visit ahead
// of it, a block at a time on every core (filterAhead), and the step, still one node at a time in
// its order, takes each node's verdict from the block: it visits the same nodes, stops at the
// same one and records the same statuses as when it evaluated them itself.

// inOrder is a profile's framework whose Filter step visits the nodes one at a time, in order,
// and stops at the first that make enough, as it does with parallelism 1: the scheduling cycle
// takes the framework's Parallelizer for Filter from the profile, and this one runs every other
// step as the framework's does. The framework's own steps (Score, its normalization and weights)
// and its plugins' (PodTopologySpread's and InterPodAffinity's counts) use the framework's.
type inOrder struct {
	framework.Framework
	// ahead evaluates the nodes of the Filter step ahead of it; nil evaluates each when the step
	// visits it.
	ahead *filterAhead
}

func (f inOrder) Parallelizer() fwk.Parallelizer {
	return filterInOrder{Parallelizer: f.Framework.Parallelizer(), ahead: f.ahead}
}

// RunFilterPluginsWithNominatedPods is a node's verdict: evaluated ahead when the Filter step
// visits the node that filterAhead expected, the framework's own otherwise.
func (f inOrder) RunFilterPluginsWithNominatedPods(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, info fwk.NodeInfo) *fwk.Status {
	if status, ok := f.ahead.verdict(ctx, state, pod, info); ok {
		return status
	}
	return f.Framework.RunFilterPluginsWithNominatedPods(ctx, state, pod, info)
}

type filterInOrder struct {
	fwk.Parallelizer
	ahead *filterAhead
}

func (p filterInOrder) Until(ctx context.Context, pieces int, do workqueue.DoWorkPieceFunc, operation string) {
	if operation != metrics.Filter {
		p.Parallelizer.Until(ctx, pieces, do, operation)
		return
	}
	p.ahead.begin(pieces)
	defer p.ahead.end()
	for i := 0; i < pieces && ctx.Err() == nil; i++ {
		p.ahead.visit(i)
		do(i)
	}
}

// placementLister is the scheduler's snapshot, whose nodes in placement are the nodes the Filter
// step visits, in its order, unless a PreFilter plugin narrowed them.
type placementLister interface {
	ListNodesInPlacement() ([]fwk.NodeInfo, error)
}

// filterAhead evaluates the nodes of one profile's Filter steps ahead of them. Within a step it
// learns the step's arguments from its first node, expects the step to visit the snapshot's
// nodes in placement from that node on, and evaluates as many of them as the step needs to find
// enough feasible nodes, and one more (the step stops at the one past enough), on every core. A
// step that visits another node than expected, or with other arguments, gets the framework's
// own verdict from then on: evaluating ahead changes how fast the step is, never what it finds.
// It is used by one scheduling cycle at a time, on the cycle's goroutine.
type filterAhead struct {
	f framework.Framework
	// percentage is the scheduler's percentageOfNodesToScore, for the profiles that set none.
	percentage int32

	// The current step: whether one runs, its number of nodes, and the node it visits now.
	active  bool
	pieces  int
	visited int
	// Its arguments, from the first node's call, once learned.
	learned bool
	ctx     context.Context
	state   fwk.CycleState
	pod     *corev1.Pod
	// nodes are the nodes expected, the step's node i at nodes[(first+i)%len(nodes)]; nil when
	// the step is not (or no longer) evaluated ahead.
	nodes []fwk.NodeInfo
	first int
	// statuses are the verdicts on the step's nodes from to from+len(statuses).
	from     int
	statuses []*fwk.Status
	// feasible counts the feasible nodes the step visited, and toFind is how many it looks for.
	feasible, toFind int
	// given counts the verdicts the steps took from the blocks evaluated ahead.
	given int
}

// begin starts a step of pieces nodes.
func (a *filterAhead) begin(pieces int) {
	if a == nil {
		return
	}
	a.active, a.pieces = pieces > 1, pieces
}

// visit tells that the step visits its node i next.
func (a *filterAhead) visit(i int) {
	if a != nil {
		a.visited = i
	}
}

// end ends the step and lets go of what it held.
func (a *filterAhead) end() {
	if a == nil {
		return
	}
	clear(a.statuses)
	a.active, a.learned, a.ctx, a.state, a.pod, a.nodes, a.statuses = false, false, nil, nil, nil, nil, a.statuses[:0]
	a.from, a.feasible = 0, 0
}

// verdict is the verdict on the node the step visits, evaluated ahead, and whether there is one.
func (a *filterAhead) verdict(ctx context.Context, state fwk.CycleState, pod *corev1.Pod, info fwk.NodeInfo) (*fwk.Status, bool) {
	if a == nil || !a.active {
		return nil, false
	}
	if !a.learned {
		a.learned, a.ctx, a.state, a.pod = true, ctx, state, pod
		a.expect(info)
	}
	if a.nodes == nil {
		return nil, false
	}
	if ctx != a.ctx || state != a.state || pod != a.pod || a.node(a.visited) != info {
		a.nodes = nil
		return nil, false
	}
	if a.visited >= a.from+len(a.statuses) {
		a.evaluate(a.visited)
	}
	status := a.statuses[a.visited-a.from]
	if status.IsSuccess() {
		a.feasible++
	}
	a.given++
	return status, true
}

// expect sets the nodes the step will visit, from first on, when the snapshot's nodes in
// placement are as many as the step's and hold first.
func (a *filterAhead) expect(first fwk.NodeInfo) {
	lister, ok := a.f.SnapshotSharedLister().(placementLister)
	if !ok {
		return
	}
	nodes, err := lister.ListNodesInPlacement()
	if err != nil || len(nodes) != a.pieces {
		return
	}
	if i := slices.Index(nodes, first); i >= 0 {
		a.nodes, a.first = nodes, i
		a.toFind = a.nodesToFind(len(nodes))
	}
}

// node is the step's node i, as expected.
func (a *filterAhead) node(i int) fwk.NodeInfo {
	return a.nodes[(a.first+i)%len(a.nodes)]
}

// evaluate evaluates, on every core, the nodes from the step's node i on that the step needs
// if every one of them is feasible: as many as it still looks for and one more, at least a few.
func (a *filterAhead) evaluate(i int) {
	n := min(max(a.toFind-a.feasible+1, minFilterAhead), a.pieces-i)
	a.from = i
	a.statuses = slices.Grow(a.statuses[:0], n)[:n]
	// Every node of the block is evaluated, also once the step stopped: the step takes only the
	// verdicts it would have reached.
	a.f.Parallelizer().Until(context.WithoutCancel(a.ctx), n, func(j int) {
		a.statuses[j] = a.f.RunFilterPluginsWithNominatedPods(a.ctx, a.state, a.pod, a.node(i+j))
	}, metrics.Filter)
}

// minFilterAhead is the fewest nodes evaluated ahead at once.
const minFilterAhead = 16

// Upstream's bounds on the feasible nodes a Filter step looks for (numFeasibleNodesToFind).
const (
	minFeasibleNodesToFind           = 100
	minFeasibleNodesPercentageToFind = 5
)

// nodesToFind is how many feasible nodes the Filter step looks for among nodes, as upstream's
// numFeasibleNodesToFind computes it for a scheduler without extenders (the simulation calls
// none). It only sizes the blocks evaluated ahead.
func (a *filterAhead) nodesToFind(nodes int) int {
	if !a.f.HasScorePlugins() {
		return 1
	}
	if nodes < minFeasibleNodesToFind {
		return nodes
	}
	percentage := a.percentage
	if p := a.f.PercentageOfNodesToScore(); p != nil {
		percentage = *p
	}
	if percentage == 0 {
		percentage = max(int32(50)-int32(nodes)/125, minFeasibleNodesPercentageToFind)
	}
	return max(nodes*int(percentage)/100, minFeasibleNodesToFind)
}
