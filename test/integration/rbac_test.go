package integration

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/internal/operatorenv"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
	"github.com/schedops/scheduler-profile-operator/test/framework"
)

const (
	// generatedRBAC is what `make manifests` generates from the reconciler's RBAC markers.
	generatedRBAC = "../../config/rbac/role.yaml"
	// operatorServiceAccount is the operator's identity in a cluster.
	operatorServiceAccount = "controller-manager"
	// operatorBindingName names the bindings this test makes to the generated roles.
	operatorBindingName = "scheduler-profile-operator-test-manager"
	// rbacTimeout bounds the wait for new bindings to reach the apiserver's RBAC authorizer.
	rbacTimeout = 30 * time.Second
)

// TestControllerRunsWithGeneratedRBAC runs the operator with only the permissions of
// config/rbac/role.yaml, bound to its ServiceAccount, and impersonates that ServiceAccount:
// every request goes through the apiserver's RBAC authorizer (and its escalation checks on
// bindings). The whole reconcile must work, including binding the bootstrap kube-scheduler roles
// through the `bind` verb, and the identity must not be able to bind anything else.
//
// It runs on an apiserver of its own that enforces OwnerReferencesPermissionEnforcement, as
// OpenShift does: setting blockOwnerDeletion on an owner reference needs the right to update the
// owner's finalizers, which role.yaml must then grant.
func TestControllerRunsWithGeneratedRBAC(t *testing.T) {
	k := startEnforcingCluster(t)
	ctx := t.Context()
	k.ensureOperatorNamespace(t)
	operatorCfg := framework.AsServiceAccount(k.cfg, operatorNamespace, operatorServiceAccount)
	operatorClient, err := client.New(operatorCfg, client.Options{Scheme: operatorenv.NewScheme()})
	if err != nil {
		t.Fatalf("Creating the operator's client: %v", err)
	}

	// RBAC is on: without bindings, the identity may not read profiles.
	if err := operatorClient.List(ctx, &schedulingv1alpha1.SchedulerProfileList{}); !apierrors.IsForbidden(err) {
		t.Fatalf("Listing SchedulerProfiles as the unbound ServiceAccount: got %v, want Forbidden (is RBAC authorization on?)", err)
	}

	k.bindGeneratedRoles(t, operatorNamespace, operatorServiceAccount)
	testutil.Eventually(t, rbacTimeout, "the bindings to reach the RBAC authorizer", func(ctx context.Context) error {
		if err := operatorClient.List(ctx, &schedulingv1alpha1.SchedulerProfileList{}); err != nil {
			return err
		}
		return operatorClient.List(ctx, &corev1.ConfigMapList{}, client.InNamespace(operatorNamespace))
	})
	// The cache lists and watches the labelled Namespaces (status.assignedNamespaces).
	if err := operatorClient.List(ctx, &corev1.NamespaceList{}, client.HasLabels{schedulingv1alpha1.LabelAssignSchedulerName}); err != nil {
		t.Errorf("Listing the assigned Namespaces as the operator: %v", err)
	}
	// The admission plugin is on: the identity, which may create ConfigMaps, may not block the
	// deletion of an owner whose finalizers it cannot update (a Namespace).
	checkOwnerReferenceEnforced(t, k, operatorClient)

	operator := k.startOperator(t, operatorCfg)
	name := uniqueName("ctl-rbac")
	// Two replicas: leader election, and a PodDisruptionBudget to create.
	k.createProfile(t, testutil.MakeProfile(name).Replicas(2).Obj())
	p := k.waitForRollout(t, name)
	checkStatusNames(t, p, name)
	objs := k.waitForOwned(t, p, p.Status.ConfigMapName)
	k.checkOwnedObjects(t, p, name, objs)
	pdb := &policyv1.PodDisruptionBudget{}
	if err := k.admin.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: p.Status.DeploymentName}, pdb); err != nil {
		t.Errorf("The PodDisruptionBudget of a 2-replica scheduler: %v", err)
	} else {
		checkControlledBy(t, p, "PodDisruptionBudget", pdb)
	}
	k.markDeploymentAvailable(t, p.Status.DeploymentName)
	k.waitForConditions(t, name, configValid, available, rolledOut, notDegraded)
	// The identity may emit events about cluster-scoped profiles.
	k.waitForEvent(t, p, corev1.EventTypeNormal, schedulingv1alpha1.ReasonConfigAccepted, "")
	if log := operator.Log.String(); strings.Contains(strings.ToLower(log), "forbidden") {
		t.Errorf("The operator was refused something:\n%s", log)
	}

	t.Run("cannot bind other roles", func(t *testing.T) {
		for _, role := range []string{"cluster-admin", "system:controller:deployment-controller"} {
			crb := &rbacv1.ClusterRoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: uniqueName("ctl-rbac-escalation")},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
				Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: name + "-scheduler", Namespace: operatorNamespace}},
			}
			err := operatorClient.Create(ctx, crb)
			if err == nil {
				_ = k.admin.Delete(context.Background(), crb)
			}
			if !apierrors.IsForbidden(err) {
				t.Errorf("Binding ClusterRole %s as the operator: got %v, want Forbidden", role, err)
			}
		}
	})

	// Extenders' client certificates are read in the operator's namespace, and nowhere else.
	t.Run("reads secrets only in its namespace", func(t *testing.T) {
		if err := operatorClient.List(ctx, &corev1.SecretList{}, client.InNamespace(operatorNamespace)); err != nil {
			t.Errorf("Listing Secrets in %s as the operator: %v", operatorNamespace, err)
		}
		for _, ns := range []string{"", "default", "kube-system"} {
			err := operatorClient.List(ctx, &corev1.SecretList{}, client.InNamespace(ns))
			if !apierrors.IsForbidden(err) {
				t.Errorf("Listing Secrets in namespace %q as the operator: got %v, want Forbidden", ns, err)
			}
		}
		err := operatorClient.Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: "any"}, &corev1.Secret{})
		if !apierrors.IsForbidden(err) {
			t.Errorf("Getting a Secret in kube-system as the operator: got %v, want Forbidden", err)
		}
		if err := operatorClient.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: operatorNamespace, Name: uniqueName("ctl-rbac")}}); !apierrors.IsForbidden(err) {
			t.Errorf("Creating a Secret in %s as the operator: got %v, want Forbidden", operatorNamespace, err)
		}
		// The operator reads a profile's Secret with these permissions.
		withTLS := testutil.MakeProfile(uniqueName("ctl-rbac-tls")).Obj()
		secret := extenderSecret(uniqueName("ctl-rbac-client"), withTLS.Name, pair(testCert1, testKey1))
		k.createSecret(t, secret)
		withTLS.Spec.Extenders = []schedulingv1alpha1.Extender{tlsExtender(secret.Name)}
		k.createProfile(t, withTLS)
		k.waitForRollout(t, withTLS.Name)
		for _, role := range readGeneratedRoles(t) {
			cr, ok := role.(*rbacv1.ClusterRole)
			if !ok {
				continue
			}
			for _, rule := range cr.Rules {
				if slices.Contains(rule.APIGroups, "") || slices.Contains(rule.APIGroups, "*") {
					if slices.Contains(rule.Resources, "secrets") || slices.Contains(rule.Resources, "*") {
						t.Errorf("ClusterRole %s grants %v on Secrets cluster-wide", cr.Name, rule.Verbs)
					}
				}
			}
		}
	})
}

