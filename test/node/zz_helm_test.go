package node

// This file's test removes what `make deploy` installed, installs the Helm chart in its place and
// uninstalls it: the OLM bundle's test, after it, starts from a cluster without the operator.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/internal/operatorenv"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
)

const (
	// helmRelease is the release the test installs, into the operator's namespace.
	helmRelease = "schedops"
	// chartDir is the chart of make chart.
	chartDir = "charts/scheduler-profile-operator"
)

// helmLabels are the labels the chart adds to config/default's objects.
var helmLabels = []string{"helm.sh/chart", "app.kubernetes.io/instance", "app.kubernetes.io/managed-by", "app.kubernetes.io/version"}

// TestHelmChartOnTheRealNode installs the chart of make chart with helm (make helm's) as
// docs/tasks/install.md says: the namespace created with the Pod Security labels, then `helm
// install --wait` with the image of make image. First, with its default values, the chart renders
// config/default's objects but the Namespace, with the chart's labels added. The operator runs on
// the real node, its webhook refuses an invalid profile, and the binpack sample becomes Available
// and binds a pod. `helm upgrade --reuse-values` to a copy of the image under another tag rolls
// the operator and then the sample's scheduler to it, still binding pods. `helm uninstall` removes
// every object of the release's manifest, and with the CRDs every profile and what the operator
// made for it (Deployments, bindings, admission policies): the namespace then holds nothing but
// the leader-election Leases, its default ServiceAccount and CA ConfigMap.
func TestHelmChartOnTheRealNode(t *testing.T) {
	ctx := t.Context()
	helm := os.Getenv("HELM")
	if helm == "" {
		t.Fatal("HELM names no helm binary: run make test-node, which builds it")
	}
	if err := k8s.Get(ctx, types.NamespacedName{Name: namespace}, &corev1.Namespace{}); err == nil {
		undeploy(t)
	}
	chart := filepath.Join(paths.Root, chartDir)
	run := helmRunner(t, helm)

	t.Run("renders config/default", func(t *testing.T) {
		rendered := run("template", helmRelease, chart, "--namespace", namespace,
			"--set", "image.repository=scheduler-profile-operator", "--set", "image.tag=dev")
		kustomize := exec.CommandContext(ctx, os.Getenv("KUSTOMIZE"), "build", filepath.Join(paths.Root, "config", "default"))
		built, err := kustomize.Output()
		if err != nil {
			t.Fatalf("kustomize build config/default: %v", err)
		}
		want := decodeObjects(t, built)
		want = slices.DeleteFunc(want, func(o *unstructured.Unstructured) bool { return o.GetKind() == "Namespace" })
		got := decodeObjects(t, []byte(rendered))
		for _, o := range got {
			labels := o.GetLabels()
			for _, l := range helmLabels {
				if labels[l] == "" {
					t.Errorf("%s %s has no label %s", o.GetKind(), o.GetName(), l)
				}
				delete(labels, l)
			}
			o.SetLabels(labels)
		}
		key := func(o *unstructured.Unstructured) string {
			return o.GetKind() + "/" + o.GetNamespace() + "/" + o.GetName()
		}
		byKey := func(objs []*unstructured.Unstructured) map[string]map[string]any {
			m := map[string]map[string]any{}
			for _, o := range objs {
				m[key(o)] = o.Object
			}
			return m
		}
		if diff := cmp.Diff(byKey(want), byKey(got)); diff != "" {
			t.Errorf("helm template with the default values is not config/default (-kustomize +helm):\n%s", diff)
		}
	})

	// As install.md: the namespace with config/default's Pod Security labels, then the chart.
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace, Labels: map[string]string{
		"pod-security.kubernetes.io/enforce": "restricted",
		"pod-security.kubernetes.io/audit":   "restricted",
		"pod-security.kubernetes.io/warn":    "restricted",
	}}}
	if err := k8s.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := deleteNamespace(context.Background()); err != nil {
			t.Error(err)
		}
	})
	repo, tag, _ := strings.Cut(img, ":")
	start := time.Now()
	run("install", helmRelease, chart, "--namespace", namespace, "--set", "image.repository="+repo, "--set", "image.tag="+tag,
		"--wait", "--timeout", "5m")
	t.Logf("helm install --wait returned in %s", time.Since(start).Round(100*time.Millisecond))
	if err := operatorenv.WaitOperator(ctx, k8s, cluster, paths, 1, operatorenv.DeployTimeout); err != nil {
		t.Fatal(err)
	}
	operatorRuns(t, img)
	refusesInvalid(t, "helm", "the chart's")

	sample := filepath.Join(paths.Root, "config", "samples", "scheduling_v1alpha1_schedulerprofile_binpack.yaml")
	applyKubectl(t, "", "-f", sample)
	waitAvailable(t, "binpack", 3*time.Minute)
	deletePods(t, "helm")
	bindsPod(t, "helm-binpack", "binpack")

	start = time.Now()
	repo2, tag2, _ := strings.Cut(imageV2, ":")
	run("upgrade", helmRelease, chart, "--namespace", namespace, "--reuse-values", "--set", "image.repository="+repo2, "--set", "image.tag="+tag2,
		"--wait", "--timeout", "5m")
	if err := operatorenv.WaitOperator(ctx, k8s, cluster, paths, 2, operatorenv.DeployTimeout); err != nil {
		t.Fatal(err)
	}
	operatorRuns(t, imageV2)
	testutil.Eventually(t, 3*time.Minute, "binpack's scheduler to run "+imageV2, func(ctx context.Context) error {
		p := &schedulingv1alpha1.SchedulerProfile{}
		if err := k8s.Get(ctx, types.NamespacedName{Name: "binpack"}, p); err != nil {
			return err
		}
		dep := &appsv1.Deployment{}
		if err := k8s.Get(ctx, types.NamespacedName{Namespace: namespace, Name: p.Status.DeploymentName}, dep); err != nil {
			return err
		}
		if got := dep.Spec.Template.Spec.Containers[0].Image; got != imageV2 {
			return fmt.Errorf("its Deployment runs %s", got)
		}
		if dep.Status.UpdatedReplicas != dep.Status.Replicas || dep.Status.AvailableReplicas != dep.Status.Replicas {
			return fmt.Errorf("rolling: %d of %d updated, %d available", dep.Status.UpdatedReplicas, dep.Status.Replicas, dep.Status.AvailableReplicas)
		}
		return nil
	})
	waitAvailable(t, "binpack", time.Minute)
	t.Logf("helm upgrade to %s: the operator and binpack's scheduler rolled in %s", imageV2, time.Since(start).Round(100*time.Millisecond))
	bindsPod(t, "helm-binpack-v2", "binpack")

	manifest := decodeObjects(t, []byte(run("get", "manifest", helmRelease, "--namespace", namespace)))
	start = time.Now()
	run("uninstall", helmRelease, "--namespace", namespace, "--wait", "--timeout", "5m")
	testutil.Eventually(t, 3*time.Minute, "nothing of the release to be left", func(ctx context.Context) error {
		left, err := leftOf(ctx, manifest)
		if err != nil {
			return err
		}
		if len(left) > 0 {
			return fmt.Errorf("left: %s", strings.Join(left, ", "))
		}
		return nil
	})
	t.Logf("helm uninstall: nothing of the release left after %s", time.Since(start).Round(100*time.Millisecond))
	if err := deleteNamespace(ctx); err != nil {
		t.Fatal(err)
	}
}

