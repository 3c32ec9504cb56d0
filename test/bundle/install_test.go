package bundle

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/controllers"
	"github.com/schedops/scheduler-profile-operator/internal/operatorenv"
)

const (
	// olmNamespace is where the simulated OLM installs the operator: not the namespace of
	// config/default, to show the bundle works in whatever namespace an administrator picks.
	olmNamespace = "olm-operators"
	waitTimeout  = 60 * time.Second
	pollInterval = 250 * time.Millisecond
)

// warnings collects the API server's warnings (Pod Security among them).
type warnings struct {
	mu   sync.Mutex
	msgs []string
}

func (w *warnings) HandleWarningHeaderWithContext(_ context.Context, _ int, _ string, msg string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.msgs = append(w.msgs, msg)
}

func (w *warnings) all() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.msgs)
}

func newClient(t *testing.T, rc *rest.Config) client.Client {
	t.Helper()
	c, err := client.New(rc, client.Options{Scheme: operatorenv.NewScheme()})
	if err != nil {
		t.Fatalf("Creating a client: %v", err)
	}
	return c
}

func eventually(t *testing.T, what string, cond func(ctx context.Context) error) {
	t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		err := cond(t.Context())
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("Timed out after %s waiting for %s: %v", waitTimeout, what, err)
		}
		time.Sleep(pollInterval)
	}
}

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
	t.Cleanup(func() { _ = c.Delete(context.Background(), ns.DeepCopy()) })

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
	for _, kind := range []string{"CustomResourceDefinition", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding", "Deployment"} {
		if !kinds[kind] {
			t.Errorf("kustomize build config/default has no %s", kind)
		}
	}
	if w := warns.all(); len(w) > 0 {
		t.Errorf("The API server warned:\n%s", strings.Join(w, "\n"))
	}
	t.Logf("Server dry-run accepted %d objects of config/default", len(ordered)-1)
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestOLMInstallSimulated applies what OLM applies from the bundle, in its narrowest form (the
// OwnNamespace install mode): the CRD; the CSV's clusterPermissions as a ClusterRole bound to the
// CSV's ServiceAccount; its permissions as a Role bound in the install namespace; its Deployment.
// Then it runs the operator, configured from that Deployment, as the ServiceAccount (every request
// goes through the API server's RBAC authorizer), and a sample profile must be rolled out: the CSV
// grants enough. It must also grant no more than the operator needs.
func TestOLMInstallSimulated(t *testing.T) {
	admin := startEnv(t)
	adminClient := newClient(t, admin)
	ctx := t.Context()
	csv := readCSV(t)
	strategy := csv.Spec.InstallStrategy.StrategySpec
	if len(strategy.DeploymentSpecs) != 1 {
		t.Fatalf("The CSV installs %d Deployments, want 1", len(strategy.DeploymentSpecs))
	}
	deploymentSpec := strategy.DeploymentSpecs[0]
	account := deploymentSpec.Spec.Template.Spec.ServiceAccountName

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
	create(&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: olmNamespace, Name: account}})
	subjects := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: account, Namespace: olmNamespace}}
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
				create(&rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: olmNamespace, Name: name}, Rules: p.Rules})
				create(&rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: olmNamespace, Name: name}, RoleRef: ref, Subjects: subjects})
			}
		}
	}
	grant(strategy.ClusterPermissions, true)
	grant(strategy.Permissions, false)

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

	operatorCfg := rest.CopyConfig(admin)
	operatorCfg.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:" + olmNamespace + ":" + account,
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + olmNamespace, "system:authenticated"},
	}
	operatorClient := newClient(t, operatorCfg)
	eventually(t, "the CSV's permissions to reach the RBAC authorizer", func(ctx context.Context) error {
		return operatorClient.List(ctx, &schedulingv1alpha1.SchedulerProfileList{})
	})

	logs := runOperator(t, operatorCfg, namespace, image)

	profile := sampleProfile(t, csv, "binpack")
	if err := adminClient.Create(ctx, profile); err != nil {
		t.Fatalf("Creating SchedulerProfile %s: %v", profile.Name, err)
	}
	t.Cleanup(func() { _ = adminClient.Delete(context.Background(), profile) })

	var p schedulingv1alpha1.SchedulerProfile
	eventually(t, "ConfigValid=True with the scheduler's objects named in status", func(ctx context.Context) error {
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
	eventually(t, "the scheduler's Deployment and ConfigMap, and its binding in kube-system", func(ctx context.Context) error {
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
	if err := adminClient.Get(ctx, client.ObjectKey{Namespace: namespace, Name: controllers.LeaderElectionID}, lease); err != nil {
		t.Errorf("The operator's leader-election lease in %s: %v", namespace, err)
	}
	if strings.Contains(strings.ToLower(logs.String()), "forbidden") {
		t.Errorf("The operator was refused something:\n%s", logs)
	}

	t.Run("grants no more", func(t *testing.T) {
		checks := []struct {
			what string
			do   func(ctx context.Context) error
		}{
			{"reading Secrets in the install namespace", func(ctx context.Context) error {
				return operatorClient.List(ctx, &corev1.SecretList{}, client.InNamespace(namespace))
			}},
			{"reading Nodes", func(ctx context.Context) error {
				return operatorClient.List(ctx, &corev1.NodeList{})
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

// installCRDs creates the bundle's CRDs and waits until they are served.
func installCRDs(t *testing.T, c client.Client, create func(client.Object)) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(path(bundleDir), "manifests", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		for _, obj := range decodeYAML(t, data) {
			if obj.GetKind() != "CustomResourceDefinition" {
				continue
			}
			crd := &apiextensionsv1.CustomResourceDefinition{}
			fromUnstructured(t, obj, crd)
			create(crd)
			names = append(names, crd.Name)
		}
	}
	if len(names) == 0 {
		t.Fatal("The bundle has no CRD")
	}
	eventually(t, "the bundle's CRDs to be established", func(ctx context.Context) error {
		for _, name := range names {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := c.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
				return err
			}
			established := false
			for _, cond := range crd.Status.Conditions {
				established = established || (cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue)
			}
			if !established {
				return fmt.Errorf("CRD %s is not established", name)
			}
		}
		return nil
	})
}

// sampleProfile is the profile name of the CSV's alm-examples.
func sampleProfile(t *testing.T, csv *operatorsv1alpha1.ClusterServiceVersion, name string) *schedulingv1alpha1.SchedulerProfile {
	t.Helper()
	var examples []schedulingv1alpha1.SchedulerProfile
	if err := json.Unmarshal([]byte(csv.Annotations["alm-examples"]), &examples); err != nil {
		t.Fatalf("Decoding alm-examples: %v", err)
	}
	for i := range examples {
		if examples[i].Name == name {
			return &examples[i]
		}
	}
	t.Fatalf("alm-examples has no profile %q", name)
	return nil
}

// logBuffer keeps the operator's log.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) write(prefix, args string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	fmt.Fprintf(&b.buf, "%s %s\n", prefix, args)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// runOperator runs the operator as main.go wires it, as the identity of rc, with leader election
// on, until the test ends.
func runOperator(t *testing.T, rc *rest.Config, namespace, image string) *logBuffer {
	t.Helper()
	logs := &logBuffer{}
	logger := funcr.New(logs.write, funcr.Options{Verbosity: 1})
	ctrl.SetLogger(logger)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("Operator log:\n%s", logs)
		}
	})
	mgr, err := ctrl.NewManager(rc, ctrl.Options{
		Scheme:                        operatorenv.NewScheme(),
		Cache:                         controllers.CacheOptions(namespace),
		Metrics:                       metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress:        "0",
		LeaderElection:                true,
		LeaderElectionID:              controllers.LeaderElectionID,
		LeaderElectionNamespace:       namespace,
		LeaderElectionReleaseOnCancel: true,
		Logger:                        logger,
	})
	if err != nil {
		t.Fatalf("Creating the manager: %v", err)
	}
	r := controllers.NewSchedulerProfileReconciler(mgr.GetClient(), mgr.GetEventRecorder(controllers.FieldManager), namespace, image)
	if err := r.SetupWithManager(mgr); err != nil {
		t.Fatalf("Setting up the controller: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("The manager stopped with: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Errorf("The manager did not stop within 30s")
		}
	})
	return logs
}
