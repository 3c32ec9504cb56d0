// Package nodepool implements the NodePool plugin, which confines a scheduler to the nodes
// that its args select, so that several schedulers can share a cluster without sharing nodes.
package nodepool

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/util"

	"github.com/schedops/scheduler-profile-operator/scheduler/apis/config"
	"github.com/schedops/scheduler-profile-operator/scheduler/apis/config/validation"
	"github.com/schedops/scheduler-profile-operator/scheduler/plugins/internal/nodecache"
)

const (
	// Name is the name of the plugin in the registry and in KubeSchedulerConfiguration.
	Name = "NodePool"

	// ErrReasonOutsidePool is the reason given for a node that the node selector does not match.
	ErrReasonOutsidePool = "node(s) are outside the scheduler's node pool"
)

// NodePool filters out the nodes whose labels do not match the configured node selector.
type NodePool struct {
	// selector is parsed once in New: args never change while the scheduler runs.
	selector labels.Selector
	// inPool caches, per node object, whether selector matches it.
	inPool *nodecache.Cache[bool]
}

var (
	_ fwk.PreFilterPlugin   = &NodePool{}
	_ fwk.FilterPlugin      = &NodePool{}
	_ fwk.EnqueueExtensions = &NodePool{}
	_ fwk.SignPlugin        = &NodePool{}
)

// New builds the plugin from NodePoolArgs, which must name a valid node selector.
func New(_ context.Context, obj runtime.Object, h fwk.Handle) (fwk.Plugin, error) {
	args, ok := obj.(*config.NodePoolArgs)
	if !ok {
		return nil, fmt.Errorf("args are not of type NodePoolArgs, got %T", obj)
	}
	if err := validation.ValidateNodePoolArgs(nil, args); err != nil {
		return nil, err
	}
	selector, err := metav1.LabelSelectorAsSelector(args.NodeSelector)
	if err != nil {
		return nil, fmt.Errorf("parsing nodeSelector: %w", err)
	}
	pl := &NodePool{selector: selector}
	if pl.inPool, err = nodecache.New(h, pl.matches); err != nil {
		return nil, fmt.Errorf("watching nodes: %w", err)
	}
	return pl, nil
}

// Name returns the name of the plugin.
func (pl *NodePool) Name() string {
	return Name
}

// SignPod returns no fragment: the plugin's decision depends on the node only, so all pods sign
// alike, and implementing SignPlugin keeps the scheduler's opportunistic batching on.
func (pl *NodePool) SignPod(_ context.Context, _ *v1.Pod) ([]fwk.SignFragment, *fwk.Status) {
	return nil, nil
}

// PreFilter skips Filter for the whole cycle when the selector selects every node. It never
// narrows the nodes with a PreFilterResult: the framework would then reject the others with a
// generic "didn't satisfy plugin" message instead of ErrReasonOutsidePool.
func (pl *NodePool) PreFilter(_ context.Context, _ fwk.CycleState, _ *v1.Pod, _ []fwk.NodeInfo) (*fwk.PreFilterResult, *fwk.Status) {
	if pl.selector.Empty() {
		return nil, fwk.NewStatus(fwk.Skip)
	}
	pl.inPool.Publish()
	return nil, nil
}

// PreFilterExtensions returns nil: the decision does not depend on other pods.
func (pl *NodePool) PreFilterExtensions() fwk.PreFilterExtensions {
	return nil
}

// Filter rejects a node outside the pool as UnschedulableAndUnresolvable, because preempting
// pods cannot bring a node into the pool.
func (pl *NodePool) Filter(_ context.Context, _ fwk.CycleState, _ *v1.Pod, nodeInfo fwk.NodeInfo) *fwk.Status {
	if !pl.inPool.Get(nodeInfo.Node()) {
		return fwk.NewStatus(fwk.UnschedulableAndUnresolvable, ErrReasonOutsidePool)
	}
	return nil
}

// EventsToRegister retries a pod that the plugin rejected when a node is added or relabeled,
// the only events that can bring a node into the pool.
func (pl *NodePool) EventsToRegister(_ context.Context) ([]fwk.ClusterEventWithHint, error) {
	return []fwk.ClusterEventWithHint{
		{Event: fwk.ClusterEvent{Resource: fwk.Node, ActionType: fwk.Add | fwk.UpdateNodeLabel}, QueueingHintFn: pl.isSchedulableAfterNodeChange},
	}, nil
}

// isSchedulableAfterNodeChange queues the pod only when a node has entered the pool: a node
// that was already in it, or is still outside, changes nothing for this plugin.
func (pl *NodePool) isSchedulableAfterNodeChange(logger klog.Logger, pod *v1.Pod, oldObj, newObj interface{}) (fwk.QueueingHint, error) {
	oldNode, newNode, err := util.As[*v1.Node](oldObj, newObj)
	if err != nil {
		return fwk.Queue, err
	}
	if !pl.matches(newNode) {
		logger.V(5).Info("Node is outside the node pool", "pod", klog.KObj(pod), "node", klog.KObj(newNode))
		return fwk.QueueSkip, nil
	}
	if oldNode != nil && pl.matches(oldNode) {
		logger.V(5).Info("Node was already in the node pool", "pod", klog.KObj(pod), "node", klog.KObj(newNode))
		return fwk.QueueSkip, nil
	}
	logger.V(5).Info("Node entered the node pool", "pod", klog.KObj(pod), "node", klog.KObj(newNode))
	return fwk.Queue, nil
}

// matches reports whether the selector matches the node's labels. Filter reads it through the
// inPool cache; queueing hints call it directly, on objects the cache may not have seen yet.
func (pl *NodePool) matches(node *v1.Node) bool {
	return pl.selector.Matches(labels.Set(node.Labels))
}
