package bundle

import (
	"bufio"
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	operatorsv1alpha1 "github.com/operator-framework/api/pkg/operators/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/schedops/scheduler-profile-operator/test/framework"
)

// readCSV decodes the bundle's ClusterServiceVersion with OLM's own types.
func readCSV(t *testing.T) *operatorsv1alpha1.ClusterServiceVersion {
	t.Helper()
	csv, err := framework.ReadCSV(path(csvFile))
	if err != nil {
		t.Fatal(err)
	}
	return csv
}

// operatorImage is the image the bundle runs the operator from.
func operatorImage(t *testing.T, csv *operatorsv1alpha1.ClusterServiceVersion) string {
	t.Helper()
	deployments := csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs
	if len(deployments) != 1 || len(deployments[0].Spec.Template.Spec.Containers) == 0 {
		t.Fatalf("The CSV installs %d Deployments, want 1 with containers", len(deployments))
	}
	return deployments[0].Spec.Template.Spec.Containers[0].Image
}

// TestAnnotationsMatchDockerfileLabels: OLM reads metadata/annotations.yaml from the bundle image
// and catalogs read the image's labels; the two must say the same.
func TestAnnotationsMatchDockerfileLabels(t *testing.T) {
	var annotations struct {
		Annotations map[string]string `json:"annotations"`
	}
	if err := yaml.UnmarshalStrict(readFile(t, "bundle/metadata/annotations.yaml"), &annotations); err != nil {
		t.Fatalf("Decoding annotations.yaml: %v", err)
	}
	labels := map[string]string{}
	var copies []string
	scanner := bufio.NewScanner(bytes.NewReader(readFile(t, bundleDockerfile)))
	for scanner.Scan() {
		line := strings.TrimSpace(scanner.Text())
		if rest, ok := strings.CutPrefix(line, "LABEL "); ok {
			key, value, ok := strings.Cut(rest, "=")
			if !ok {
				t.Fatalf("Malformed LABEL line in %s: %q", bundleDockerfile, line)
			}
			labels[key] = value
		}
		if rest, ok := strings.CutPrefix(line, "COPY "); ok {
			copies = append(copies, rest)
		}
	}
	if len(annotations.Annotations) == 0 {
		t.Fatal("annotations.yaml has no annotations")
	}
	if diff := cmp.Diff(annotations.Annotations, labels); diff != "" {
		t.Errorf("bundle.Dockerfile labels differ from metadata/annotations.yaml (-annotations +labels):\n%s", diff)
	}
	// The image must hold the directories the annotations point to.
	for key, dir := range map[string]string{
		"operators.operatorframework.io.bundle.manifests.v1": "manifests/",
		"operators.operatorframework.io.bundle.metadata.v1":  "metadata/",
	} {
		if annotations.Annotations[key] != dir {
			t.Errorf("annotation %s = %q, want %q", key, annotations.Annotations[key], dir)
		}
		want := "bundle/" + strings.TrimSuffix(dir, "/") + " /" + dir
		if !slices.Contains(copies, want) {
			t.Errorf("bundle.Dockerfile does not COPY %q (has %q)", want, copies)
		}
	}
	if annotations.Annotations["operators.operatorframework.io.bundle.mediatype.v1"] != "registry+v1" {
		t.Errorf("The bundle's media type is not registry+v1: %v", annotations.Annotations)
	}
}

