// Package nodecache keeps what a plugin derives from a node's labels, computed once per node
// object instead of once per node in every scheduling cycle.
//
// A scheduling cycle calls Filter and Score on hundreds of nodes, and reading each node's label
// map there misses the CPU cache: in the throughput benchmark (hack/bench) that took about 6.5% of
// the scheduler's CPU for NodePool and NodeLabelPreference together. Reading a value from this
// cache reads none of the node's memory.
package nodecache

import (
	"maps"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
	fwk "k8s.io/kube-scheduler/framework"
)

// Cache maps each Node object that the scheduler's node informer delivered to the value that
// compute gives for it.
//
// The keys are the objects themselves. The informer never changes an object it delivered (a
// change delivers a new one), and the scheduler's snapshot holds those same objects, so a hit is
// the value for the node as the cycle sees it. A miss (an object whose event the cache has not
// published yet, or a plugin built without informers) computes the value from the node.
//
// Get reads a published copy without a lock: Filter and Score run on many goroutines at once,
// and a lock, even a read lock, on every node of every cycle would cost more than the labels.
// The informer's handler writes the values under a lock; Publish, called once per cycle, copies
// them when they have changed, at most once per publishInterval: kubelets update their Node
// objects every few minutes, so a large cluster changes some node many times a second, and a
// copy per cycle would cost more than it saves. A node changed since the last copy is a miss
// until the next one.
type Cache[T any] struct {
	compute func(*v1.Node) T
	// registration is the handler's on the node informer; nil without informers.
	registration cache.ResourceEventHandlerRegistration

	mu sync.Mutex
	// values is written by the informer's handler, under mu.
	values map[*v1.Node]T
	// changed is set when values changed since the last Publish.
	changed atomic.Bool
	// published is the copy of values that Get reads.
	published atomic.Pointer[map[*v1.Node]T]
	// publishedAt is when published was copied, under mu; publishInterval is the least time
	// between two copies.
	publishedAt     time.Time
	publishInterval time.Duration
}

// publishInterval is the least time between two copies of a cache's values.
const publishInterval = time.Second

// New returns a cache of compute's values, kept up to date by an event handler on the node
// informer of h. Without a handle or informers (unit tests) the cache stays empty and Get
// computes every value.
func New[T any](h fwk.Handle, compute func(*v1.Node) T) (*Cache[T], error) {
	c := &Cache[T]{compute: compute, values: map[*v1.Node]T{}, publishInterval: publishInterval}
	if h == nil || h.SharedInformerFactory() == nil {
		return c, nil
	}
	var err error
	c.registration, err = h.SharedInformerFactory().Core().V1().Nodes().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { c.update(nil, obj) },
		// The old object is the one the informer delivered before, the cache's key.
		UpdateFunc: c.update,
		DeleteFunc: c.forget,
	})
	return c, err
}

// Get returns the value for node: the published one for this very object, else computed.
func (c *Cache[T]) Get(node *v1.Node) T {
	if m := c.published.Load(); m != nil {
		if v, ok := (*m)[node]; ok {
			return v
		}
	}
	return c.compute(node)
}

// HasSynced reports whether the cache has handled every node the informer listed when it started
// (always true without informers).
func (c *Cache[T]) HasSynced() bool {
	return c.registration == nil || c.registration.HasSynced()
}

// Publish makes the values written since the last copy visible to Get. Plugins call it once per
// scheduling cycle, before Filter or Score (in PreFilter or PreScore); it copies the values only
// when a node has changed, and at most once per publishInterval.
func (c *Cache[T]) Publish() {
	if !c.changed.Load() {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if now := time.Now(); now.Sub(c.publishedAt) >= c.publishInterval {
		m := maps.Clone(c.values)
		c.published.Store(&m)
		c.changed.Store(false)
		c.publishedAt = now
	}
}

// Len returns how many node objects the cache holds values for, published or not.
func (c *Cache[T]) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.values)
}

// update replaces the value of oldObj (nil for an added node) by that of newObj.
func (c *Cache[T]) update(oldObj, newObj any) {
	node, ok := newObj.(*v1.Node)
	if !ok {
		return
	}
	v := c.compute(node)
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := oldObj.(*v1.Node); ok {
		delete(c.values, old)
	}
	c.values[node] = v
	c.changed.Store(true)
}

// forget drops every object of the node that obj (a Node or a tombstone) names. Deletions are
// rare, and their object is not the one delivered before (it comes from the watch event, or a
// tombstone holds the last object the informer knew), so they are matched by name.
func (c *Cache[T]) forget(obj any) {
	var name string
	switch o := obj.(type) {
	case *v1.Node:
		name = o.Name
	case cache.DeletedFinalStateUnknown:
		name = o.Key
		if node, ok := o.Obj.(*v1.Node); ok {
			name = node.Name
		}
	default:
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	maps.DeleteFunc(c.values, func(node *v1.Node, _ T) bool { return node.Name == name })
	c.changed.Store(true)
}
