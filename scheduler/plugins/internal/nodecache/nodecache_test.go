package nodecache

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/schedops/scheduler-profile-operator/internal/testutil"
	"github.com/schedops/scheduler-profile-operator/scheduler/plugins/internal/plugintest"
)

func node(name, pool string) *v1.Node {
	return &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"pool": pool}}}
}

// poolOf reads the pool label and counts its calls.
type poolOf struct{ calls atomic.Int64 }

func (p *poolOf) compute(n *v1.Node) string {
	p.calls.Add(1)
	return n.Labels["pool"]
}

// informed returns a cache on the node informer of a fake clientset holding nodes, started.
func informed(t *testing.T, nodes ...*v1.Node) (*Cache[string], *poolOf, *plugintest.Handle) {
	t.Helper()
	h := plugintest.NewHandle(nodes...)
	p := &poolOf{}
	c, err := New(h, p.compute)
	if err != nil {
		t.Fatal(err)
	}
	// Every Publish copies: the tests check what is cached after each.
	c.publishInterval = 0
	h.Start(t)
	return c, p, h
}

// waitLen waits until the cache holds values for n node objects.
func waitLen(t *testing.T, c *Cache[string], n int) {
	t.Helper()
	waitFor(t, fmt.Sprintf("the cache to hold %d node objects", n), func() bool { return c.Len() == n })
}

func waitFor(t *testing.T, what string, done func() bool) {
	t.Helper()
	testutil.Eventually(t, 10*time.Second, what, func(context.Context) error {
		if !done() {
			return errors.New("not yet")
		}
		return nil
	})
}

func TestCacheFollowsTheInformer(t *testing.T) {
	c, p, h := informed(t, node("n1", "a"), node("n2", "b"))
	waitFor(t, "the cache to sync", c.HasSynced)
	if c.Len() != 2 {
		t.Fatalf("synced, the cache holds %d node objects, want 2", c.Len())
	}
	n1 := h.Node(t, "n1", plugintest.Any)
	if got := c.Get(n1); got != "a" || p.calls.Load() != 3 {
		t.Errorf("before Publish: Get(n1) = %q after %d computes, want a after 3 (2 cached, 1 computed)", got, p.calls.Load())
	}
	c.Publish()
	before := p.calls.Load()
	for range 100 {
		if got := c.Get(n1); got != "a" {
			t.Fatalf("Get(n1) = %q, want a", got)
		}
	}
	if calls := p.calls.Load() - before; calls != 0 {
		t.Errorf("100 Gets of a cached node computed %d times, want 0", calls)
	}

	// A relabeled node is a new object: its value is the new one, and the old object is
	// forgotten.
	n1b := h.Relabel(t, "n1", "pool", "b")
	waitLen(t, c, 2)
	c.Publish()
	if got := c.Get(n1); got != "a" {
		t.Errorf("Get(n1 before the relabel) = %q, want a", got)
	}
	before = p.calls.Load()
	if got := c.Get(n1b); got != "b" {
		t.Errorf("Get(relabeled n1) = %q, want b", got)
	}
	if calls := p.calls.Load() - before; calls != 0 {
		t.Errorf("Get of the relabeled node computed %d times, want 0 (it should be cached)", calls)
	}

	// The deleted object comes from the watch event, not the one cached: it is matched by name.
	if err := h.Client.CoreV1().Nodes().Delete(t.Context(), "n2", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitLen(t, c, 1)
}

func TestGetComputesWhatItHasNotSeen(t *testing.T) {
	for name, h := range map[string]fwk.Handle{"no handle": nil, "handle without informers": &plugintest.Handle{}} {
		t.Run(name, func(t *testing.T) {
			p := &poolOf{}
			c, err := New(h, p.compute)
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Get(node("n1", "a")); got != "a" {
				t.Errorf("Get = %q, want a", got)
			}
			if p.calls.Load() != 1 || c.Len() != 0 || !c.HasSynced() {
				t.Errorf("computed %d times, cached %d, synced %t; want 1, 0, true", p.calls.Load(), c.Len(), c.HasSynced())
			}
		})
	}
	// An object the informer never delivered (here a copy of a cached one) is computed, not
	// answered with the value of another object of the same name.
	c, _, h := informed(t, node("n1", "a"))
	waitLen(t, c, 1)
	c.Publish()
	other := h.Node(t, "n1", plugintest.Any).DeepCopy()
	other.Labels["pool"] = "z"
	if got := c.Get(other); got != "z" {
		t.Errorf("Get(an object not delivered) = %q, want z", got)
	}
}

func TestTombstoneForgetsEveryObjectOfTheNode(t *testing.T) {
	c, err := New(nil, (&poolOf{}).compute)
	if err != nil {
		t.Fatal(err)
	}
	c.update(nil, node("n1", "a"))
	c.update(nil, node("n1", "b")) // an object whose update the informer never delivered
	c.update(nil, node("n2", "a"))
	c.forget(cache.DeletedFinalStateUnknown{Key: "n1", Obj: node("n1", "c")})
	if c.Len() != 1 {
		t.Errorf("after n1's tombstone the cache holds %d objects, want 1 (n2)", c.Len())
	}
	c.forget(cache.DeletedFinalStateUnknown{Key: "n2"})
	if c.Len() != 0 {
		t.Errorf("after n2's tombstone without object the cache holds %d objects, want 0", c.Len())
	}
}

// TestPublishCopiesAtMostOncePerInterval: changes within the interval are not copied, and their
// objects are computed meanwhile; the next Publish after the interval copies them.
func TestPublishCopiesAtMostOncePerInterval(t *testing.T) {
	p := &poolOf{}
	c, err := New(nil, p.compute)
	if err != nil {
		t.Fatal(err)
	}
	old, relabeled := node("n1", "a"), node("n1", "b")
	c.update(nil, old)
	c.Publish()
	c.update(old, relabeled)
	c.Publish() // within the interval: no copy
	before := p.calls.Load()
	if got := c.Get(relabeled); got != "b" || p.calls.Load() != before+1 {
		t.Errorf("Get(relabeled) within the interval = %q after %d computes, want b computed once", got, p.calls.Load()-before)
	}
	c.mu.Lock()
	c.publishedAt = c.publishedAt.Add(-publishInterval)
	c.mu.Unlock()
	c.Publish()
	before = p.calls.Load()
	if got := c.Get(relabeled); got != "b" || p.calls.Load() != before {
		t.Errorf("Get(relabeled) after the interval = %q after %d computes, want b cached", got, p.calls.Load()-before)
	}
}
