package admission

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/schedops/scheduler-profile-operator/controllers/plan"
	"github.com/schedops/scheduler-profile-operator/scheduler/profile"
)

// clusterErrors are the admission checks of what a process takes from the cluster: the Secrets
// its extenders name (consent to this process, pair, CA, and a CA for HTTPS) and the APIs its
// feature gates need, refused with their fields as the reconcilers refuse them before a
// rollout. Both can change after admission, so the reconcilers check them again on every pass.
// A Secret that does not exist yet is only a warning: it may be created after the object that
// names it.
func (r *Reviewer) clusterErrors(ctx context.Context, proc *plan.Process) (field.ErrorList, []string, error) {
	errs, warnings, err := r.extenderSecretErrors(ctx, proc)
	if err != nil {
		return nil, nil, err
	}
	req, err := r.APIs.FirstMissing(proc.Run.FeatureGates)
	if err != nil {
		return nil, nil, err
	}
	if req != nil {
		path := proc.GatesPath()
		if !req.ByDefault {
			path = path.Child(req.Gate)
		}
		errs = append(errs, field.Invalid(path, field.OmitValueType{}, plan.APIMissingMessage(*req, "")))
	}
	return errs, warnings, nil
}

// extenderSecretErrors reads the Secrets that the process's extenders name and refuses, at the
// extender's secretRef, those that plan.CheckExtenderSecret refuses, then an HTTPS extender left
// without a CA (plan.UnverifiedHTTPS) once every Secret was read.
func (r *Reviewer) extenderSecretErrors(ctx context.Context, proc *plan.Process) (field.ErrorList, []string, error) {
	var errs field.ErrorList
	var warnings []string
	withCA := sets.New[string]()
	allRead := true
	for i, e := range proc.Extenders {
		if e.TLSConfig == nil || e.TLSConfig.SecretRef.Name == "" {
			continue
		}
		path := plan.ExtendersPath.Index(i).Child("tlsConfig", "secretRef", "name")
		key := client.ObjectKey{Namespace: r.Settings.Namespace, Name: e.TLSConfig.SecretRef.Name}
		secret := &corev1.Secret{}
		if err := r.Reader.Get(ctx, key, secret); err != nil {
			if !apierrors.IsNotFound(err) {
				return nil, nil, fmt.Errorf("reading Secret %s: %w", key, err)
			}
			allRead = false
			warnings = append(warnings, fmt.Sprintf("%s: Secret %s does not exist; nothing is rolled out until it does", path, key))
			continue
		}
		if refusal := plan.CheckExtenderSecret(key, secret, proc.SecretUser()); refusal.Refused() {
			errs = append(errs, field.Invalid(path, key.Name, refusal.Message))
			continue
		}
		if len(secret.Data[profile.SecretCAKey]) > 0 {
			withCA.Insert(key.Name)
		}
	}
	if len(errs) > 0 || !allRead {
		return errs, warnings, nil
	}
	if i, refusal := plan.UnverifiedHTTPS(proc.Extenders, withCA, r.Settings.Namespace); refusal.Refused() {
		errs = append(errs, field.Invalid(plan.ExtendersPath.Index(i).Child("tlsConfig", "secretRef", "name"), proc.Extenders[i].TLSConfig.SecretRef.Name, refusal.Message))
	}
	return errs, warnings, nil
}
