package framework

import (
	"fmt"
	"os"
	"testing"

	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// ReadCSV decodes a bundle's ClusterServiceVersion with OLM's own types.
func ReadCSV(file string) (*operatorsv1alpha1.ClusterServiceVersion, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	csv := &operatorsv1alpha1.ClusterServiceVersion{}
	if err := yaml.UnmarshalStrict(data, csv); err != nil {
		return nil, fmt.Errorf("decoding %s: %w", file, err)
	}
	return csv, nil
}

// GrantCSVPermissions creates, through create, what OLM creates for the CSV's one Deployment in
// the OwnNamespace install mode: its ServiceAccount in namespace, its clusterPermissions as
// ClusterRoles bound to it, its permissions as Roles bound in namespace. It returns the
// Deployment's spec.
func GrantCSVPermissions(t testing.TB, csv *operatorsv1alpha1.ClusterServiceVersion, namespace string, create func(client.Object)) operatorsv1alpha1.StrategyDeploymentSpec {
	t.Helper()
	strategy := csv.Spec.InstallStrategy.StrategySpec
	if len(strategy.DeploymentSpecs) != 1 {
		t.Fatalf("The CSV installs %d Deployments, want 1", len(strategy.DeploymentSpecs))
	}
	deployment := strategy.DeploymentSpecs[0]
	account := deployment.Spec.Template.Spec.ServiceAccountName
	create(&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: account}})
	subjects := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: account, Namespace: namespace}}
	grant := func(perms []operatorsv1alpha1.StrategyDeploymentPermissions, cluster bool) {
		t.Helper()
		if len(perms) == 0 {
			t.Fatalf("The CSV has no %s", map[bool]string{true: "clusterPermissions", false: "permissions"}[cluster])
		}
		for i, p := range perms {
			if p.ServiceAccountName != account {
				t.Fatalf("The CSV grants to %q, its Deployment runs as %q", p.ServiceAccountName, account)
			}
			name := fmt.Sprintf("%s-%d", csv.Name, i)
			ref := rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: name}
			if cluster {
				ref.Kind = "ClusterRole"
				create(&rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name}, Rules: p.Rules})
				create(&rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name}, RoleRef: ref, Subjects: subjects})
			} else {
				create(&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, Rules: p.Rules})
				create(&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}, RoleRef: ref, Subjects: subjects})
			}
		}
	}
	grant(strategy.ClusterPermissions, true)
	grant(strategy.Permissions, false)
	return deployment
}
