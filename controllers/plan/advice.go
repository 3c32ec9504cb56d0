package plan

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/scheduler/advice"
)

// ProfileAdvice is the advice on a profile whose configuration is valid, rendered as the one
// profile of its process (its own, or its Scheduler's, with the Scheduler's extenders and feature
// gates), on the cluster. The reconciler and the webhook call it alike. The profiles the checks
// read (advice.Load: the framework built from the configuration) are remembered by
// configuration and gates: a pass with the same configuration builds no framework, and a change
// of the nodes or PriorityClasses only runs the checks again.
func (r *Planner) ProfileAdvice(p *schedulingv1alpha1.SchedulerProfile, proc *Process, cluster *advice.Cluster) ([]advice.Advice, error) {
	_, cfg, err := r.RenderAlone(p, proc)
	if err != nil {
		return nil, err
	}
	loaded, err := r.Cache().adviceProfiles.do(keyOf("advice", cfg.YAML, proc.Run.FeatureGates), func() (*advice.Profile, error) {
		return advice.Load(cfg.YAML, proc.Run.FeatureGates)
	})
	if err != nil {
		return nil, err
	}
	return advice.Run(advice.InputOf(loaded, cluster, p), advice.Ignored(p.Annotations)), nil
}

// ReadCluster is what the cluster checks read, from the manager's cache: the nodes' names and
// labels, and the PriorityClasses' names and preemption policies, each sorted by name, so that
// the messages do not depend on the cache's order.
func ReadCluster(ctx context.Context, c client.Reader) (*advice.Cluster, error) {
	nodes := &metav1.PartialObjectMetadataList{}
	nodes.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("NodeList"))
	if err := c.List(ctx, nodes); err != nil {
		return nil, fmt.Errorf("listing the nodes: %w", err)
	}
	var classes schedulingv1.PriorityClassList
	if err := c.List(ctx, &classes); err != nil {
		return nil, fmt.Errorf("listing the PriorityClasses: %w", err)
	}
	out := &advice.Cluster{}
	for _, n := range nodes.Items {
		out.Nodes = append(out.Nodes, corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: n.Labels}})
	}
	for _, pc := range classes.Items {
		out.PriorityClasses = append(out.PriorityClasses, schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: pc.Name}, PreemptionPolicy: pc.PreemptionPolicy})
	}
	slices.SortFunc(out.Nodes, func(a, b corev1.Node) int { return strings.Compare(a.Name, b.Name) })
	slices.SortFunc(out.PriorityClasses, func(a, b schedulingv1.PriorityClass) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// AdviceWarnings are the webhook's warnings of the advice on a profile whose configuration is
// valid; advice that cannot be worked out is one warning too, and never a refusal.
func (r *Planner) AdviceWarnings(ctx context.Context, p *schedulingv1alpha1.SchedulerProfile, proc *Process) []string {
	cluster, err := ReadCluster(ctx, r.Reader)
	var found []advice.Advice
	if err == nil {
		found, err = r.ProfileAdvice(p, proc, cluster)
	}
	if err != nil {
		return []string{"the profile's advice (docs/reference/advice.md) could not be worked out: " + err.Error()}
	}
	warnings := make([]string, 0, len(found))
	for _, a := range found {
		warnings = append(warnings, a.String())
	}
	return warnings
}
