package profile

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/util/validation/field"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/featuregate"
)

// gateMu guards kube-scheduler's process-wide feature gate, which its defaulting and its plugins
// read: a validation with gates sets them there and holds it for writing until they are reset;
// validations with the default gates only read it, and run side by side.
var gateMu sync.RWMutex

// dependencyError matches upstream's message for a gate whose dependencies are off.
var dependencyError = regexp.MustCompile(`^(\w+) is enabled, but depends on features that are disabled`)

// CheckGates checks feature gates as kube-scheduler's --feature-gates does, on a copy of the
// process's gate, and reports each refused gate at path.<Name> in upstream's words: an unknown
// gate, a gate locked to its default, a gate enabled without the gates it depends on.
//
// AllAlpha and AllBeta are refused too: they switch every alpha or beta gate at once, which the
// validations cannot set and reset on the process-wide gate, and which a scheduler should not run.
func CheckGates(gates map[string]bool, path *field.Path) field.ErrorList {
	if len(gates) == 0 {
		return nil // nothing to refuse, and a copy of the gate costs a pass more than the rest
	}
	var errs field.ErrorList
	for _, name := range slices.Sorted(maps.Keys(gates)) {
		if name == "AllAlpha" || name == "AllBeta" {
			errs = append(errs, field.Invalid(path.Child(name), gates[name], "not accepted: name the gates to set one by one"))
			continue
		}
		// One gate at a time, so that every unknown or locked gate is reported; a missing
		// dependency may be among the other gates, and is checked on all of them below.
		gate := utilfeature.DefaultMutableFeatureGate.DeepCopy()
		if err := gate.SetFromMap(map[string]bool{name: gates[name]}); err != nil && !dependencyError.MatchString(firstLine(err)) {
			errs = append(errs, field.Invalid(path.Child(name), gates[name], firstLine(err)))
		}
	}
	if len(errs) > 0 {
		return errs
	}
	gate := utilfeature.DefaultMutableFeatureGate.DeepCopy()
	if err := gate.SetFromMap(gates); err != nil {
		for _, line := range strings.Split(err.Error(), "\n") {
			line = strings.TrimSpace(line)
			m := dependencyError.FindStringSubmatch(line)
			if m == nil {
				errs = append(errs, field.Invalid(path, field.OmitValueType{}, line))
				continue
			}
			// The message says the gate is enabled: explicitly, or by default.
			errs = append(errs, field.Invalid(path.Child(m[1]), true, line))
		}
	}
	return errs
}

func firstLine(err error) string {
	return strings.TrimSpace(strings.SplitN(err.Error(), "\n", 2)[0])
}

// WithGates runs fn with gates set on kube-scheduler's process-wide feature gate, as withGates
// does: `manager simulate` runs the whole simulation so, since plugins read the gate as they run.
func WithGates(gates map[string]bool, fn func()) error {
	return withGates(gates, fn)
}

// withGates runs fn with gates set on the process-wide gate, and then resets them, holding
// gateMu for writing throughout (for reading, without gates). Gates that CheckGates refuses are refused here before the process-wide gate
// is touched: a failed SetFromMap would leave them in it, and every later one would fail.
func withGates(gates map[string]bool, fn func()) error {
	if len(gates) == 0 {
		gateMu.RLock()
		defer gateMu.RUnlock()
		fn()
		return nil
	}
	gateMu.Lock()
	defer gateMu.Unlock()
	if errs := CheckGates(gates, field.NewPath("featureGates")); len(errs) > 0 {
		return fmt.Errorf("setting feature gates: %w", errs.ToAggregate())
	}
	if err := utilfeature.DefaultMutableFeatureGate.SetFromMap(gates); err != nil {
		return fmt.Errorf("setting feature gates: %w", err)
	}
	defer func() {
		for name := range gates {
			_ = utilfeature.DefaultMutableFeatureGate.ResetFeatureValueToDefault(featuregate.Feature(name))
		}
	}()
	fn()
	return nil
}
