package core

import (
	"context"
	"maps"
	"strings"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/controllers/internal/bound"
	"github.com/schedops/scheduler-profile-operator/controllers/metrics"
	"github.com/schedops/scheduler-profile-operator/controllers/plan"
	"github.com/schedops/scheduler-profile-operator/scheduler/advice"
)

// The cluster checks of advice read the nodes' labels (as metadata only) and the PriorityClasses.
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch
// +kubebuilder:rbac:groups=scheduling.k8s.io,resources=priorityclasses,verbs=get;list;watch

// maxAdviceEntries bounds status.advice, as the CRD does.
const maxAdviceEntries = 64

// maxAdviceMessage bounds a message of status.advice, as the CRD does.
const maxAdviceMessage = 1024

// clusterView is what the cluster checks read, read from the cache once per change of it: every
// node change enqueues every profile, and each pass would otherwise list and sort every node again.
// Safe for concurrent use; the zero value reads on its first use.
type clusterView struct {
	// changes counts the changes seen (changed); read is the count the cached view was read at.
	changes atomic.Uint64
	mu      sync.Mutex
	read    uint64
	cluster *advice.Cluster
}

// changed records a change of the nodes or PriorityClasses: the next get reads them again.
func (v *clusterView) changed() { v.changes.Add(1) }

// get is the view as of the latest change seen, read from c when it is older.
func (v *clusterView) get(ctx context.Context, c client.Reader) (*advice.Cluster, error) {
	v.mu.Lock()
	defer v.mu.Unlock()
	now := v.changes.Load()
	if v.cluster != nil && v.read == now {
		return v.cluster, nil
	}
	cluster, err := plan.ReadCluster(ctx, c)
	if err != nil {
		return nil, err
	}
	v.cluster, v.read = cluster, now
	return cluster, nil
}

// observeAdvice runs the profile doctor on a profile whose configuration is valid. Advice never
// stops a pass: when it cannot be worked out, the status says so and the pass goes on.
func (r *SchedulerProfileReconciler) observeAdvice(ctx context.Context, p *schedulingv1alpha1.SchedulerProfile, proc *plan.Process, obs *observation) {
	cluster, err := r.cluster.get(ctx, r.client)
	if err == nil {
		obs.advice, err = r.ProfileAdvice(p, proc, cluster)
	}
	if err != nil {
		obs.adviceFailed = err.Error()
		return
	}
	obs.adviceChecked = true
}

// setAdvisoryCondition sets the Advisory condition and status.advice: the findings on a valid
// configuration, none for a configuration that is refused, and as they were when the pass ended
// before it knew.
func setAdvisoryCondition(p *schedulingv1alpha1.SchedulerProfile, obs *observation) {
	switch {
	case obs.adviceChecked && len(obs.advice) > 0:
		p.Status.Advice = adviceEntries(obs.advice)
		setCondition(p, schedulingv1alpha1.ConditionAdvisory, metav1.ConditionTrue, schedulingv1alpha1.ReasonAdviceFound,
			"the profile will probably not do what was meant ("+strings.Join(advice.Codes(obs.advice), ", ")+"): status.advice lists the findings, docs/reference/advice.md the fixes")
	case obs.adviceChecked:
		p.Status.Advice = nil
		setCondition(p, schedulingv1alpha1.ConditionAdvisory, metav1.ConditionFalse, schedulingv1alpha1.ReasonNoAdvice, "no check of the profile doctor found anything")
	case obs.adviceFailed != "":
		p.Status.Advice = nil
		setCondition(p, schedulingv1alpha1.ConditionAdvisory, metav1.ConditionUnknown, schedulingv1alpha1.ReasonAdviceNotChecked, "the advice could not be worked out: "+obs.adviceFailed)
	case refused(obs):
		p.Status.Advice = nil
		setCondition(p, schedulingv1alpha1.ConditionAdvisory, metav1.ConditionUnknown, schedulingv1alpha1.ReasonAdviceNotChecked, "the latest spec has no valid configuration to check (see ConfigValid)")
	}
}

// refused tells whether the pass found the latest spec refused, or without its Scheduler.
func refused(obs *observation) bool {
	return obs.conflictWith != "" || obs.invalid != "" || obs.secret.Refused() || obs.queueSortConflict != "" ||
		obs.limit.Reason != "" || obs.schedulerMissing
}

// adviceEntries are the findings as status.advice holds them, within the CRD's bounds.
func adviceEntries(found []advice.Advice) []schedulingv1alpha1.AdviceEntry {
	out := make([]schedulingv1alpha1.AdviceEntry, 0, min(len(found), maxAdviceEntries))
	for _, a := range found[:min(len(found), maxAdviceEntries)] {
		out = append(out, schedulingv1alpha1.AdviceEntry{Code: a.Code, Message: bound.String(a.Message, maxAdviceMessage)})
	}
	return out
}

// watchCluster enqueues every profile when what the cluster checks read changes: a node comes or
// goes or its labels change (its metadata only is watched and cached), a PriorityClass comes, goes
// or changes. The previewer hears of it too: what previews read changed.
func (r *SchedulerProfileReconciler) watchCluster(b *builder.Builder) *builder.Builder {
	node := &metav1.PartialObjectMetadata{}
	node.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Node"))
	all := handler.EnqueueRequestsFromMapFunc(func(ctx context.Context, _ client.Object) []reconcile.Request {
		// The checks read the cluster anew, once; a refused or incomplete preview may come out
		// otherwise on the changed cluster.
		r.cluster.changed()
		r.Previews.ClusterChanged()
		return r.profileRequests(ctx, nil)
	})
	return b.WatchesMetadata(node, all, builder.WithPredicates(nodeLabelsChanged)).
		Watches(&schedulingv1.PriorityClass{}, all)
}

// nodeLabelsChanged passes a node's create and delete, and its updates that change its labels:
// not the status updates a node makes every few seconds.
var nodeLabelsChanged = predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
	return !maps.Equal(e.ObjectOld.GetLabels(), e.ObjectNew.GetLabels())
}}

// recordAdviceMetrics exports the number of findings of each code in a profile's status.
func recordAdviceMetrics(m *metrics.Metrics, p *schedulingv1alpha1.SchedulerProfile) {
	counts := map[string]int{}
	for _, a := range p.Status.Advice {
		counts[a.Code]++
	}
	m.Advice(p.Name, counts)
}
