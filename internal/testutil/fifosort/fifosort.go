// Package fifosort is a queue sort plugin of the tests, TestFIFOSort, which really sorts the
// queue otherwise than PrioritySort; the stock plugins have no such plugin.
package fifosort

import (
	"context"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/schedops/scheduler-profile-operator/scheduler/registry"
)

// Name is the plugin's name in profiles.
const Name = "TestFIFOSort"

// fifoSort sorts the queue by the time pods were added, and is not PrioritySort: a queue sort
// that really differs from the default one, which the stock plugins do not have.
type fifoSort struct{}

var _ fwk.QueueSortPlugin = fifoSort{}

func (fifoSort) Name() string { return Name }

func (fifoSort) Less(a, b fwk.QueuedEntityInfo) bool {
	return a.GetTimestamp().Before(b.GetTimestamp())
}

// Use adds the queue sort plugin TestFIFOSort to the stock plugins for the rest of the
// test; the stock plugins alone are in use again when it ends.
func Use(t testing.TB) {
	t.Helper()
	plugin := registry.Plugin{
		Name: Name,
		New:  func(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) { return fifoSort{}, nil },
		Type: fifoSort{},
	}
	if err := registry.Use(append(registry.Stock(), plugin)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := registry.Use(registry.Stock()); err != nil {
			t.Error(err)
		}
	})
}
