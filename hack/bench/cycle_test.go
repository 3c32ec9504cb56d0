package main

import (
	"fmt"
	"reflect"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	schedulerconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"

	"github.com/schedops/scheduler-profile-operator/hack/bench/internal/cluster"
	"github.com/schedops/scheduler-profile-operator/hack/bench/internal/noop"
	"github.com/schedops/scheduler-profile-operator/scheduler/plugins/nodelabelpreference"
	"github.com/schedops/scheduler-profile-operator/scheduler/plugins/nodepool"
)

// TestNoopPluginsRunWhereOursDo: the frameworks of the cycle benchmark run, and the no-op
// plugins are enabled at exactly the extension points of NodePool and NodeLabelPreference, with
// the same weight, so that the difference between the two profiles is our plugins' work.
func TestNoopPluginsRunWhereOursDo(t *testing.T) {
	const nodes = 20
	fws, err := cycleFrameworks(t.Context(), nodes)
	if err != nil {
		t.Fatal(err)
	}
	ours := pointsOf(fws[cyclePlugins].fw.ListPlugins(), nodepool.Name, nodelabelpreference.Name)
	noops := pointsOf(fws[cycleNoop].fw.ListPlugins(), noop.FilterName, noop.ScoreName)
	if !slices.Equal(ours, noops) {
		t.Errorf("extension points:\n ours: %v\nnoops: %v", ours, noops)
	}
	if !slices.Contains(ours, "Filter: 0") || !slices.Contains(ours, "Score: 1, weight 3") {
		t.Errorf("ours run at %v, want Filter and Score among them", ours)
	}
	if got := pointsOf(fws[cycleDefault].fw.ListPlugins(), nodepool.Name, nodelabelpreference.Name); len(got) > 0 {
		t.Errorf("the default profile runs our plugins at %v", got)
	}
	pods := []*corev1.Pod{cluster.Pod("a", "app-1"), cluster.Pod("b", "app-2")}
	for _, f := range fws {
		if err := runCycles(t.Context(), f.fw, pods); err != nil {
			t.Errorf("%s: %v", f.name, err)
		}
	}
}

// pointsOf lists the extension points at which the plugins named first and second are enabled,
// as "<point>: <0 or 1>[, weight <w>]".
func pointsOf(p *schedulerconfig.Plugins, first, second string) []string {
	var out []string
	v := reflect.ValueOf(p).Elem()
	for i := range v.NumField() {
		set, ok := v.Field(i).Interface().(schedulerconfig.PluginSet)
		if !ok {
			continue
		}
		for _, pl := range set.Enabled {
			which := slices.Index([]string{first, second}, pl.Name)
			if which < 0 {
				continue
			}
			s := fmt.Sprintf("%s: %d", v.Type().Field(i).Name, which)
			if pl.Weight != 0 {
				s += fmt.Sprintf(", weight %d", pl.Weight)
			}
			out = append(out, s)
		}
	}
	return out
}

// TestCycleRowsSubtractRoundByRound: what plugins add is the difference with the default profile
// of the same round, and ours are compared with the no-op plugins round by round.
func TestCycleRowsSubtractRoundByRound(t *testing.T) {
	fws := []cycleFramework{{name: "default"}, {name: "ours"}, {name: "noop"}}
	perPod := [][]float64{{100, 200}, {140, 260}, {112, 260}}
	rows := cycleRows(options{nodes: 10, cyclePods: 5}, fws, perPod)
	want := map[string]float64{"  added by our plugins": 50, "  added by two no-op plugins": 36, "  ours / no-op plugins": 1.125}
	for _, r := range rows {
		if w, ok := want[r.Measure]; ok {
			if r.Value.Median != w {
				t.Errorf("%s = %v, want %v", r.Measure, r.Value.Median, w)
			}
			delete(want, r.Measure)
		}
	}
	if len(want) > 0 {
		t.Errorf("rows missing: %v", want)
	}
}