// TestCSVDeploymentIsConfigManager: OLM runs the Deployment that `make deploy` runs, the one of
// config/manager as config/default builds it, with the same image, except for the webhook's
// certificate: OLM provides and mounts it, so the CSV's Deployment has no volume of its own for
// the certificate the operator copies from its Secret, and turns the rotation off.
func TestCSVDeploymentIsConfigManager(t *testing.T) {
	csv := readCSV(t)
	image := operatorImage(t, csv)
	deployment := &appsv1.Deployment{}
	fromUnstructured(t, findObject(t, kustomizeBuild(t, "config/default", image), "Deployment"), deployment)
	pod := &deployment.Spec.Template.Spec
	if len(pod.Volumes) != 1 || pod.Volumes[0].EmptyDir == nil || len(pod.Containers[0].VolumeMounts) != 1 {
		t.Fatalf("config/default's Deployment should have one volume, the emptyDir of the webhook's certificate: volumes %+v", pod.Volumes)
	}
	pod.Volumes, pod.Containers[0].VolumeMounts = nil, nil
	// config/manifests adds --monitoring-objects (the bundle ships no monitoring object), and
	// hack/bundle --disable-cert-rotation (OLM makes the webhook's certificate).
	pod.Containers[0].Args = append(pod.Containers[0].Args, "--monitoring-objects", "--disable-cert-rotation")

	got := csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs[0]
	if got.Name != deployment.Name {
		t.Errorf("The CSV's Deployment is named %q, config/default's %q", got.Name, deployment.Name)
	}
	if diff := cmp.Diff(deployment.Spec, got.Spec); diff != "" {
		t.Errorf("The CSV's Deployment spec differs from config/default's; run `make bundle` (-kustomize +csv):\n%s", diff)
	}
	if diff := cmp.Diff(deployment.Labels, map[string]string(got.Label)); diff != "" {
		t.Errorf("The CSV's Deployment labels differ from config/default's (-kustomize +csv):\n%s", diff)
	}
}

// TestCSVPermissionsAreConfigRBAC: the CSV grants what config/rbac grants: the namespaced Role of
// the operator's namespace as permissions; the ClusterRole and, since a CSV cannot grant
// namespaced permissions elsewhere, the kube-system Role as clusterPermissions.
func TestCSVPermissionsAreConfigRBAC(t *testing.T) {
	csv := readCSV(t)
	objs := kustomizeBuild(t, "config/default", operatorImage(t, csv))
	namespace := findObject(t, objs, "Deployment").GetNamespace()
	// ClusterRoles that no binding refers to are granted by an administrator to others (the
	// metrics reader), not to the operator.
	bound := map[string]bool{}
	for _, obj := range objs {
		if obj.GetKind() == "ClusterRoleBinding" || obj.GetKind() == "RoleBinding" {
			name, _, _ := unstructured.NestedString(obj.Object, "roleRef", "name")
			bound[name] = true
		}
	}
	var wantNamespaced, wantCluster []rbacv1.PolicyRule
	for _, obj := range objs {
		switch obj.GetKind() {
		case "Role":
			role := &rbacv1.Role{}
			fromUnstructured(t, obj, role)
			if role.Namespace == namespace {
				wantNamespaced = append(wantNamespaced, role.Rules...)
			} else {
				wantCluster = append(wantCluster, role.Rules...)
			}
		case "ClusterRole":
			if !bound[obj.GetName()] {
				continue
			}
			role := &rbacv1.ClusterRole{}
			fromUnstructured(t, obj, role)
			wantCluster = append(wantCluster, role.Rules...)
		}
	}
	strategy := csv.Spec.InstallStrategy.StrategySpec
	account := strategy.DeploymentSpecs[0].Spec.Template.Spec.ServiceAccountName
	check := func(what string, perms []operatorsv1alpha1.StrategyDeploymentPermissions, want []rbacv1.PolicyRule) {
		t.Helper()
		if len(perms) != 1 || perms[0].ServiceAccountName != account {
			t.Fatalf("The CSV's %s: got %d entries, want 1 for the Deployment's ServiceAccount %q", what, len(perms), account)
		}
		sortRules := func(rules []rbacv1.PolicyRule) []rbacv1.PolicyRule {
			rules = slices.Clone(rules)
			slices.SortFunc(rules, func(a, b rbacv1.PolicyRule) int { return strings.Compare(a.String(), b.String()) })
			return rules
		}
		if diff := cmp.Diff(sortRules(want), sortRules(perms[0].Rules)); diff != "" {
			t.Errorf("The CSV's %s differ from config/rbac; run `make bundle` (-config +csv):\n%s", what, diff)
		}
	}
	check("permissions", strategy.Permissions, wantNamespaced)
	check("clusterPermissions", strategy.ClusterPermissions, wantCluster)
}

