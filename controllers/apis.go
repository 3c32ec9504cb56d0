package controllers

import (
	"fmt"
	"maps"
	"slices"
	"sync"
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

// servedAPIs answers, through the apiserver's discovery, whether the cluster serves the APIs that
// feature gates need. An API that is served is remembered: it does not go away under a running
// scheduler, and asking on every reconcile of a process with gates would send a request each
// time. One that is not served is asked again each time (every apiRecheck).
type servedAPIs struct {
	discovery discovery.ServerResourcesInterface
	// served holds the requiredAPIs found served.
	served sync.Map
}

// newServedAPIs returns the APIs that d serves; nil (no checks) for a nil d.
func newServedAPIs(d discovery.ServerResourcesInterface) *servedAPIs {
	if d == nil {
		return nil
	}
	return &servedAPIs{discovery: d}
}

// missing describes the first API that the enabled gates need and the cluster does not serve;
// "" when all are served (or nothing can be asked).
func (s *servedAPIs) missing(gates map[string]bool) (string, error) {
	if s == nil {
		return "", nil
	}
	for _, gate := range slices.Sorted(maps.Keys(gates)) {
		api, ok := requiredAPIs[gate]
		if !ok || !gates[gate] {
			continue
		}
		served, err := s.serves(api)
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

func (s *servedAPIs) serves(api requiredAPI) (bool, error) {
	if _, ok := s.served.Load(api); ok {
		return true, nil
	}
	list, err := s.discovery.ServerResourcesForGroupVersion(api.groupVersion)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("discovering %s: %w", api.groupVersion, err)
	}
	for _, r := range list.APIResources {
		if r.Name == api.resource {
			s.served.Store(api, true)
			return true, nil
		}
	}
	return false, nil
}

// recheck is when to reconcile again: for a rollout's deadline, or, while waiting for the
// cluster (a missing API, an apiserver older than the scheduler), to look at it again.
func recheck(rollout time.Duration, waitingForCluster bool) time.Duration {
	if waitingForCluster && (rollout == 0 || rollout > apiRecheck) {
		return apiRecheck
	}
	return rollout
}
