package bundle

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/controllers"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
	"github.com/schedops/scheduler-profile-operator/test/framework"
)

const (
	// olmNamespace is where the simulated OLM installs the operator: not the namespace of
	// config/default, to show the bundle works in whatever namespace an administrator picks.
	olmNamespace = "olm-operators"
	// waitTimeout bounds every wait for the apiserver or the operator to reach a state.
	waitTimeout = 60 * time.Second
)

// TestKustomizeDefaultAppliesServerDryRun is `kustomize build config/default | kubectl apply
// --dry-run=server -f -` in Go: the Namespace is created, then every other object is created
// with dryRun=All (the CRD first), so the API server validates and admits each one without
// keeping it. No object may draw a warning.
func TestKustomizeDefaultAppliesServerDryRun(t *testing.T) {
	rc := rest.CopyConfig(startEnv(t))
	warns := &warnings{}
	rc.WarningHandlerWithContext = warns
	c := newClient(t, rc)
	ctx := t.Context()

	objs := kustomizeBuild(t, "config/default", "registry.example/scheduler-profile-operator:v0.0.1")
	ns := findObject(t, objs, "Namespace")
	if err := c.Create(ctx, ns.DeepCopy()); err != nil {
		t.Fatalf("Creating Namespace %s: %v", ns.GetName(), err)
	}
	t.Cleanup(func() { deleteNamespace(t, rc, ns.GetName()) })

	// Namespaced objects stay in the operator's namespace except the kube-system Role and
	// RoleBinding (the namespace transformer of config/default must not move them).
	var inKubeSystem []string
	for _, obj := range objs {
		if obj.GetNamespace() == "kube-system" {
			inKubeSystem = append(inKubeSystem, obj.GetKind())
		} else if obj.GetNamespace() != "" && obj.GetNamespace() != ns.GetName() {
			t.Errorf("%s %s is in namespace %q, want %q", obj.GetKind(), obj.GetName(), obj.GetNamespace(), ns.GetName())
		}
	}
	slices.Sort(inKubeSystem)
	if !slices.Equal(inKubeSystem, []string{"Role", "RoleBinding"}) {
		t.Errorf("Objects in kube-system: %v, want a Role and a RoleBinding", inKubeSystem)
	}

	ordered := slices.Clone(objs)
	slices.SortStableFunc(ordered, func(a, b *unstructured.Unstructured) int {
		return boolRank(b.GetKind() == "CustomResourceDefinition") - boolRank(a.GetKind() == "CustomResourceDefinition")
	})
	kinds := map[string]bool{}
	for _, obj := range ordered {
		if obj.GetKind() == "Namespace" {
			continue
		}
		kinds[obj.GetKind()] = true
		if err := c.Create(ctx, obj.DeepCopy(), client.DryRunAll); err != nil {
			t.Errorf("Server dry-run create of %s %s/%s: %v", obj.GetKind(), obj.GetNamespace(), obj.GetName(), err)
		}
	}
	for _, kind := range []string{"CustomResourceDefinition", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "Deployment", "Service"} {
		if !kinds[kind] {
			t.Errorf("kustomize build config/default has no %s", kind)
		}
	}
	if w := warns.all(); len(w) > 0 {
		t.Errorf("The API server warned:\n%s", strings.Join(w, "\n"))
	}
	t.Logf("Server dry-run accepted %d objects of config/default", len(ordered)-1)
}

