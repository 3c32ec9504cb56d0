package profile

import (
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/schedops/scheduler-profile-operator/internal/testutil"
)

func TestCheckGates(t *testing.T) {
	path := field.NewPath("spec", "scheduler", "featureGates")
	tests := []struct {
		name  string
		gates map[string]bool
		want  []string
	}{
		{name: "none"},
		{name: "a beta gate on", gates: map[string]bool{"GenericWorkload": true}},
		{name: "a gate with its dependencies", gates: map[string]bool{"GenericWorkload": true, "TopologyAwareWorkloadScheduling": true, "CompositePodGroup": true}},
		{name: "unknown", gates: map[string]bool{"NoSuchGate": true},
			want: []string{"spec.scheduler.featureGates.NoSuchGate: Invalid value: true: unrecognized feature gate: NoSuchGate"}},
		{name: "locked", gates: map[string]bool{"CRDValidationRatcheting": false},
			want: []string{"spec.scheduler.featureGates.CRDValidationRatcheting: Invalid value: false: cannot set feature gate CRDValidationRatcheting to false, feature is locked to true"}},
		{name: "each refused gate is reported", gates: map[string]bool{"NoSuchGate": true, "CRDValidationRatcheting": false},
			want: []string{
				"spec.scheduler.featureGates.CRDValidationRatcheting: Invalid value: false: cannot set feature gate CRDValidationRatcheting to false, feature is locked to true",
				"spec.scheduler.featureGates.NoSuchGate: Invalid value: true: unrecognized feature gate: NoSuchGate",
			}},
		{name: "all beta or alpha gates at once", gates: map[string]bool{"AllBeta": false, "AllAlpha": true},
			want: []string{
				"spec.scheduler.featureGates.AllAlpha: Invalid value: true: not accepted: name the gates to set one by one",
				"spec.scheduler.featureGates.AllBeta: Invalid value: false: not accepted: name the gates to set one by one",
			}},
		{name: "missing dependencies", gates: map[string]bool{"CompositePodGroup": true},
			want: []string{"spec.scheduler.featureGates.CompositePodGroup: Invalid value: true: CompositePodGroup is enabled, but depends on features that are disabled: [GenericWorkload TopologyAwareWorkloadScheduling]"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, e := range CheckGates(tc.gates, path) {
				got = append(got, e.Error())
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("CheckGates (-want +got):\n%s", diff)
			}
		})
	}
}

// TestValidationsWithDifferentGatesDoNotLeak validates, at the same time and many times over,
// with GenericWorkload on and with the default gates: each must see its own default plugins
// (GangScheduling only with the gate), although kube-scheduler's gates are process-wide.
func TestValidationsWithDifferentGatesDoNotLeak(t *testing.T) {
	cfg, err := Render(testutil.MakeProfile("gates").Obj(), Settings{Namespace: testNamespace})
	if err != nil {
		t.Fatal(err)
	}
	defaultPlugins := func(gates map[string]bool) []string {
		var names []string
		if err := withGates(gates, func() {
			decoded, err := DecodeConfig(cfg.YAML)
			if err != nil {
				t.Error(err)
				return
			}
			for _, p := range decoded.Profiles[0].Plugins.MultiPoint.Enabled {
				names = append(names, p.Name)
			}
		}); err != nil {
			t.Error(err)
		}
		return names
	}
	gang := map[string]bool{"GenericWorkload": true}
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 25 {
				if !slices.Contains(defaultPlugins(gang), "GangScheduling") {
					t.Error("with GenericWorkload on, the defaults lack GangScheduling")
				}
				if errs := ValidateWithGates(cfg.YAML, gang, field.NewPath("spec")); len(errs) > 0 {
					t.Errorf("invalid with GenericWorkload on: %v", errs)
				}
			}
		})
		wg.Go(func() {
			for range 25 {
				if slices.Contains(defaultPlugins(nil), "GangScheduling") {
					t.Error("with the default gates, the defaults have GangScheduling: a gate leaked")
				}
				if errs := Validate(cfg.YAML); len(errs) > 0 {
					t.Errorf("invalid with the default gates: %v", errs)
				}
			}
		})
	}
	wg.Wait()
}

// TestRefusedGatesLeaveTheProcessGateAlone: a refused gate given to a validation that did not
// check the gates first never reaches the process-wide gate, where it would stay and make every
// later validation with gates fail.
func TestRefusedGatesLeaveTheProcessGateAlone(t *testing.T) {
	cfg, err := Render(testutil.MakeProfile("gates").Obj(), Settings{Namespace: testNamespace})
	if err != nil {
		t.Fatal(err)
	}
	for _, refused := range []map[string]bool{{"NoSuchGate": true}, {"AllBeta": false}} {
		if err := ValidateProcess(cfg.YAML, refused); err == nil || !strings.Contains(err.Error(), "setting feature gates") {
			t.Errorf("ValidateProcess with %v: %v, want the gates refused", refused, err)
		}
	}
	gang := map[string]bool{"GenericWorkload": true}
	if errs := ValidateWithGates(cfg.YAML, gang, field.NewPath("spec")); len(errs) > 0 {
		t.Errorf("after refused gates, a validation with GenericWorkload on fails: %v", errs)
	}
	if err := ValidateProcess(cfg.YAML, nil); err != nil {
		t.Errorf("after refused gates, a validation with the default gates fails: %v", err)
	}
}
