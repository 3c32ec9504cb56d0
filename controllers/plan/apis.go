package plan

import (
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/discovery"

	"github.com/schedops/scheduler-profile-operator/scheduler/profile"
)

// APIRecheck is how often a refusal for a missing API is checked again: an API can be turned on
// later, without any change to the profile.
const APIRecheck = time.Minute

// ServedAPIs answers, through the apiserver's discovery, whether the cluster serves the APIs that
// feature gates need. An API that is served is remembered: it does not go away under a running
// scheduler, and asking on every reconcile of a process with gates would send a request each
// time. One that is not served is asked again each time (every APIRecheck).
type ServedAPIs struct {
	discovery discovery.ServerResourcesInterface
	// served holds the profile.GateAPIs found served.
	served sync.Map
}

// NewServedAPIs returns the APIs that d serves; nil (no checks) for a nil d.
func NewServedAPIs(d discovery.ServerResourcesInterface) *ServedAPIs {
	if d == nil {
		return nil
	}
	return &ServedAPIs{discovery: d}
}

// Missing describes the first API that the scheduler's gates (profile.RequiredAPIs: those set
// on, and those on by default) need and the cluster does not serve; "" when all are served (or
// nothing can be asked). A scheduler started without it waits for its caches forever and never
// schedules anything.
func (s *ServedAPIs) Missing(gates map[string]bool) (string, error) {
	req, err := s.FirstMissing(gates)
	if err != nil || req == nil {
		return "", err
	}
	return APIMissingMessage(*req, ", so nothing is rolled out"), nil
}

// FirstMissing is the first requirement of the gates whose API the cluster does not serve; nil
// when all are served (or nothing can be asked).
func (s *ServedAPIs) FirstMissing(gates map[string]bool) (*profile.GateRequirement, error) {
	if s == nil {
		return nil, nil
	}
	for _, req := range profile.RequiredAPIs(gates) {
		served, err := s.serves(req.API)
		if err != nil {
			return nil, err
		}
		if !served {
			return &req, nil
		}
	}
	return nil, nil
}

// APIMissingMessage says which API a gate needs and how to serve it; consequence ends the
// sentence about the scheduler's caches, and a gate on by default says how to turn it off.
func APIMissingMessage(req profile.GateRequirement, consequence string) string {
	msg := fmt.Sprintf("feature gate %s needs the API %s %s, which the cluster does not serve (%s serves it); the scheduler would never sync its caches%s",
		req.Gate, req.API.GroupVersion, req.API.Resource, req.API.Serve, consequence)
	if req.ByDefault {
		msg += fmt.Sprintf("; the gate is on by default: set featureGates %s: false to run without the API", req.Gate)
	}
	return msg
}

// ServesIfAsked is serves, false when nothing can be asked (a nil s).
func (s *ServedAPIs) ServesIfAsked(api profile.GateAPI) (bool, error) {
	if s == nil {
		return false, nil
	}
	return s.serves(api)
}

func (s *ServedAPIs) serves(api profile.GateAPI) (bool, error) {
	if _, ok := s.served.Load(api); ok {
		return true, nil
	}
	list, err := s.discovery.ServerResourcesForGroupVersion(api.GroupVersion)
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("discovering %s: %w", api.GroupVersion, err)
	}
	for _, r := range list.APIResources {
		if r.Name == api.Resource {
			s.served.Store(api, true)
			return true, nil
		}
	}
	return false, nil
}

// Recheck is when to reconcile again: for a rollout's deadline, or, while waiting for the
// cluster (a missing API, an apiserver older than the scheduler), to look at it again.
func Recheck(rollout time.Duration, waitingForCluster bool) time.Duration {
	if waitingForCluster && (rollout == 0 || rollout > APIRecheck) {
		return APIRecheck
	}
	return rollout
}
