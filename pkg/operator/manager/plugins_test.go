package manager

import (
	"bytes"
	"context"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fwk "k8s.io/kube-scheduler/framework"

	"github.com/schedops/scheduler-profile-operator/pkg/operator"
	"github.com/schedops/scheduler-profile-operator/scheduler/registry"
)

func TestPlugins(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := runPlugins(nil, &stdout, &stderr); code != 0 {
		t.Fatalf("exit code %d, stderr:\n%s", code, stderr.String())
	}
	lines := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(stdout.String()), "\n")[1:] {
		f := strings.Fields(l)
		lines[f[0]] = strings.Join(f[1:], " ")
	}
	for name, want := range map[string]string{
		"NodePool":            "out-of-tree PreFilter,Filter",
		"NodeLabelPreference": "out-of-tree PreScore,Score",
		"NodeResourcesFit":    "in-tree PreFilter,Filter,PreScore,Score,PlacementScore",
		"DefaultBinder":       "in-tree Bind",
		"PrioritySort":        "in-tree QueueSort",
	} {
		if lines[name] != want {
			t.Errorf("%s: %q, want %q", name, lines[name], want)
		}
	}
	if len(lines) < 20 {
		t.Errorf("%d plugins listed, want every in-tree plugin too:\n%s", len(lines), stdout.String())
	}
	if code := runPlugins([]string{"extra"}, &stdout, &stderr); code != 2 {
		t.Errorf("an unexpected argument gave exit code %d, want 2", code)
	}
}

// noArgs is a plugin of this test's own, a Score plugin without args.
type noArgs struct{}

func (noArgs) Name() string { return "TestScore" }
func (noArgs) Score(context.Context, fwk.CycleState, *v1.Pod, fwk.NodeInfo) (int64, *fwk.Status) {
	return 0, nil
}
func (noArgs) ScoreExtensions() fwk.ScoreExtensions { return nil }

// TestPluginsListsWhatRunWasGiven checks that `manager plugins` lists the plugins that Run
// was given, and those only.
func TestPluginsListsWhatRunWasGiven(t *testing.T) {
	t.Cleanup(func() {
		if err := registry.Use(operator.StockPlugins()); err != nil {
			t.Fatal(err)
		}
	})
	newNoArgs := func(context.Context, runtime.Object, fwk.Handle) (fwk.Plugin, error) { return noArgs{}, nil }
	if err := registry.Use([]operator.Plugin{{Name: "TestScore", New: newNoArgs, Type: noArgs{}}}); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	if code := command([]string{"plugins"}, &stdout, &stderr); code != 0 {
		t.Fatalf("exit code %d, stderr:\n%s", code, stderr.String())
	}
	var outOfTree []string
	for _, l := range strings.Split(strings.TrimSpace(stdout.String()), "\n")[1:] {
		if f := strings.Fields(l); f[1] == "out-of-tree" {
			outOfTree = append(outOfTree, strings.Join(f, " "))
		}
	}
	if want := []string{"TestScore out-of-tree Score"}; !slices.Equal(outOfTree, want) {
		t.Errorf("out-of-tree plugins listed %q, want %q", outOfTree, want)
	}
}
