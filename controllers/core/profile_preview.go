package core

import (
	"context"
	"slices"
	"strconv"
	"strings"

	"github.com/schedops/scheduler-profile-operator/controllers/plan"
	"github.com/schedops/scheduler-profile-operator/controllers/preview"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/internal/simulate"
	"github.com/schedops/scheduler-profile-operator/scheduler/profile"
)

// preview asks for the preview of a dedicated profile's change from the configuration its
// Deployment d runs to cfg, and says whether the rollout waits for it.
func (r *SchedulerProfileReconciler) preview(ctx context.Context, p *schedulingv1alpha1.SchedulerProfile, proc *plan.Process, cfg *profile.Config, d *appsv1.Deployment) (preview.Gate, error) {
	s := p.Spec.Rollout.Preview
	if r.Previews == nil || preview.Mode(s) == schedulingv1alpha1.PreviewOff {
		return preview.Gate{}, nil
	}
	running, err := r.RunningConfig(ctx, proc, d)
	if err != nil {
		return preview.Gate{}, err
	}
	req := preview.Request{
		Name: p.Name, Key: preview.Key{UID: p.UID, To: cfg.Hash, ToGates: preview.GatesKey(proc.Run.FeatureGates)}, SchedulerNames: []string{cfg.SchedulerName},
		Next: simulate.Profile{Name: cfg.Hash, Config: cfg.YAML, FeatureGates: proc.Run.FeatureGates},
	}
	if running != nil {
		gates := runningGates(d)
		req.Key.From, req.Key.FromGates = d.Spec.Template.Annotations[schedulingv1alpha1.AnnotationConfigHash], preview.GatesKey(gates)
		if !req.Key.Changes() {
			return preview.Gate{}, nil
		}
		data := []byte(running.Data[plan.ConfigFileKey])
		req.Running = &simulate.Profile{Name: req.Key.From, Config: data, FeatureGates: gates}
		req.SchedulerNames = servedNamesOfConfig(data, req.SchedulerNames)
	}
	return r.Previews.Ask(req, s), nil
}

// servedNamesOfConfig adds to names the scheduler names that the configuration data serves, once
// each: the pods of a name the running configuration serves are part of a preview's workload.
// A configuration that does not decode (not expected of one that runs) adds none.
func servedNamesOfConfig(data []byte, names []string) []string {
	cfg, err := profile.DecodeConfig(data)
	if err != nil {
		return names
	}
	for _, prof := range cfg.Profiles {
		if !slices.Contains(names, prof.SchedulerName) {
			names = append(names, prof.SchedulerName)
		}
	}
	return names
}

// runningGates are the feature gates of the scheduler container of d, from its --feature-gates.
func runningGates(d *appsv1.Deployment) map[string]bool {
	for _, c := range d.Spec.Template.Spec.Containers {
		for _, a := range c.Args {
			v, ok := strings.CutPrefix(a, "--feature-gates=")
			if !ok {
				continue
			}
			gates := map[string]bool{}
			for _, kv := range strings.Split(v, ",") {
				name, val, _ := strings.Cut(kv, "=")
				if b, err := strconv.ParseBool(val); err == nil {
					gates[name] = b
				}
			}
			return gates
		}
	}
	return nil
}

// setPreviewStatus writes the latest preview of the profile, if one finished since the operator
// started; otherwise the status keeps the one it has.
func setPreviewStatus(p *schedulingv1alpha1.SchedulerProfile, obs *observation) {
	if obs.previewed != nil {
		p.Status.Preview = *obs.previewed
	}
}

// previewProgress is the Progressing condition of a change that its preview holds.
func previewProgress(g preview.Gate, status metav1.ConditionStatus, reason, message string) (metav1.ConditionStatus, string, string) {
	if !g.Held() {
		return status, reason, message
	}
	return metav1.ConditionFalse, g.Reason, g.Message
}

// recordPreviewEvent sums up a new preview in an event: a warning when the new configuration
// leaves more pods unschedulable, or the preview decided nothing.
func (r *SchedulerProfileReconciler) recordPreviewEvent(before, after *schedulingv1alpha1.SchedulerProfile) {
	b, a := before.Status.Preview, after.Status.Preview
	if a.StartTime.IsZero() || (a.StartTime.Equal(&b.StartTime) && a.To.ConfigHash == b.To.ConfigHash) {
		return
	}
	eventType := "Normal"
	if a.Failure != "" || preview.RanOut(a.Incomplete) || a.To.Unschedulable > a.From.Unschedulable {
		eventType = "Warning"
	}
	r.recorder.Eventf(after, nil, eventType, eventReasonPreview, actionRollout, "%s", preview.Summary(a))
}
