// Package monitoring is the room of the operator's own monitoring objects: the ServiceMonitors of
// the operator and of its schedulers and the PrometheusRule of its alerts (config/prometheus),
// which the operator applies into its namespace itself once the cluster serves the Prometheus
// Operator's API. An install that cannot ship them (the OLM bundle: OLM fails an InstallPlan
// whose objects have no API on the cluster) turns this on with --monitoring-objects.
package monitoring

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"io"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/controllers/plan"
	"github.com/schedops/scheduler-profile-operator/scheduler/profile"
)

// The operator applies its ServiceMonitors and PrometheusRule in its namespace.
// +kubebuilder:rbac:groups=monitoring.coreos.com,namespace=scheduler-profile-operator-system,resources=servicemonitors;prometheusrules,verbs=get;create;patch

// objectsYAML is config/prometheus as config/manifests/monitoring names and labels it (make
// bundle writes it): the objects without a namespace.
//
//go:embed objects.yaml
var objectsYAML []byte

// apis are the Prometheus Operator's APIs the objects need.
func apis() []profile.GateAPI {
	return []profile.GateAPI{
		{GroupVersion: "monitoring.coreos.com/v1", Resource: "servicemonitors"},
		{GroupVersion: "monitoring.coreos.com/v1", Resource: "prometheusrules"},
	}
}

// Recheck is how often the operator asks again whether the cluster serves the API, until it does.
const Recheck = time.Minute

// Objects applies the monitoring objects into Namespace once APIs says that the cluster serves
// their API, asking again every Recheck (0 is the package's Recheck) until it does; after they
// are applied it is done. Only the leader applies.
type Objects struct {
	Client    client.Client
	APIs      *plan.ServedAPIs
	Namespace string
	Recheck   time.Duration
}

// NeedLeaderElection is true: only the leader applies.
func (o *Objects) NeedLeaderElection() bool { return true }

// Start applies the objects once their API is served, and returns when they are applied or ctx
// ends.
func (o *Objects) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName("monitoring")
	every := o.Recheck
	if every <= 0 {
		every = Recheck
	}
	for {
		applied, err := o.applyIfServed(ctx)
		switch {
		case err != nil:
			logger.Error(err, "Applying the monitoring objects")
		case applied:
			logger.Info("Applied the ServiceMonitors and the PrometheusRule", "namespace", o.Namespace)
			return nil
		default:
			logger.V(1).Info("The cluster does not serve monitoring.coreos.com/v1 yet; asking again later", "after", every)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(every):
		}
	}
}

// applyIfServed applies the objects when the cluster serves their API, and tells whether it did.
func (o *Objects) applyIfServed(ctx context.Context) (bool, error) {
	for _, api := range apis() {
		served, err := o.APIs.ServesIfAsked(api)
		if err != nil || !served {
			return false, err
		}
	}
	objs, err := Manifests(o.Namespace)
	if err != nil {
		return false, err
	}
	for _, u := range objs {
		if err := o.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(schedulingv1alpha1.FieldManager), client.ForceOwnership); err != nil {
			return false, fmt.Errorf("applying %s %s: %w", u.GetKind(), u.GetName(), err)
		}
	}
	return true, nil
}

// Manifests are the monitoring objects in namespace.
func Manifests(namespace string) ([]*unstructured.Unstructured, error) {
	var out []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(objectsYAML), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, fmt.Errorf("decoding the embedded monitoring objects: %w", err)
		}
		if len(u.Object) == 0 {
			continue
		}
		u.SetNamespace(namespace)
		out = append(out, u)
	}
}
