package integration

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/controllers"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
	"github.com/schedops/scheduler-profile-operator/test/framework"
)

const (
	// operatorNamespace is where the operator runs the schedulers (OPERATOR_NAMESPACE).
	operatorNamespace = "scheduler-profile-operator-system"
	// testImage is the scheduler image the operator is given (RELATED_IMAGE_SCHEDULER).
	testImage = "example.com/scheduler-profile-operator:test"
	// reconcileTimeout bounds every wait for the controller to reach a state. A pass takes
	// milliseconds; the margin is for a loaded 2-core machine.
	reconcileTimeout = 30 * time.Second
)

// operatorOptions are the operator's settings in these tests.
var operatorOptions = controllers.ManagerOptions{Namespace: operatorNamespace, SchedulerImage: testImage}

// cluster is an apiserver the controller tests run on, and a client of its administrator.
type cluster struct {
	cfg   *rest.Config
	admin client.Client
}

// suiteCluster is the envtest apiserver of TestMain.
func suiteCluster() *cluster { return &cluster{cfg: cfg, admin: k8sClient} }

// ensureOperatorNamespace creates the operator's namespace if it does not exist. It is never
// deleted: envtest runs no namespace controller, so it would stay terminating.
func (k *cluster) ensureOperatorNamespace(t *testing.T) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: operatorNamespace}}
	if err := k.admin.Create(t.Context(), ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("Creating namespace %s: %v", operatorNamespace, err)
	}
}

// startOperator runs the operator, as main wires it, as the identity of rc until the test ends.
func (k *cluster) startOperator(t *testing.T, rc *rest.Config) *framework.Operator {
	t.Helper()
	k.ensureOperatorNamespace(t)
	return framework.StartOperator(t, rc, operatorOptions)
}

// startOperatorWith is startOperator, as the administrator, with the test's changes to the
// operator's settings.
func (k *cluster) startOperatorWith(t *testing.T, change func(*controllers.ManagerOptions)) *framework.Operator {
	t.Helper()
	k.ensureOperatorNamespace(t)
	o := operatorOptions
	change(&o)
	return framework.StartOperator(t, k.cfg, o)
}

// uniqueName returns prefix followed by a random suffix: every test has its own profiles, and
// -count=N reruns in the same apiserver never meet the objects of an earlier run.
func uniqueName(prefix string) string {
	return prefix + "-" + utilrand.String(5)
}

// createProfile creates p as the administrator and deletes it when the test ends. Its owned
// objects are deleted too: envtest runs no garbage collector.
func (k *cluster) createProfile(t *testing.T, p *schedulingv1alpha1.SchedulerProfile) *schedulingv1alpha1.SchedulerProfile {
	t.Helper()
	if err := k.admin.Create(t.Context(), p); err != nil {
		t.Fatalf("Creating SchedulerProfile %s: %v", p.Name, err)
	}
	name := p.Name
	t.Cleanup(func() { k.deleteProfileAndObjects(t, name) })
	return p
}

// deleteProfileAndObjects deletes a profile and what it owns, as the garbage collector would.
func (k *cluster) deleteProfileAndObjects(t *testing.T, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p := &schedulingv1alpha1.SchedulerProfile{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := client.IgnoreNotFound(k.admin.Delete(ctx, p)); err != nil {
		t.Errorf("Deleting SchedulerProfile %s: %v", name, err)
	}
	k.deleteObjectsOf(ctx, t, schedulingv1alpha1.LabelProfile, name)
}

// deleteObjectsOf deletes the objects that carry label=owner, in every place a process has them,
// as the garbage collector would once their owner is gone.
func (k *cluster) deleteObjectsOf(ctx context.Context, t *testing.T, label, owner string) {
	t.Helper()
	of := client.MatchingLabels{label: owner}
	for _, del := range []struct {
		obj       client.Object
		namespace string
	}{
		{&appsv1.Deployment{}, operatorNamespace},
		{&corev1.ConfigMap{}, operatorNamespace},
		{&corev1.ServiceAccount{}, operatorNamespace},
		{&corev1.Service{}, operatorNamespace},
		{&rbacv1.Role{}, operatorNamespace},
		{&rbacv1.RoleBinding{}, operatorNamespace},
		{&rbacv1.RoleBinding{}, "kube-system"},
		{&rbacv1.ClusterRoleBinding{}, ""},
	} {
		opts := []client.DeleteAllOfOption{of}
		if del.namespace != "" {
			opts = append(opts, client.InNamespace(del.namespace))
		}
		if err := k.admin.DeleteAllOf(ctx, del.obj, opts...); err != nil {
			t.Errorf("Deleting the %T of %s: %v", del.obj, owner, err)
		}
	}
}

// getProfile reads a profile from the apiserver.
func (k *cluster) getProfile(ctx context.Context, name string) (*schedulingv1alpha1.SchedulerProfile, error) {
	p := &schedulingv1alpha1.SchedulerProfile{}
	if err := k.admin.Get(ctx, client.ObjectKey{Name: name}, p); err != nil {
		return nil, err
	}
	return p, nil
}

// updateProfile changes a profile's spec with retries on conflicts (the controller writes its
// status concurrently) and returns the new generation.
func (k *cluster) updateProfile(t *testing.T, name string, mutate func(*schedulingv1alpha1.SchedulerProfile)) int64 {
	t.Helper()
	var generation int64
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		p, err := k.getProfile(t.Context(), name)
		if err != nil {
			return err
		}
		mutate(p)
		if err := k.admin.Update(t.Context(), p); err != nil {
			return err
		}
		generation = p.Generation
		return nil
	})
	if err != nil {
		t.Fatalf("Updating SchedulerProfile %s: %v", name, err)
	}
	return generation
}

// markDeploymentAvailable writes the status the Deployment controller (absent in envtest) would
// write once every replica of the current template is available.
func (k *cluster) markDeploymentAvailable(t *testing.T, name string) {
	t.Helper()
	if err := testutil.MarkDeploymentAvailable(t.Context(), k.admin, client.ObjectKey{Namespace: operatorNamespace, Name: name}); err != nil {
		t.Fatalf("Setting the status of Deployment %s: %v", name, err)
	}
}

// profileConfigMaps returns the sorted names of the ConfigMaps of profile name.
func (k *cluster) profileConfigMaps(ctx context.Context, name string) ([]string, error) {
	var list corev1.ConfigMapList
	if err := k.admin.List(ctx, &list, client.InNamespace(operatorNamespace), client.MatchingLabels{schedulingv1alpha1.LabelProfile: name}); err != nil {
		return nil, err
	}
	var names []string
	for _, cm := range list.Items {
		names = append(names, cm.Name)
	}
	slices.Sort(names)
	return names, nil
}

// deploymentAbsent checks that a Deployment of the operator's namespace does not exist.
func (k *cluster) deploymentAbsent(ctx context.Context, name string) error {
	err := k.admin.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: name}, &appsv1.Deployment{})
	if err == nil {
		return fmt.Errorf("Deployment %s exists", name)
	}
	return client.IgnoreNotFound(err)
}

// createSecret creates a Secret, deleted when the test ends.
func (k *cluster) createSecret(t *testing.T, secret *corev1.Secret) {
	t.Helper()
	if err := k.admin.Create(t.Context(), secret); err != nil {
		t.Fatalf("Creating Secret %s: %v", secret.Name, err)
	}
	t.Cleanup(func() { _ = k.admin.Delete(context.Background(), secret) })
}