// helmRunner returns a function that runs helm with the cluster's kubeconfig and Helm's own
// directories in the test's, and returns its standard output, failing the test on an error.
func helmRunner(t *testing.T, helm string) func(args ...string) string {
	home := filepath.Join(workDir, "helm")
	env := append(os.Environ(), "KUBECONFIG="+cluster.Kubeconfig(), "HELM_CACHE_HOME="+filepath.Join(home, "cache"),
		"HELM_CONFIG_HOME="+filepath.Join(home, "config"), "HELM_DATA_HOME="+filepath.Join(home, "data"))
	return func(args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), helm, args...)
		cmd.Env = env
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("helm %s: %v\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
		}
		return stdout.String()
	}
}

// operatorRuns checks that the operator's one pod runs image on the real node, and names it as the
// schedulers' image.
func operatorRuns(t *testing.T, image string) {
	t.Helper()
	ops := realNodePods(t, map[string]string{"control-plane": "controller-manager"})
	ops = slices.DeleteFunc(ops, func(p corev1.Pod) bool { return p.DeletionTimestamp != nil })
	if len(ops) != 1 {
		t.Fatalf("%d operator pods, want 1", len(ops))
	}
	c := ops[0].Spec.Containers[0]
	var related string
	for _, e := range c.Env {
		if e.Name == schedulerImageEnv {
			related = e.Value
		}
	}
	if c.Image != image || related != image {
		t.Errorf("The operator runs %s with %s=%s, want %s", c.Image, schedulerImageEnv, related, image)
	}
}

// bindsPod creates a workload pod for schedulerName and waits until it is bound to a kwok node.
func bindsPod(t *testing.T, name, schedulerName string) {
	t.Helper()
	pod := workloadPod("helm", name, schedulerName)
	if err := k8s.Create(t.Context(), pod); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, time.Minute, "pod "+name+" to be bound", func(ctx context.Context) error {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
			return err
		}
		if !strings.HasPrefix(pod.Spec.NodeName, "kwok-") {
			return fmt.Errorf("node %q", pod.Spec.NodeName)
		}
		return nil
	})
}