// startEnforcingCluster starts an envtest apiserver and etcd of its own, with the CRD and the
// OwnerReferencesPermissionEnforcement admission plugin, until the test ends.
func startEnforcingCluster(t *testing.T) *cluster {
	t.Helper()
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join("..", "..", "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	env.ControlPlane.GetAPIServer().Configure().Append("enable-admission-plugins", "OwnerReferencesPermissionEnforcement")
	rc, err := env.Start()
	if err != nil {
		t.Fatalf("Starting an envtest apiserver with OwnerReferencesPermissionEnforcement: %v", err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Errorf("Stopping the envtest apiserver: %v", err)
		}
	})
	c, err := client.New(rc, client.Options{Scheme: operatorenv.NewScheme()})
	if err != nil {
		t.Fatalf("Creating the administrator's client: %v", err)
	}
	return &cluster{cfg: rc, admin: c}
}

// checkOwnerReferenceEnforced checks that c may not create an object with blockOwnerDeletion on
// an owner whose finalizers it may not update.
func checkOwnerReferenceEnforced(t *testing.T, k *cluster, c client.Client) {
	t.Helper()
	ns := &corev1.Namespace{}
	if err := k.admin.Get(t.Context(), client.ObjectKey{Name: operatorNamespace}, ns); err != nil {
		t.Fatalf("Reading namespace %s: %v", operatorNamespace, err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Namespace: operatorNamespace,
		Name:      uniqueName("ctl-rbac-owner"),
		OwnerReferences: []metav1.OwnerReference{{
			APIVersion: "v1", Kind: "Namespace", Name: ns.Name, UID: ns.UID, BlockOwnerDeletion: ptr.To(true),
		}},
	}}
	// The administrator may, so the refusal below is about the owner reference.
	if err := k.admin.Create(t.Context(), cm, client.DryRunAll); err != nil {
		t.Fatalf("Creating ConfigMap %s as the administrator (dry run): %v", cm.Name, err)
	}
	err := c.Create(t.Context(), cm)
	if err == nil {
		_ = k.admin.Delete(context.Background(), cm)
	}
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "blockOwnerDeletion") {
		t.Fatalf("Creating a ConfigMap with blockOwnerDeletion on a Namespace: got %v, want Forbidden by OwnerReferencesPermissionEnforcement", err)
	}
}

