package profile

import (
	"context"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/component-base/featuregate"

	"github.com/schedops/scheduler-profile-operator/internal/testutil"
)

// watchedResources builds the scheduler of a configuration with gates as kube-scheduler does
// (scheduler.New against a fake clientset), starts its informer factories as kube-scheduler's Run
// does, and returns the resources they watch, as "group/version resource".
func watchedResources(data []byte, gates map[string]bool) (sets.Set[string], error) {
	out := sets.New[string]()
	var runErr error
	err := withGates(gates, func() {
		cfg, err := DecodeConfig(data)
		if err != nil {
			runErr = err
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		fs, err := NewFakeScheduler(ctx, cfg, nil)
		if err != nil {
			runErr = err
			return
		}
		fs.Informers.Start(ctx.Done())
		for typ, synced := range fs.Informers.WaitForCacheSync(ctx.Done()) {
			gvks, _, err := scheme.Scheme.ObjectKinds(reflect.New(typ.Elem()).Interface().(runtime.Object))
			if err != nil || !synced {
				runErr = fmt.Errorf("informer of %v (synced %t): %v", typ, synced, err)
				return
			}
			gvr, _ := meta.UnsafeGuessKindToResource(gvks[0])
			out.Insert(gvr.GroupVersion().String() + " " + gvr.Resource)
		}
		fs.DynInformers.Start(ctx.Done())
		for gvr := range fs.DynInformers.WaitForCacheSync(ctx.Done()) {
			out.Insert(gvr.GroupVersion().String() + " " + gvr.Resource)
		}
	})
	if err != nil {
		return nil, err
	}
	return out, runErr
}

// gateSettings sets gate to on with every gate it depends on (transitively) on and every gate
// that depends on it off, so that what changes between on and off is the gate's own doing.
func gateSettings(gate string, on bool) map[string]bool {
	deps := utilfeature.DefaultMutableFeatureGate.Dependencies()
	set := map[string]bool{gate: on}
	var needs func(featuregate.Feature)
	needs = func(f featuregate.Feature) {
		for _, d := range deps[f] {
			set[string(d)] = true
			needs(d)
		}
	}
	needs(featuregate.Feature(gate))
	var off func(featuregate.Feature)
	off = func(f featuregate.Feature) {
		for dependent, ds := range deps {
			if slices.Contains(ds, f) && set[string(dependent)] {
				continue
			}
			if slices.Contains(ds, f) {
				set[string(dependent)] = false
				off(dependent)
			}
		}
	}
	off(featuregate.Feature(gate))
	return set
}

func apiNames(apis []GateAPI) []string {
	var out []string
	for _, a := range apis {
		out = append(out, a.GroupVersion+" "+a.Resource)
	}
	slices.Sort(out)
	return out
}

// TestGateAPIsMatchInformers ties GateAPIs to upstream: for every gate of kube-scheduler's
// feature gate that can be switched both ways, the resources the scheduler's informers watch with
// the gate on and not with it off are the gate's entry in GateAPIs, and a gate without an entry
// adds none. A Kubernetes bump that makes a gate watch a new API fails here.
func TestGateAPIsMatchInformers(t *testing.T) {
	cfg, err := Render(testutil.MakeProfile("gates").Obj(), Settings{Namespace: testNamespace})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	tried := 0
	for gate, spec := range utilfeature.DefaultMutableFeatureGate.GetAll() {
		name := string(gate)
		if spec.LockToDefault || name == "AllAlpha" || name == "AllBeta" {
			continue
		}
		on, off := gateSettings(name, true), gateSettings(name, false)
		if len(CheckGates(on, nil)) > 0 || len(CheckGates(off, nil)) > 0 {
			continue // a gate it depends on, or one that depends on it, is locked
		}
		tried++
		withOn, err := watchedResources(cfg.YAML, on)
		if err != nil {
			t.Errorf("the scheduler with %v: %v", on, err)
			continue
		}
		withOff, err := watchedResources(cfg.YAML, off)
		if err != nil {
			t.Errorf("the scheduler with %v: %v", off, err)
			continue
		}
		if own := sets.List(withOn.Difference(withOff)); len(own) > 0 {
			got[name] = own
		}
	}
	want := map[string][]string{}
	for gate, apis := range GateAPIs {
		want[gate] = apiNames(apis)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("GateAPIs (-want) and the resources the scheduler watches with each gate on and not off (+got), of %d gates tried:\n%s", tried, diff)
	}
	if tried < 100 {
		t.Errorf("only %d gates could be switched both ways: the test no longer sees upstream's gates", tried)
	}
}

// TestGateAPIsTogether: with every GateAPIs gate on at once, the scheduler watches no resource
// beyond those of the gates one by one.
func TestGateAPIsTogether(t *testing.T) {
	cfg, err := Render(testutil.MakeProfile("gates").Obj(), Settings{Namespace: testNamespace})
	if err != nil {
		t.Fatal(err)
	}
	on, off := map[string]bool{}, map[string]bool{}
	for _, gate := range slices.Sorted(maps.Keys(GateAPIs)) {
		// Only what each gate needs on, and what must be off without it: the one-by-one
		// settings of a gate turn off the gates that depend on it, which are in the table too.
		for name, enabled := range gateSettings(gate, true) {
			if enabled {
				on[name] = true
			}
		}
		for name, enabled := range gateSettings(gate, false) {
			if !enabled {
				off[name] = false
			}
		}
	}
	withOn, err := watchedResources(cfg.YAML, on)
	if err != nil {
		t.Fatal(err)
	}
	withOff, err := watchedResources(cfg.YAML, off)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, apis := range GateAPIs {
		want = append(want, apiNames(apis)...)
	}
	slices.Sort(want)
	if diff := cmp.Diff(want, sets.List(withOn.Difference(withOff))); diff != "" {
		t.Errorf("resources watched with all gates of GateAPIs on and not off (-want +got):\n%s", diff)
	}
}

func TestRequiredAPIs(t *testing.T) {
	names := func(reqs []GateRequirement) []string {
		var out []string
		for _, r := range reqs {
			out = append(out, fmt.Sprintf("%s(default %t) %s %s", r.Gate, r.ByDefault, r.API.GroupVersion, r.API.Resource))
		}
		return out
	}
	tests := []struct {
		name  string
		gates map[string]bool
		want  []string
	}{
		{name: "defaults", want: []string{"DRADeviceTaintRules(default true) resource.k8s.io/v1 devicetaintrules"}},
		{name: "a gate on by default turned off", gates: map[string]bool{"DRADeviceTaintRules": false}},
		{name: "gang and composite", gates: map[string]bool{"GenericWorkload": true, "CompositePodGroup": true, "DRADeviceTaintRules": false},
			want: []string{"CompositePodGroup(default false) scheduling.k8s.io/v1alpha3 compositepodgroups", "GenericWorkload(default false) scheduling.k8s.io/v1beta1 podgroups"}},
		{name: "a gate off", gates: map[string]bool{"GenericWorkload": false, "DRADeviceTaintRules": true},
			want: []string{"DRADeviceTaintRules(default false) resource.k8s.io/v1 devicetaintrules"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, names(RequiredAPIs(tc.gates))); diff != "" {
				t.Errorf("RequiredAPIs (-want +got):\n%s", diff)
			}
		})
	}
}