// TestOLMInstallSimulated applies what OLM applies from the bundle, in its narrowest form (the
// OwnNamespace install mode): the CRD; the CSV's clusterPermissions as a ClusterRole bound to the
// CSV's ServiceAccount; its permissions as a Role bound in the install namespace; its Deployment.
// Then it runs the operator, configured from that Deployment, as the ServiceAccount (every request
// goes through the API server's RBAC authorizer), and a sample profile must be rolled out: the CSV
// grants enough. It must also grant no more than the operator needs.
//
// The real OLM installs the bundle in the OLM tier (test/olm, make test-olm): catalog,
// Subscription, InstallPlan, CSV phases, OLM's webhook configurations and certificates, the
// uninstall. This simulation stays for what that tier does not show: the OwnNamespace install
// mode (the OLM tier's OperatorGroup selects every namespace), the operator's pod admitted under
// Pod Security restricted, and the operator's every request, leader election included, through
// the RBAC authorizer of a cluster that runs in seconds within the install-paths tier.
func TestOLMInstallSimulated(t *testing.T) {
	admin := startEnv(t)
	adminClient := newClient(t, admin)
	ctx := t.Context()
	csv := readCSV(t)

	var created []client.Object
	create := func(obj client.Object) {
		t.Helper()
		if err := adminClient.Create(ctx, obj); err != nil {
			t.Fatalf("Creating %T %s: %v", obj, client.ObjectKeyFromObject(obj), err)
		}
		created = append(created, obj)
	}
	t.Cleanup(func() {
		for _, obj := range slices.Backward(created) {
			_ = adminClient.Delete(context.Background(), obj)
		}
	})

	// The install namespace, enforcing the restricted Pod Security Standard.
	create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: olmNamespace, Labels: map[string]string{
		"pod-security.kubernetes.io/enforce": "restricted",
	}}})
	installCRDs(t, adminClient, create)
	deploymentSpec := framework.GrantCSVPermissions(t, csv, olmNamespace, create)
	account := deploymentSpec.Spec.Template.Spec.ServiceAccountName
	subjects := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: account, Namespace: olmNamespace}}

	// The Deployment as OLM creates it, and its pod as the ReplicaSet would create it: the
	// restricted Pod Security Standard is enforced in the namespace.
	create(&appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: olmNamespace, Name: deploymentSpec.Name, Labels: deploymentSpec.Label},
		Spec:       deploymentSpec.Spec,
	})
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: olmNamespace, Name: deploymentSpec.Name + "-pod", Labels: deploymentSpec.Spec.Template.Labels},
		Spec:       deploymentSpec.Spec.Template.Spec,
	}
	if err := adminClient.Create(ctx, pod, client.DryRunAll); err != nil {
		t.Errorf("Creating the operator's pod in a namespace enforcing Pod Security restricted: %v", err)
	}

	// The operator's settings, from its Deployment.
	container := deploymentSpec.Spec.Template.Spec.Containers[0]
	if !slices.Contains(container.Args, "--leader-elect") {
		t.Errorf("The operator's args %q lack --leader-elect", container.Args)
	}
	namespace := olmNamespace
	for _, env := range container.Env {
		if env.Name == "OPERATOR_NAMESPACE" && (env.ValueFrom == nil || env.ValueFrom.FieldRef == nil || env.ValueFrom.FieldRef.FieldPath != "metadata.namespace") {
			t.Errorf("OPERATOR_NAMESPACE is %+v, want the pod's namespace from the downward API", env)
		}
	}
	image := envValue(container, "RELATED_IMAGE_SCHEDULER")
	if image == "" {
		t.Fatalf("The operator's container sets no RELATED_IMAGE_SCHEDULER")
	}

	operatorCfg := framework.AsServiceAccount(admin, olmNamespace, account)
	operatorClient := newClient(t, operatorCfg)
	testutil.Eventually(t, waitTimeout, "the CSV's permissions to reach the RBAC authorizer", func(ctx context.Context) error {
		return operatorClient.List(ctx, &schedulingv1alpha1.SchedulerProfileList{})
	})

	if !slices.Contains(container.Args, "--disable-cert-rotation") {
		t.Errorf("The operator's args %q lack --disable-cert-rotation: OLM provides the webhook's certificate", container.Args)
	}
	webhook := installOLMWebhooks(t, csv, namespace, create)
	operator := framework.StartOperator(t, operatorCfg, controllers.ManagerOptions{Namespace: namespace, SchedulerImage: image, LeaderElection: true, Webhook: webhook})
	refusedByWebhook(t, adminClient)

	profile := sampleProfile(t, csv, "binpack")
	if err := adminClient.Create(ctx, profile); err != nil {
		t.Fatalf("Creating SchedulerProfile %s: %v", profile.Name, err)
	}
	t.Cleanup(func() { _ = adminClient.Delete(context.Background(), profile) })

	var p schedulingv1alpha1.SchedulerProfile
	testutil.Eventually(t, waitTimeout, "ConfigValid=True with the scheduler's objects named in status", func(ctx context.Context) error {
		if err := adminClient.Get(ctx, client.ObjectKeyFromObject(profile), &p); err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(p.Status.Conditions, schedulingv1alpha1.ConditionConfigValid) {
			return fmt.Errorf("conditions %+v", p.Status.Conditions)
		}
		if p.Status.ConfigMapName == "" || p.Status.DeploymentName == "" {
			return fmt.Errorf("status %+v names no ConfigMap or Deployment", p.Status)
		}
		return nil
	})
	testutil.Eventually(t, waitTimeout, "the scheduler's Deployment and ConfigMap, and its binding in kube-system", func(ctx context.Context) error {
		if err := adminClient.Get(ctx, client.ObjectKey{Namespace: namespace, Name: p.Status.DeploymentName}, &appsv1.Deployment{}); err != nil {
			return err
		}
		if err := adminClient.Get(ctx, client.ObjectKey{Namespace: namespace, Name: p.Status.ConfigMapName}, &corev1.ConfigMap{}); err != nil {
			return err
		}
		// The kube-system RoleBinding to extension-apiserver-authentication-reader needs the
		// rules that the CSV can only grant cluster-wide.
		bindings := &rbacv1.RoleBindingList{}
		if err := adminClient.List(ctx, bindings, client.InNamespace("kube-system")); err != nil {
			return err
		}
		for _, b := range bindings.Items {
			if b.RoleRef.Name == "extension-apiserver-authentication-reader" && slices.ContainsFunc(b.Subjects, func(s rbacv1.Subject) bool { return s.Namespace == namespace }) {
				return nil
			}
		}
		return fmt.Errorf("no RoleBinding in kube-system to extension-apiserver-authentication-reader for a scheduler in %s", namespace)
	})
	// Leader election ran on a lease of the install namespace.
	lease := &unstructured.Unstructured{}
	lease.SetAPIVersion("coordination.k8s.io/v1")
	lease.SetKind("Lease")
	if err := adminClient.Get(ctx, client.ObjectKey{Namespace: namespace, Name: schedulingv1alpha1.LeaderElectionID}, lease); err != nil {
		t.Errorf("The operator's leader-election lease in %s: %v", namespace, err)
	}
	if log := operator.Log.String(); strings.Contains(strings.ToLower(log), "forbidden") {
		t.Errorf("The operator was refused something:\n%s", log)
	}

	t.Run("grants no more", func(t *testing.T) {
		checks := []struct {
			what string
			do   func(ctx context.Context) error
		}{
			// Extenders' client certificates are read in the install namespace only.
			{"reading Secrets in kube-system", func(ctx context.Context) error {
				return operatorClient.List(ctx, &corev1.SecretList{}, client.InNamespace("kube-system"))
			}},
			{"reading Secrets cluster-wide", func(ctx context.Context) error {
				return operatorClient.List(ctx, &corev1.SecretList{})
			}},
			{"creating Nodes", func(ctx context.Context) error {
				return operatorClient.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "not-allowed"}}, client.DryRunAll)
			}},
			{"creating a Deployment outside the install namespace", func(ctx context.Context) error {
				return operatorClient.Create(ctx, &appsv1.Deployment{
					ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, Name: "not-allowed"},
					Spec:       deploymentSpec.Spec,
				}, client.DryRunAll)
			}},
			{"binding cluster-admin", func(ctx context.Context) error {
				return operatorClient.Create(ctx, &rbacv1.ClusterRoleBinding{
					ObjectMeta: metav1.ObjectMeta{Name: "not-allowed"},
					RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
					Subjects:   subjects,
				}, client.DryRunAll)
			}},
			{"binding cluster-admin in kube-system", func(ctx context.Context) error {
				return operatorClient.Create(ctx, &rbacv1.RoleBinding{
					ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "not-allowed"},
					RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
					Subjects:   subjects,
				}, client.DryRunAll)
			}},
			{"creating CustomResourceDefinitions", func(ctx context.Context) error {
				crd := &apiextensionsv1.CustomResourceDefinition{}
				crd.Name = "things.example.com"
				return operatorClient.Create(ctx, crd, client.DryRunAll)
			}},
		}
		for _, c := range checks {
			if err := c.do(ctx); !apierrors.IsForbidden(err) {
				t.Errorf("%s as the operator: got %v, want Forbidden", c.what, err)
			}
		}
	})
}
