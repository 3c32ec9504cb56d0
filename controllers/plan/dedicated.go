package plan

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/validation/field"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/controllers/metrics"
	"github.com/schedops/scheduler-profile-operator/scheduler/profile"
)

// CheckDedicated renders and validates the configuration of a profile that runs its own
// scheduler, for the reconciler and the admission webhook alike. invalid is the message for the
// status, errs the same errors with their fields.
func (r *Planner) CheckDedicated(p *schedulingv1alpha1.SchedulerProfile, proc *Process) (cfg *profile.Config, invalid string, errs field.ErrorList) {
	// Render refuses the extenders' too, as one error; checked here they keep their fields.
	if errs := proc.SettingsErrors(r.Settings); len(errs) > 0 {
		return nil, errs.ToAggregate().Error(), errs
	}
	cfg, err := profile.Render(p, profile.Settings{Namespace: r.Settings.Namespace, CASecrets: proc.Secrets.WithCA})
	if err != nil {
		return nil, err.Error(), RenderErrors(err)
	}
	if len(cfg.YAML) > MaxConfigBytes {
		err := field.Invalid(field.NewPath("spec"), field.OmitValueType{}, fmt.Sprintf("the rendered configuration would be %d bytes, more than the %d a ConfigMap can hold with its metadata", len(cfg.YAML), MaxConfigBytes))
		return nil, err.Error(), field.ErrorList{err}
	}
	if errs := r.ValidateDedicated(cfg, proc); len(errs) > 0 {
		return nil, errs.ToAggregate().Error(), errs
	}
	return cfg, "", nil
}

// ValidateDedicated is profile.ValidateWithGates of a dedicated profile's configuration,
// remembered by what it reads: the configuration, the gates and the path of the gates' field
// (the registry is the binary's). A pass that meets the same configuration again (every node
// change enqueues every profile, for advice) builds no scheduler.
func (r *Planner) ValidateDedicated(cfg *profile.Config, proc *Process) field.ErrorList {
	errs, _ := r.Cache().dedicatedChecks.do(keyOf("dedicated", cfg.YAML, proc.Run.FeatureGates, proc.GatesPath().String()), func() (field.ErrorList, error) {
		r.Metrics.SchedulerBuilt(metrics.BuildDedicated)
		return profile.ValidateWithGates(cfg.YAML, proc.Run.FeatureGates, proc.GatesPath()), nil
	})
	return errs
}
