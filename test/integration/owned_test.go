package integration

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
)

// Keys of the objects a profile owns, by what they are for.
const (
	objServiceAccount         = "ServiceAccount"
	objKubeSchedulerBinding   = "ClusterRoleBinding kube-scheduler"
	objVolumeSchedulerBinding = "ClusterRoleBinding volume-scheduler"
	objAuthReaderBinding      = "RoleBinding authentication-reader"
	objLeaseRole              = "Role lease"
	objLeaseRoleBinding       = "RoleBinding lease"
	objConfigMap              = "ConfigMap"
	objService                = "Service"
	objDeployment             = "Deployment"
)

// ownedKeys returns empty objects with the names of the objects a profile owns: those fixed by
// the operator's naming scheme, and the ConfigMap configMap. The authentication-reader binding
// in kube-system is found by its profile label instead (fetchOwned).
func ownedKeys(p *schedulingv1alpha1.SchedulerProfile, configMap string) map[string]client.Object {
	inNS := func(name string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: operatorNamespace, Name: name}
	}
	return map[string]client.Object{
		objServiceAccount:         &corev1.ServiceAccount{ObjectMeta: inNS(p.Name + "-scheduler")},
		objKubeSchedulerBinding:   &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "scheduler-profile-operator:" + p.Name + ":kube-scheduler"}},
		objVolumeSchedulerBinding: &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "scheduler-profile-operator:" + p.Name + ":volume-scheduler"}},
		objLeaseRole:              &rbacv1.Role{ObjectMeta: inNS(p.Name + "-scheduler-lease")},
		objLeaseRoleBinding:       &rbacv1.RoleBinding{ObjectMeta: inNS(p.Name + "-scheduler-lease")},
		objConfigMap:              &corev1.ConfigMap{ObjectMeta: inNS(configMap)},
		objService:                &corev1.Service{ObjectMeta: inNS("metrics-" + p.Name + "-scheduler")},
		objDeployment:             &appsv1.Deployment{ObjectMeta: inNS(p.Name + "-scheduler")},
	}
}

// fetchOwned reads every object profile p owns, with the ConfigMap configMap, through reader
// (the apiserver or a cache). The error names the first object that is missing.
func fetchOwned(ctx context.Context, reader client.Reader, p *schedulingv1alpha1.SchedulerProfile, configMap string) (map[string]client.Object, error) {
	objs := ownedKeys(p, configMap)
	for _, what := range slices.Sorted(maps.Keys(objs)) {
		obj := objs[what]
		if err := reader.Get(ctx, client.ObjectKeyFromObject(obj), obj); err != nil {
			return nil, fmt.Errorf("%s %s: %w", what, client.ObjectKeyFromObject(obj), err)
		}
	}
	var rbs rbacv1.RoleBindingList
	if err := reader.List(ctx, &rbs, client.InNamespace("kube-system"), client.MatchingLabels{schedulingv1alpha1.LabelProfile: p.Name}); err != nil {
		return nil, fmt.Errorf("listing RoleBindings in kube-system: %w", err)
	}
	if len(rbs.Items) != 1 {
		var names []string
		for _, rb := range rbs.Items {
			names = append(names, rb.Name)
		}
		return nil, fmt.Errorf("%d RoleBindings of the profile in kube-system, want 1 %v", len(rbs.Items), names)
	}
	objs[objAuthReaderBinding] = &rbs.Items[0]
	return objs, nil
}

// waitForOwned waits until every object of the profile exists and returns them.
func (k *cluster) waitForOwned(t *testing.T, p *schedulingv1alpha1.SchedulerProfile, configMap string) map[string]client.Object {
	t.Helper()
	var objs map[string]client.Object
	testutil.Eventually(t, reconcileTimeout, "the objects of "+p.Name, func(ctx context.Context) error {
		var err error
		objs, err = fetchOwned(ctx, k.admin, p, configMap)
		return err
	})
	return objs
}

// resourceVersions maps each object to its resourceVersion.
func resourceVersions(objs map[string]client.Object) map[string]string {
	rvs := map[string]string{}
	for what, obj := range objs {
		rvs[what] = obj.GetResourceVersion()
	}
	return rvs
}

// waitForCache waits until reader (a manager's cache) holds the same resourceVersion of the
// profile and of every object it owns as the apiserver: then a pass through the cache reads
// exactly what is stored.
func (k *cluster) waitForCache(t *testing.T, reader client.Reader, name string) {
	t.Helper()
	testutil.Eventually(t, reconcileTimeout, "the cache to catch up with "+name, func(ctx context.Context) error {
		live, err := k.getProfile(ctx, name)
		if err != nil {
			return err
		}
		cached := &schedulingv1alpha1.SchedulerProfile{}
		if err := reader.Get(ctx, client.ObjectKey{Name: name}, cached); err != nil {
			return fmt.Errorf("cached profile: %w", err)
		}
		if cached.ResourceVersion != live.ResourceVersion {
			return fmt.Errorf("cached profile has resourceVersion %s, the apiserver %s", cached.ResourceVersion, live.ResourceVersion)
		}
		if live.Status.ConfigMapName == "" {
			return nil
		}
		liveObjs, err := fetchOwned(ctx, k.admin, live, live.Status.ConfigMapName)
		if err != nil {
			return err
		}
		cachedObjs, err := fetchOwned(ctx, reader, live, live.Status.ConfigMapName)
		if err != nil {
			return fmt.Errorf("cached: %w", err)
		}
		for what, obj := range liveObjs {
			if got := cachedObjs[what].GetResourceVersion(); got != obj.GetResourceVersion() {
				return fmt.Errorf("cached %s has resourceVersion %s, the apiserver %s", what, got, obj.GetResourceVersion())
			}
		}
		return nil
	})
}
