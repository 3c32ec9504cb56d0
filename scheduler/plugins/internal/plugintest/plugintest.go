// Package plugintest holds what the tests of every plugin package share.
package plugintest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/klog/v2/ktesting"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"
	frameworkruntime "k8s.io/kubernetes/pkg/scheduler/framework/runtime"
)

// NewCase is one case of a plugin constructor's table test: args, and the exact error or "".
type NewCase struct {
	Name    string
	Args    runtime.Object
	WantErr string
}

// TestNew runs a plugin's factory on each case and checks the error, or the plugin's name.
func TestNew(t *testing.T, factory frameworkruntime.PluginFactory, name string, cases []NewCase) {
	for _, tc := range cases {
		t.Run(tc.Name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			p, err := factory(ctx, tc.Args, nil)
			if tc.WantErr != "" {
				if err == nil || err.Error() != tc.WantErr {
					t.Fatalf("error:\n got: %v\nwant: %s", err, tc.WantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if p.Name() != name {
				t.Errorf("Name() = %q, want %q", p.Name(), name)
			}
		})
	}
}

// New builds a plugin with its factory and args, without a framework handle, and fails the test
// if the factory refuses them.
func New[T fwk.Plugin](t testing.TB, factory frameworkruntime.PluginFactory, args runtime.Object) T {
	t.Helper()
	return NewWithHandle[T](t, factory, args, nil)
}

// NewWithHandle is New with a framework handle.
func NewWithHandle[T fwk.Plugin](t testing.TB, factory frameworkruntime.PluginFactory, args runtime.Object, h fwk.Handle) T {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	p, err := factory(ctx, args, h)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return p.(T)
}

// NodeInfo wraps a node as the framework hands it to plugins.
func NodeInfo(node *v1.Node) fwk.NodeInfo {
	ni := framework.NewNodeInfo()
	ni.SetNode(node)
	return ni
}

// Handle is a framework handle with only informers, on a fake clientset: what plugins that watch
// nodes need from the framework.
type Handle struct {
	fwk.Handle
	Client  *fake.Clientset
	Factory informers.SharedInformerFactory
}

// NewHandle returns a Handle whose clientset holds nodes. Build the plugins with it, then Start
// it.
func NewHandle(nodes ...*v1.Node) *Handle {
	objs := make([]runtime.Object, len(nodes))
	for i, n := range nodes {
		objs[i] = n
	}
	client := fake.NewClientset(objs...)
	return &Handle{Client: client, Factory: informers.NewSharedInformerFactory(client, 0)}
}

// SharedInformerFactory returns the informers of the fake clientset.
func (h *Handle) SharedInformerFactory() informers.SharedInformerFactory { return h.Factory }

// Start starts the informers, stopped when the test ends, and waits until they have listed.
func (h *Handle) Start(t testing.TB) {
	t.Helper()
	h.Factory.Start(t.Context().Done())
	t.Cleanup(h.Factory.Shutdown)
	h.Factory.WaitForCacheSync(t.Context().Done())
}

// Node waits until the informer's object for the node name satisfies ok, and returns it: the
// object a scheduling cycle's snapshot would hold.
func (h *Handle) Node(t testing.TB, name string, ok func(*v1.Node) bool) *v1.Node {
	t.Helper()
	var got *v1.Node
	eventually(t, "the informer to deliver node "+name, func() error {
		n, err := h.Factory.Core().V1().Nodes().Lister().Get(name)
		if err != nil {
			return err
		}
		if got = n; !ok(n) {
			return fmt.Errorf("labels %v", n.Labels)
		}
		return nil
	})
	return got
}

// Relabel sets the label key=value on the node name through the clientset, and returns the
// object the informer then delivers.
func (h *Handle) Relabel(t testing.TB, name, key, value string) *v1.Node {
	t.Helper()
	n, err := h.Client.CoreV1().Nodes().Get(t.Context(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Labels[key] = value
	if _, err := h.Client.CoreV1().Nodes().Update(t.Context(), n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	return h.Node(t, name, func(n *v1.Node) bool { return n.Labels[key] == value })
}

// Any accepts every node object; for Node.
func Any(*v1.Node) bool { return true }

// BothWays runs check twice: on a plugin that build makes without a handle, given nodes as they
// are, which it computes from; and on one that build makes with a Handle holding nodes, given the
// objects its informer delivered, which it may read from what it cached of them.
func BothWays[T any](t *testing.T, nodes []*v1.Node, build func(testing.TB, fwk.Handle) T, check func(t *testing.T, pl T, nodes []*v1.Node)) {
	t.Run("computed", func(t *testing.T) { check(t, build(t, nil), nodes) })
	t.Run("informed", func(t *testing.T) {
		pl, delivered := informed(t, nodes, build)
		check(t, pl, delivered)
	})
}

// BothWaysB is BothWays for a benchmark, on n nodes with the labels of real nodes (named
// node-0000 and up, in zone-a, spot, in pool "bench"), given as the NodeInfos of a cycle once the
// plugin made with a Handle reports, through synced, that it has handled them all.
func BothWaysB[T any](b *testing.B, n int, build func(testing.TB, fwk.Handle) T, synced func(T) bool, bench func(b *testing.B, pl T, nodes []fwk.NodeInfo)) {
	nodes := make([]*v1.Node, n)
	for i := range nodes {
		name := fmt.Sprintf("node-%04d", i)
		nodes[i] = &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{
			"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "topology.kubernetes.io/zone": "zone-a",
			"node.kubernetes.io/lifecycle": "spot", "pool": "bench",
		}}}
	}
	infos := func(nodes []*v1.Node) []fwk.NodeInfo {
		out := make([]fwk.NodeInfo, len(nodes))
		for i, n := range nodes {
			out[i] = NodeInfo(n)
		}
		return out
	}
	b.Run("computed", func(b *testing.B) { bench(b, build(b, nil), infos(nodes)) })
	b.Run("informed", func(b *testing.B) {
		pl, delivered := informed(b, nodes, build)
		eventually(b, "the plugin to handle every node", func() error {
			if !synced(pl) {
				return errors.New("not synced")
			}
			return nil
		})
		bench(b, pl, infos(delivered))
	})
}

// informed builds a plugin on a started Handle holding nodes, and returns it with the node
// objects its informer delivered.
func informed[T any](t testing.TB, nodes []*v1.Node, build func(testing.TB, fwk.Handle) T) (T, []*v1.Node) {
	h := NewHandle(nodes...)
	pl := build(t, h)
	h.Start(t)
	delivered := make([]*v1.Node, len(nodes))
	for i, n := range nodes {
		delivered[i] = h.Node(t, n.Name, Any)
	}
	return pl, delivered
}

// eventually calls cond every 10 ms until it returns nil, and fails the test with its last error
// if that does not happen within 10 seconds. what names the awaited state in the failure. (The
// plugins' tests wait only for informers in the test's own process, so this package imports no
// test infrastructure of the operator.)
func eventually(t testing.TB, what string, cond func() error) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(t.Context(), 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		last = cond()
		return last == nil, nil
	})
	if err != nil {
		t.Fatalf("Waiting for %s: %v (%v)", what, last, err)
	}
}