func fromUnstructured(t *testing.T, obj *unstructured.Unstructured, into any) {
	t.Helper()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, into); err != nil {
		t.Fatalf("Converting %s %s: %v", obj.GetKind(), obj.GetName(), err)
	}
}

// TestBundleCRDIsConfigCRD: the bundle ships the CRD that `make manifests` generates.
func TestBundleCRDIsConfigCRD(t *testing.T) {
	want := findObject(t, decodeYAML(t, readFile(t, crdBasesDir+"/scheduling.schedops.io_schedulerprofiles.yaml")), "CustomResourceDefinition")
	got := findObject(t, decodeYAML(t, readFile(t, "bundle/manifests/scheduling.schedops.io_schedulerprofiles.yaml")), "CustomResourceDefinition")
	if got.GetName() != want.GetName() {
		t.Errorf("The bundle's CRD is %q, config/crd's %q", got.GetName(), want.GetName())
	}
	if diff := cmp.Diff(want.Object["spec"], got.Object["spec"]); diff != "" {
		t.Errorf("The bundle's CRD spec differs from config/crd/bases; run `make bundle` (-config +bundle):\n%s", diff)
	}
	if diff := cmp.Diff(want.GetAnnotations(), got.GetAnnotations()); diff != "" {
		t.Errorf("The bundle's CRD annotations differ from config/crd/bases (-config +bundle):\n%s", diff)
	}
	if owned := csvOwnedNames(readCSV(t)); !slices.Contains(owned, want.GetName()) {
		t.Errorf("The CSV owns %v, not the CRD %s", owned, want.GetName())
	}
}

func csvOwnedNames(csv *operatorsv1alpha1.ClusterServiceVersion) []string {
	var names []string
	for _, d := range csv.Spec.CustomResourceDefinitions.Owned {
		names = append(names, d.Name)
	}
	return names
}

// TestCSVImagesAreRelated: every image the CSV names is in relatedImages, so that mirroring the
// related images is enough for a disconnected cluster; and the scheduler image is there.
func TestCSVImagesAreRelated(t *testing.T) {
	csv := readCSV(t)
	related := map[string]bool{}
	relatedNames := map[string]string{}
	for _, r := range csv.Spec.RelatedImages {
		related[r.Image] = true
		relatedNames[r.Name] = r.Image
	}
	var images []string
	if image := csv.Annotations["containerImage"]; image != "" {
		images = append(images, image)
	}
	for _, d := range csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs {
		pod := d.Spec.Template.Spec
		for _, c := range slices.Concat(pod.InitContainers, pod.Containers) {
			images = append(images, c.Image)
			for _, env := range c.Env {
				if strings.HasPrefix(env.Name, "RELATED_IMAGE_") {
					images = append(images, env.Value)
				}
			}
		}
	}
	if len(images) == 0 {
		t.Fatal("The CSV names no image")
	}
	for _, image := range images {
		if !related[image] {
			t.Errorf("Image %q of the CSV is not in relatedImages %v", image, csv.Spec.RelatedImages)
		}
	}
	scheduler := envValue(csv.Spec.InstallStrategy.StrategySpec.DeploymentSpecs[0].Spec.Template.Spec.Containers[0], "RELATED_IMAGE_SCHEDULER")
	if scheduler == "" || relatedNames["scheduler"] != scheduler {
		t.Errorf("relatedImages %v has no entry \"scheduler\" for RELATED_IMAGE_SCHEDULER %q", csv.Spec.RelatedImages, scheduler)
	}
	// One image holds both binaries: by default the scheduler runs from the operator's image.
	if op := operatorImage(t, csv); scheduler != op {
		t.Errorf("RELATED_IMAGE_SCHEDULER is %q, want the operator's image %q", scheduler, op)
	}
}

func envValue(c corev1.Container, name string) string {
	for _, env := range c.Env {
		if env.Name == name {
			return env.Value
		}
	}
	return ""
}
