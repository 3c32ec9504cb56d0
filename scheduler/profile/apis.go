package profile

import (
	"maps"
	"slices"
	"sync"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
)

// GateAPI is an API that kube-scheduler watches when a feature gate is on, and that an apiserver
// can be without: an informer on a resource the cluster does not serve never syncs, and a
// scheduler waits for every informer before it schedules anything.
type GateAPI struct {
	// GroupVersion is the API's group and version, as discovery names it.
	GroupVersion string
	// Resource is the watched resource.
	Resource string
	// Serve is how a kube-apiserver serves it, for the message of a refusal.
	Serve string
}

// GateAPIs maps each Kubernetes 1.37 feature gate that makes kube-scheduler watch an API that
// can be switched off to that API. TestGateAPIsMatchInformers builds the scheduler with each gate
// of the process-wide gate on and off and compares the resources its informers start with this
// table, so a gate that a Kubernetes bump adds fails that test instead of hanging a scheduler.
var GateAPIs = map[string][]GateAPI{
	"GenericWorkload": {{
		GroupVersion: "scheduling.k8s.io/v1beta1",
		Resource:     "podgroups",
		Serve:        "kube-apiserver --feature-gates=GenericWorkload=true --runtime-config=scheduling.k8s.io/v1beta1=true",
	}},
	"CompositePodGroup": {{
		GroupVersion: "scheduling.k8s.io/v1alpha3",
		Resource:     "compositepodgroups",
		Serve:        "kube-apiserver --feature-gates=GenericWorkload=true,CompositePodGroup=true --runtime-config=scheduling.k8s.io/v1alpha3=true",
	}},
	// On by default: a cluster that switched the resource off (--runtime-config) needs the gate
	// set to false on the scheduler.
	"DRADeviceTaintRules": {{
		GroupVersion: "resource.k8s.io/v1",
		Resource:     "devicetaintrules",
		Serve:        "kube-apiserver --runtime-config=resource.k8s.io/v1/devicetaintrules=true",
	}},
}

// GateRequirement is an API that a scheduler with given feature gates needs.
type GateRequirement struct {
	// Gate is the feature gate that makes the scheduler watch API.
	Gate string
	// ByDefault tells that the gate is on because it is on by default, not because it was set.
	ByDefault bool
	API       GateAPI
}

// gateDefaults are the defaults of the GateAPIs gates in kube-scheduler's feature gate, read
// once: the process-wide gate is changed for the time of a validation (withGates).
var gateDefaults = sync.OnceValue(func() map[string]bool {
	all := utilfeature.DefaultMutableFeatureGate.GetAll()
	out := map[string]bool{}
	for name := range GateAPIs {
		for feature, spec := range all {
			if string(feature) == name {
				out[name] = spec.Default
			}
		}
	}
	return out
})

// RequiredAPIs are the APIs that a scheduler run with --feature-gates from gates watches, in the
// order of the gates' names: those of every GateAPIs gate that gates turn on, or that is on by
// default and gates do not turn off.
func RequiredAPIs(gates map[string]bool) []GateRequirement {
	var out []GateRequirement
	for _, gate := range slices.Sorted(maps.Keys(GateAPIs)) {
		on, set := gates[gate]
		if !set {
			on = gateDefaults()[gate]
		}
		if !on {
			continue
		}
		for _, api := range GateAPIs[gate] {
			out = append(out, GateRequirement{Gate: gate, ByDefault: !set, API: api})
		}
	}
	return out
}
