// Package plugintest holds what the tests of every plugin package share.
package plugintest

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
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

// New builds a plugin with its factory and args, and fails the test if the factory refuses them.
func New[T fwk.Plugin](t testing.TB, factory frameworkruntime.PluginFactory, args runtime.Object) T {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	p, err := factory(ctx, args, nil)
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