// leftOf lists what is left of a release whose manifest held objs: each of them that the
// apiserver still has, the objects the operator labels as its own outside the namespace
// (bindings, admission policies), and every object in the operator's namespace but its
// leader-election Leases, its default ServiceAccount, its CA ConfigMap and Events.
func leftOf(ctx context.Context, objs []*unstructured.Unstructured) ([]string, error) {
	// Listing every resource lists deprecated ones too (Endpoints, ComponentStatus): no warnings.
	quiet := rest.CopyConfig(cfg)
	quiet.WarningHandler = rest.NoWarnings{}
	dyn, err := dynamic.NewForConfig(quiet)
	if err != nil {
		return nil, err
	}
	var left []string
	for _, o := range objs {
		mapping, err := k8s.RESTMapper().RESTMapping(o.GroupVersionKind().GroupKind(), o.GroupVersionKind().Version)
		if meta.IsNoMatchError(err) {
			continue // its CRD is gone
		}
		if err != nil {
			return nil, err
		}
		_, err = dyn.Resource(mapping.Resource).Namespace(o.GetNamespace()).Get(ctx, o.GetName(), metav1.GetOptions{})
		if err == nil {
			left = append(left, o.GetKind()+" "+o.GetName())
		} else if !apierrors.IsNotFound(err) {
			return nil, err
		}
	}
	disc, err := discovery.NewDiscoveryClientForConfig(quiet)
	if err != nil {
		return nil, err
	}
	lists, err := disc.ServerPreferredResources()
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return nil, err
	}
	ours := metav1.ListOptions{LabelSelector: "app.kubernetes.io/managed-by=scheduler-profile-operator"}
	for _, list := range lists {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			return nil, err
		}
		for _, r := range list.APIResources {
			if !slices.Contains(r.Verbs, "list") || strings.Contains(r.Name, "/") || r.Kind == "Event" {
				continue
			}
			res := dyn.Resource(gv.WithResource(r.Name))
			var items *unstructured.UnstructuredList
			if r.Namespaced {
				items, err = res.Namespace(namespace).List(ctx, metav1.ListOptions{})
			} else {
				items, err = res.List(ctx, ours)
			}
			if apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("listing %s: %w", r.Name, err)
			}
			for _, item := range items.Items {
				if expectedInNamespace(r.Kind, item.GetName()) {
					continue
				}
				left = append(left, fmt.Sprintf("%s %s/%s", r.Kind, item.GetNamespace(), item.GetName()))
			}
		}
	}
	// The bindings of the schedulers in kube-system.
	var bindings unstructured.UnstructuredList
	bindings.SetGroupVersionKind(schema.GroupVersionKind{Group: "rbac.authorization.k8s.io", Version: "v1", Kind: "RoleBindingList"})
	if err := k8s.List(ctx, &bindings, client.InNamespace(metav1.NamespaceSystem), client.MatchingLabels{"app.kubernetes.io/managed-by": "scheduler-profile-operator"}); err != nil {
		return nil, err
	}
	for _, b := range bindings.Items {
		left = append(left, "RoleBinding kube-system/"+b.GetName())
	}
	return left, nil
}

// expectedInNamespace says whether an object in the operator's namespace is expected after an
// uninstall: what every namespace holds, and the Leases of leader election, which nothing owns.
func expectedInNamespace(kind, name string) bool {
	switch kind {
	case "Lease":
		return true
	case "ServiceAccount":
		return name == "default"
	case "ConfigMap":
		return name == "kube-root-ca.crt"
	}
	return false
}

// deleteNamespace deletes the operator's namespace, as install.md says after helm uninstall, and
// waits until it is gone. It takes a context of its own: a test's cleanup runs after the test's
// context ended.
func deleteNamespace(ctx context.Context) error {
	err := k8s.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}})
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	err = testutil.Poll(ctx, 3*time.Minute, func(ctx context.Context) error {
		err := k8s.Get(ctx, types.NamespacedName{Name: namespace}, &corev1.Namespace{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there: %v", err)
	})
	if err != nil {
		return fmt.Errorf("waiting for namespace %s to be gone: %w", namespace, err)
	}
	return nil
}

// decodeObjects decodes YAML documents into objects, leaving out empty ones.
func decodeObjects(t *testing.T, data []byte) []*unstructured.Unstructured {
	t.Helper()
	decoder := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var objs []*unstructured.Unstructured
	for {
		var obj map[string]any
		err := decoder.Decode(&obj)
		if errors.Is(err, io.EOF) {
			return objs
		}
		if err != nil {
			t.Fatal(err)
		}
		if obj != nil {
			objs = append(objs, &unstructured.Unstructured{Object: obj})
		}
	}
}
