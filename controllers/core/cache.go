package core

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/controllers/deploy"
	"github.com/schedops/scheduler-profile-operator/controllers/plan"
)

// CacheOptions keep the manager's cache to what the operator manages: namespaced objects of the
// operator's namespace (Secrets, the extenders' client certificates, from there only; and the
// authentication-reader RoleBindings in kube-system), and only
// objects carrying the operator's managed-by label, so that its memory does not grow with the
// cluster's ConfigMaps, ReplicaSets or ClusterRoleBindings; of the Namespaces, only those that
// assign their pods to a scheduler name.
func CacheOptions(namespace string) cache.Options {
	managed := labels.SelectorFromSet(labels.Set{plan.LabelManagedBy: schedulingv1alpha1.FieldManager})
	inNamespace := map[string]cache.Config{namespace: {}}
	byObject := map[client.Object]cache.ByObject{
		&rbacv1.ClusterRoleBinding{}: {Label: managed},
		&rbacv1.RoleBinding{}:        {Label: managed, Namespaces: map[string]cache.Config{namespace: {}, deploy.AuthReaderNamespace: {}}},
	}
	// The admission policies of namespace assignment, which the operator keeps.
	for _, obj := range []client.Object{&admissionregistrationv1.MutatingAdmissionPolicy{}, &admissionregistrationv1.MutatingAdmissionPolicyBinding{},
		&admissionregistrationv1.ValidatingAdmissionPolicy{}, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}} {
		byObject[obj] = cache.ByObject{Label: managed}
	}
	for _, obj := range []client.Object{&corev1.ConfigMap{}, &corev1.ServiceAccount{}, &corev1.Service{}, &appsv1.Deployment{}, &policyv1.PodDisruptionBudget{}, &rbacv1.Role{}} {
		byObject[obj] = cache.ByObject{Label: managed}
	}
	// The objects the operator never applies are cached without their managed fields: only the
	// applied ones need theirs, to extract what the operator owns (apply). Without them, every
	// read of a profile copies less, and the cache holds less for the collector to scan.
	for _, obj := range []client.Object{&appsv1.ReplicaSet{}, &corev1.Pod{}} {
		byObject[obj] = cache.ByObject{Label: managed, Transform: cache.TransformStripManagedFields()}
	}
	for _, obj := range []client.Object{&schedulingv1alpha1.SchedulerProfile{}, &schedulingv1alpha1.Scheduler{}} {
		byObject[obj] = cache.ByObject{Transform: cache.TransformStripManagedFields()}
	}
	// Only the Namespaces that assign their pods, which status.assignedNamespaces counts.
	byObject[&corev1.Namespace{}] = cache.ByObject{Label: assignedNamespaces(), Transform: cache.TransformStripManagedFields()}
	return cache.Options{DefaultNamespaces: inNamespace, ByObject: byObject}
}
