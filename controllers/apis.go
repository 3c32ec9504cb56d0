package controllers

import (
	"fmt"
	"maps"
	"slices"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/discovery"
)

// requiredAPI is an API that a scheduler needs when a feature gate is on, and how an apiserver
// is made to serve it.
type requiredAPI struct {
	groupVersion, resource, flags string
}

// requiredAPIs are the APIs that gates need: a scheduler started with GenericWorkload against an
// apiserver without scheduling.k8s.io/v1beta1 podgroups waits for its caches forever and never
// schedules anything, gang or not.
var requiredAPIs = map[string]requiredAPI{
	"GenericWorkload": {
		groupVersion: "scheduling.k8s.io/v1beta1",
		resource:     "podgroups",
		flags:        "kube-apiserver --feature-gates=GenericWorkload=true --runtime-config=scheduling.k8s.io/v1beta1=true",
	},
}

// apiRecheck is how often a refusal for a missing API is checked again: an API can be turned on
// later, without any change to the profile.
const apiRecheck = time.Minute

// missingAPI asks the apiserver's discovery for the APIs the enabled gates need, and describes the
// first one it does not serve; "" when all are served (or nothing can be asked).
func missingAPI(d discovery.ServerResourcesInterface, gates map[string]bool) (string, error) {
	if d == nil {
		return "", nil
	}
	for _, gate := range slices.Sorted(maps.Keys(gates)) {
		api, ok := requiredAPIs[gate]
		if !ok || !gates[gate] {
			continue
		}
		served, err := serves(d, api)
		if err != nil {
			return "", err
		}
		if !served {
			return fmt.Sprintf("feature gate %s needs the API %s %s, which the cluster does not serve (%s serves it); the scheduler would never sync its caches, so nothing is rolled out",
				gate, api.groupVersion, api.resource, api.flags), nil
		}
	}
	return "", nil
}

func serves(d discovery.ServerResourcesInterface, api requiredAPI) (bool, error) {
	list, err := d.ServerResourcesForGroupVersion(api.groupVersion)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("discovering %s: %w", api.groupVersion, err)
	}
	for _, r := range list.APIResources {
		if r.Name == api.resource {
			return true, nil
		}
	}
	return false, nil
}

// recheck is when to reconcile again: for a rollout's deadline, or to look for a missing API.
func recheck(rollout time.Duration, apiMissing string) time.Duration {
	if apiMissing != "" && (rollout == 0 || rollout > apiRecheck) {
		return apiRecheck
	}
	return rollout
}
