package controllers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/scheduler/profile"
)

// extenderSecrets is what a process needs of the Secrets that its extenders' tlsConfig.secretRef
// name, as read in one pass.
type extenderSecrets struct {
	// withCA are the Secrets that hold a CA bundle; the configuration points caFile at it.
	withCA sets.Set[string]
	// hash is a content hash of the Secrets' TLS keys, "" when no extender names a Secret. It
	// goes on the pod template, so that a new certificate rolls the scheduler; the configuration,
	// and so its hash and ConfigMap, stay the same.
	hash string
}

// secretKeys are the keys of an extender's Secret that the scheduler reads, in hash order.
var secretKeys = []string{profile.SecretCertKey, profile.SecretKeyKey, profile.SecretCAKey}

// readExtenderSecrets reads the Secrets that the process's extenders name into proc.secrets. It
// returns, for ConfigValid, which Secret or required key is missing: then nothing may be rolled
// out, since the scheduler would not start.
func (r *processObjects) readExtenderSecrets(ctx context.Context, proc *process) (missing string, err error) {
	proc.secrets = extenderSecrets{}
	names := profile.ExtenderSecrets(proc.extenders)
	if len(names) == 0 {
		return "", nil
	}
	proc.secrets.withCA = sets.New[string]()
	h := sha256.New()
	for _, name := range names {
		key := client.ObjectKey{Namespace: r.settings.namespace, Name: name}
		secret := &corev1.Secret{}
		if err := r.client.Get(ctx, key, secret); err != nil {
			if apierrors.IsNotFound(err) {
				return fmt.Sprintf("Secret %s, named in an extender's tlsConfig.secretRef, does not exist", key), nil
			}
			return "", fmt.Errorf("reading Secret %s: %w", key, err)
		}
		for _, k := range []string{profile.SecretCertKey, profile.SecretKeyKey} {
			if len(secret.Data[k]) == 0 {
				return fmt.Sprintf("Secret %s, named in an extender's tlsConfig.secretRef, has no key %q", key, k), nil
			}
		}
		if len(secret.Data[profile.SecretCAKey]) > 0 {
			proc.secrets.withCA.Insert(name)
		}
		// Lengths before contents keep one Secret's bytes from reading as another's.
		for _, k := range secretKeys {
			_, _ = fmt.Fprintf(h, "%s/%s:%d:", name, k, len(secret.Data[k]))
			_, _ = h.Write(secret.Data[k])
		}
	}
	proc.secrets.hash = hex.EncodeToString(h.Sum(nil))[:profile.HashLength]
	return "", nil
}

// extenderSecretVolumes mount each Secret that the process's extenders name, read-only, at
// profile.ExtenderSecretDir(name), where the rendered configuration looks for its files.
func extenderSecretVolumes(proc *process) ([]*corev1ac.VolumeApplyConfiguration, []*corev1ac.VolumeMountApplyConfiguration) {
	var volumes []*corev1ac.VolumeApplyConfiguration
	var mounts []*corev1ac.VolumeMountApplyConfiguration
	for i, name := range profile.ExtenderSecrets(proc.extenders) {
		// Secret names may be longer than a volume name can be.
		volume := fmt.Sprintf("extender-tls-%d", i)
		volumes = append(volumes, corev1ac.Volume().WithName(volume).WithSecret(corev1ac.SecretVolumeSource().WithSecretName(name)))
		mounts = append(mounts, corev1ac.VolumeMount().WithName(volume).WithMountPath(profile.ExtenderSecretDir(name)).WithReadOnly(true))
	}
	return volumes, mounts
}

// profilesNamingSecret enqueues the profiles whose scheduler calls an extender with the Secret:
// a profile's own extenders, or those of its Scheduler. A Secret that appears lets them roll out;
// a changed one rolls their scheduler.
func (r *SchedulerProfileReconciler) profilesNamingSecret(ctx context.Context, obj client.Object) []reconcile.Request {
	if obj.GetNamespace() != r.settings.namespace {
		return nil
	}
	schedulers := sets.New[string]()
	for _, req := range r.schedulerRequests(ctx, obj.GetName()) {
		schedulers.Insert(req.Name)
	}
	return r.profileRequests(ctx, func(p *schedulingv1alpha1.SchedulerProfile) bool {
		if ref := p.Spec.SchedulerRef.Name; ref != "" {
			return schedulers.Has(ref)
		}
		return slices.Contains(profile.ExtenderSecrets(p.Spec.Extenders), obj.GetName())
	})
}

// schedulersNamingSecret enqueues the Schedulers with an extender that uses the Secret.
func (r *SchedulerReconciler) schedulersNamingSecret(ctx context.Context, obj client.Object) []reconcile.Request {
	if obj.GetNamespace() != r.settings.namespace {
		return nil
	}
	return r.schedulerRequests(ctx, obj.GetName())
}

// schedulerRequests are the Schedulers with an extender that uses the named Secret.
func (r *processObjects) schedulerRequests(ctx context.Context, secret string) []reconcile.Request {
	var list schedulingv1alpha1.SchedulerList
	if err := r.client.List(ctx, &list); err != nil {
		log.FromContext(ctx).Error(err, "Listing Schedulers")
		return nil
	}
	var reqs []reconcile.Request
	for _, s := range list.Items {
		if slices.Contains(profile.ExtenderSecrets(s.Spec.Extenders), secret) {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKey{Name: s.Name}})
		}
	}
	return reqs
}

// extendersPath is where a Scheduler or a profile sets its extenders, for error messages.
var extendersPath = field.NewPath("spec", "extenders")