// bindGeneratedRoles creates the roles of config/rbac/role.yaml and binds them to the
// ServiceAccount, as config/rbac would in a cluster; everything is deleted when the test ends.
func (k *cluster) bindGeneratedRoles(t *testing.T, namespace, serviceAccount string) {
	t.Helper()
	ctx := t.Context()
	subjects := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: serviceAccount, Namespace: namespace}}
	roles := readGeneratedRoles(t)
	var created []client.Object
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		for _, obj := range created {
			if err := client.IgnoreNotFound(k.admin.Delete(ctx, obj)); err != nil {
				t.Errorf("Deleting %T %s: %v", obj, client.ObjectKeyFromObject(obj), err)
			}
		}
	})
	create := func(obj client.Object) {
		t.Helper()
		if err := k.admin.Create(ctx, obj); err != nil {
			t.Fatalf("Creating %T %s: %v", obj, client.ObjectKeyFromObject(obj), err)
		}
		created = append(created, obj)
	}
	for _, role := range roles {
		switch r := role.(type) {
		case *rbacv1.ClusterRole:
			create(r)
			create(&rbacv1.ClusterRoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: operatorBindingName},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: r.Name},
				Subjects:   subjects,
			})
		case *rbacv1.Role:
			create(r)
			create(&rbacv1.RoleBinding{
				ObjectMeta: metav1.ObjectMeta{Namespace: r.Namespace, Name: operatorBindingName},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: r.Name},
				Subjects:   subjects,
			})
		}
	}
}

// readGeneratedRoles decodes every document of config/rbac/role.yaml. It expects the ClusterRole
// and the Roles in kube-system and the operator's namespace, so that a regenerated file that
// lost one fails here rather than in a confusing way later.
func readGeneratedRoles(t *testing.T) []client.Object {
	t.Helper()
	f, err := os.Open(generatedRBAC)
	if err != nil {
		t.Fatalf("Opening %s: %v", generatedRBAC, err)
	}
	defer func() { _ = f.Close() }()
	decoder := serializer.NewCodecFactory(operatorenv.NewScheme()).UniversalDeserializer()
	reader := utilyaml.NewYAMLReader(bufio.NewReader(f))
	var roles []client.Object
	var kinds []string
	for {
		doc, err := reader.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("Reading %s: %v", generatedRBAC, err)
		}
		if strings.TrimSpace(string(doc)) == "" || strings.TrimSpace(string(doc)) == "---" {
			continue
		}
		obj, _, err := decoder.Decode(doc, nil, nil)
		if err != nil {
			t.Fatalf("Decoding a document of %s: %v\n%s", filepath.Base(generatedRBAC), err, doc)
		}
		role, ok := obj.(client.Object)
		if !ok {
			t.Fatalf("%s holds a %T", generatedRBAC, obj)
		}
		roles = append(roles, role)
		kinds = append(kinds, fmt.Sprintf("%T %s", role, client.ObjectKeyFromObject(role)))
	}
	want := []string{
		"*v1.ClusterRole /manager-role",
		"*v1.Role kube-system/manager-role",
		"*v1.Role " + operatorNamespace + "/manager-role",
	}
	if diff := cmp.Diff(want, kinds); diff != "" {
		t.Fatalf("Documents of %s (-want +got):\n%s", generatedRBAC, diff)
	}
	return roles
}
