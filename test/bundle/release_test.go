package bundle

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/controllers"
	"github.com/schedops/scheduler-profile-operator/internal/operatorenv"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
	"github.com/schedops/scheduler-profile-operator/test/framework"
)

// The release that TestRelease makes, and its files (see the release target of the Makefile).
const (
	releaseVersion = "0.1.0"
	releaseIMG     = "registry.example/scheduler-profile-operator:v0.1.0"
	releaseInstall = "install.yaml"
	releaseImage   = "scheduler-profile-operator-image.tar"
	releaseBundle  = "scheduler-profile-operator-bundle"
	// releaseCatalog is the file-based catalog of the release's bundle (hack/catalog).
	releaseCatalog = "scheduler-profile-operator-catalog.json"
	releaseSums    = "SHA256SUMS"
	// releaseChart is the Helm chart that helm package writes for the version.
	releaseChart = "scheduler-profile-operator-" + releaseVersion + ".tgz"
	// releaseSample is the profile the README applies first.
	releaseSample = "config/samples/scheduling_v1alpha1_schedulerprofile_binpack.yaml"
	// releaseFieldManager is kubectl's field manager: the test applies install.yaml as
	// `kubectl apply --server-side -f install.yaml` does.
	releaseFieldManager = "kubectl"
)

// TestRelease runs `make release VERSION=0.1.0 IMG=registry.example/...:v0.1.0` into a temporary
// directory and installs its install.yaml on envtest as docs/tasks/install.md says.
//
// The files: SHA256SUMS verifies every other file; the image archive holds the image of make
// image (the same config and layers as bin/image.tar) under one manifest digest, as an OCI
// layout and as a `docker save` archive named IMG, and that digest is the one
// go-containerregistry gives bin/image.tar (`bin/image --digest`, what `crane push` uploads);
// install.yaml is config/default as make deploy builds it with the image IMG@<digest>, in the
// Deployment and in RELATED_IMAGE_SCHEDULER; the bundle passes OLM's validators and names only
// that image.
//
// The install: every object of install.yaml is applied server-side and admitted, and so is the
// operator's pod under its namespace's Pod Security; then the operator runs in the test process
// with the settings of install.yaml's Deployment (its namespace, scheduler image, leader
// election, certificate rotation) as its ServiceAccount, so that every request goes through the
// RBAC of install.yaml. It writes the webhook's certificate into install.yaml's Secret and its CA
// into install.yaml's ValidatingWebhookConfiguration, its webhook refuses an invalid profile, and
// the sample profile binpack becomes ConfigValid with a scheduler Deployment of the pinned image.
//
// Not checked here, for envtest has no kubelet, no controller-manager and no Service network:
// that the Deployments become Available and the image runs (the real-node tier runs make image's
// image, installed by make deploy), that the apiserver reaches the webhook through its Service
// (the configuration is changed to call the operator's port on localhost, and the test copies the
// Secret into the certificate directory as the kubelet mounts it), the probes and the metrics
// endpoint.
func TestRelease(t *testing.T) {
	dist := makeRelease(t)
	checkSums(t, dist)
	ref := checkReleaseImage(t, filepath.Join(dist, releaseImage))
	if want := releaseIMG + "@" + imageToolDigest(t, path("bin/image.tar")); ref != want {
		t.Errorf("The release pins %s; go-containerregistry's digest of make image's tarball gives %s", ref, want)
	}
	// The catalog holds the release's bundle, whose CSV runs the pinned image.
	if objects := catalogObjects(t, readAbs(t, filepath.Join(dist, releaseCatalog))); !strings.Contains(objects, `"kind":"ClusterServiceVersion"`) || !strings.Contains(objects, ref) {
		t.Errorf("%s holds no bundle whose CSV runs the image %s", releaseCatalog, ref)
	}
	objs := decodeYAML(t, readAbs(t, filepath.Join(dist, releaseInstall)))
	if diff := cmp.Diff(kustomizeBuild(t, "config/default", ref), objs); diff != "" {
		t.Errorf("install.yaml is not config/default as make deploy builds it with the image %s (-deploy +install.yaml):\n%s", ref, diff)
	}
	deployment := &appsv1.Deployment{}
	fromUnstructured(t, findObject(t, objs, "Deployment"), deployment)
	manager := deployment.Spec.Template.Spec.Containers[0]
	if manager.Image != ref || envValue(manager, "RELATED_IMAGE_SCHEDULER") != ref {
		t.Errorf("install.yaml runs %q with RELATED_IMAGE_SCHEDULER %q, want both %q", manager.Image, envValue(manager, "RELATED_IMAGE_SCHEDULER"), ref)
	}
	checkReleaseBundle(t, filepath.Join(dist, releaseBundle+".tar.gz"), ref)

	t.Run("installs", func(t *testing.T) { installRelease(t, objs, deployment, ref) })
}

// makeRelease runs make release into a temporary directory and returns it. The image is packed
// into a temporary tarball as well: bin/image.tar, which the real-node tier reads, keeps its tag.
func makeRelease(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	dist := filepath.Join(t.TempDir(), "dist")
	cmd := exec.CommandContext(t.Context(), "make", "-s", "-C", root, "release", "VERSION="+releaseVersion, "IMG="+releaseIMG,
		"IMAGE_TAR="+filepath.Join(t.TempDir(), "image.tar"), "DIST="+dist)
	// Not the settings of a make that runs this test (its jobs, its command line's variables).
	cmd.Env = append(os.Environ(), "MAKEFLAGS=", "MAKELEVEL=")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make release: %v\n%s", err, out)
	}
	return dist
}

// checkSums checks that SHA256SUMS lists every other file of dist with its SHA-256, in the format
// of `sha256sum -c`.
func checkSums(t *testing.T, dist string) {
	t.Helper()
	entries, err := os.ReadDir(dist)
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, e := range entries {
		files = append(files, e.Name())
	}
	if diff := cmp.Diff([]string{releaseSums, releaseInstall, releaseChart, releaseBundle + ".tar.gz", releaseCatalog, releaseImage}, files); diff != "" {
		t.Errorf("Files of the release (-want +got):\n%s", diff)
	}
	listed := map[string]bool{}
	sc := bufio.NewScanner(bytes.NewReader(readAbs(t, filepath.Join(dist, releaseSums))))
	for sc.Scan() {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		if !ok {
			t.Errorf("%s: %q is not `<sha256>  <file>`", releaseSums, sc.Text())
			continue
		}
		listed[name] = true
		got := sha256.Sum256(readAbs(t, filepath.Join(dist, name)))
		if hex.EncodeToString(got[:]) != sum {
			t.Errorf("%s: %s has SHA-256 %x, the list says %s", releaseSums, name, got, sum)
		}
	}
	for _, name := range files {
		if name != releaseSums && !listed[name] {
			t.Errorf("%s does not list %s", releaseSums, name)
		}
	}
}

// checkReleaseImage reads the release's image archive as a container runtime does, with the
// standard library only: as an OCI layout (oci-layout, index.json and the blobs they name, their
// digests checked) and as a `docker save` archive. Its image must be make image's. It returns the
// image's reference by digest, IMG@<manifest digest>.
func checkReleaseImage(t *testing.T, file string) string {
	t.Helper()
	files := map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(readAbs(t, file)))
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatalf("Reading %s: %v", file, err)
		}
		files[hdr.Name] = data
	}
	type descriptor struct {
		MediaType   string
		Digest      string
		Size        int
		Annotations map[string]string
	}
	blob := func(d descriptor) []byte {
		t.Helper()
		data, ok := files["blobs/sha256/"+strings.TrimPrefix(d.Digest, "sha256:")]
		sum := sha256.Sum256(data)
		if !ok || "sha256:"+hex.EncodeToString(sum[:]) != d.Digest || len(data) != d.Size {
			t.Fatalf("The blob %s (%d bytes) of %s is missing or has another digest or size", d.Digest, d.Size, file)
		}
		return data
	}
	if string(files["oci-layout"]) != `{"imageLayoutVersion":"1.0.0"}` {
		t.Errorf("oci-layout of %s: %q", file, files["oci-layout"])
	}
	var index struct{ Manifests []descriptor }
	if err := json.Unmarshal(files["index.json"], &index); err != nil || len(index.Manifests) != 1 {
		t.Fatalf("index.json of %s: %v, %d manifests, want 1", file, err, len(index.Manifests))
	}
	md := index.Manifests[0]
	if name := md.Annotations["io.containerd.image.name"]; name != releaseIMG {
		t.Errorf("The index names the image %q for containerd, want %q", name, releaseIMG)
	}
	var manifest struct {
		Config descriptor
		Layers []descriptor
	}
	if err := json.Unmarshal(blob(md), &manifest); err != nil {
		t.Fatalf("The manifest of %s: %v", file, err)
	}
	// The same image as make image's: its config and layers, byte for byte.
	built := readImageTarball(t, path("bin/image.tar"))
	released := readImageTarball(t, file)
	var config imageConfig
	if err := json.Unmarshal(blob(manifest.Config), &config); err != nil || !cmp.Equal(config, built.config) {
		t.Errorf("The config of the manifest (%v) is not make image's: %+v, want %+v", err, config, built.config)
	}
	for _, l := range manifest.Layers {
		blob(l)
	}
	if !sameFiles(released.files, built.files) || !cmp.Equal(released.config, built.config) {
		t.Error("The image of the release's manifest.json is not make image's")
	}
	if !slices.Equal(released.repoTags, []string{releaseIMG}) {
		t.Errorf("manifest.json tags the image %q, want %q", released.repoTags, releaseIMG)
	}
	// `crane push` reads manifest.json: it must compute the manifest the index holds.
	if got := imageToolDigest(t, file); got != md.Digest {
		t.Errorf("go-containerregistry reads the image of %s as %s, its index as %s", file, got, md.Digest)
	}
	return releaseIMG + "@" + md.Digest
}

// sameFiles reports whether two images hold the same files, with the same modes and contents.
func sameFiles(a, b map[string]imageFile) bool {
	return maps.EqualFunc(a, b, func(x, y imageFile) bool { return x.mode == y.mode && bytes.Equal(x.data, y.data) })
}

// imageToolDigest is the manifest digest of the image of an archive as go-containerregistry
// reads it: `bin/image --digest`, the tool of make image.
func imageToolDigest(t *testing.T, archive string) string {
	t.Helper()
	out, err := exec.CommandContext(t.Context(), path("bin/image"), "--digest", archive).Output()
	if err != nil {
		t.Fatalf("bin/image --digest %s (make image builds bin/image): %v", archive, err)
	}
	return strings.TrimSpace(string(out))
}

// checkReleaseBundle unpacks the bundle's tarball, validates the bundle with OLM's validators and
// checks that its CSV names the image by digest only.
func checkReleaseBundle(t *testing.T, file, ref string) {
	t.Helper()
	dir := t.TempDir()
	zr, err := gzip.NewReader(bytes.NewReader(readAbs(t, file)))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(hdr.Name, releaseBundle+"/") || strings.Contains(hdr.Name, "..") {
			t.Fatalf("The bundle's tarball holds %q, outside %s/", hdr.Name, releaseBundle)
		}
		target := filepath.Join(dir, filepath.FromSlash(hdr.Name))
		if hdr.Typeflag == tar.TypeDir {
			if err := os.MkdirAll(target, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(target, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	root := filepath.Join(dir, releaseBundle)
	if _, err := os.Stat(filepath.Join(root, "bundle.Dockerfile")); err != nil {
		t.Errorf("The bundle's tarball has no bundle.Dockerfile: %v", err)
	}
	errs, warns := validateBundle(t, filepath.Join(root, "bundle"))
	for _, e := range slices.Concat(errs, warns) {
		t.Errorf("The release's bundle: %v", e)
	}
	csv, err := framework.ReadCSV(filepath.Join(root, "bundle", "manifests", "scheduler-profile-operator.clusterserviceversion.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	images := []string{csv.Annotations["containerImage"], operatorImage(t, csv)}
	for _, r := range csv.Spec.RelatedImages {
		images = append(images, r.Image)
	}
	for _, image := range images {
		if image != ref {
			t.Errorf("The release's CSV names the image %q, want %q", image, ref)
		}
	}
	if csv.Spec.Version.String() != releaseVersion {
		t.Errorf("The release's CSV has version %s, want %s", csv.Spec.Version, releaseVersion)
	}
}

// installRelease applies install.yaml and runs the operator as its Deployment would; see
// TestRelease.
func installRelease(t *testing.T, objs []*unstructured.Unstructured, deployment *appsv1.Deployment, ref string) {
	admin := startEnv(t)
	c := newClient(t, admin)
	// envtest has no Service network: the webhooks call the operator's port on localhost.
	port := testutil.FreePort(t)
	applyInstall(t, admin, c, objs, port)
	checkInstalledPod(t, c, deployment, ref)

	certDir := t.TempDir()
	operatorCfg := framework.AsServiceAccount(admin, deployment.Namespace, deployment.Spec.Template.Spec.ServiceAccountName)
	framework.StartOperator(t, operatorCfg, installedOperatorOptions(t, deployment, port, certDir))
	secret := rotatedCertificate(t, c, deployment.Namespace)
	// The kubelet's part: the Secret mounted at the certificate directory.
	for _, key := range []string{"tls.crt", "tls.key"} {
		if err := os.WriteFile(filepath.Join(certDir, key), secret.Data[key], 0o600); err != nil {
			t.Fatal(err)
		}
	}
	refusedByWebhook(t, c)
	sampleRollsOut(t, c, deployment.Namespace, ref)
}

// applyInstall applies every object of install.yaml as `kubectl apply --server-side` does, the
// webhooks changed to call the port of localhost, and waits until the CRDs are established. The
// objects are deleted when the test ends.
func applyInstall(t *testing.T, admin *rest.Config, c client.Client, objs []*unstructured.Unstructured, port int) {
	t.Helper()
	ctx := t.Context()
	// The CRDs are those of the bundle, which an earlier test installed and deleted.
	var crds []string
	for _, obj := range objs {
		if obj.GetKind() == "CustomResourceDefinition" {
			crds = append(crds, obj.GetName())
		}
	}
	testutil.Eventually(t, waitTimeout, "the CRDs of an earlier test to be deleted", func(ctx context.Context) error {
		for _, name := range crds {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := c.Get(ctx, client.ObjectKey{Name: name}, crd); err == nil && crd.DeletionTimestamp != nil {
				return fmt.Errorf("CRD %s is being deleted", name)
			}
		}
		return nil
	})
	var applied []*unstructured.Unstructured
	t.Cleanup(func() {
		for _, obj := range slices.Backward(applied) {
			if obj.GetKind() == "Namespace" {
				deleteNamespace(t, admin, obj.GetName())
			} else {
				_ = c.Delete(context.Background(), obj)
			}
		}
	})
	for _, obj := range objs {
		obj = obj.DeepCopy()
		if obj.GetKind() == "ValidatingWebhookConfiguration" {
			callLocalhost(t, obj, port)
		}
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(obj), client.FieldOwner(releaseFieldManager)); err != nil {
			t.Fatalf("Applying %s %s: %v", obj.GetKind(), client.ObjectKeyFromObject(obj), err)
		}
		applied = append(applied, obj)
	}
	if err := operatorenv.WaitEstablished(ctx, c, crds...); err != nil {
		t.Fatal(err)
	}
}

// checkInstalledPod checks that the stored Deployment runs ref and that its pod, as a ReplicaSet
// would create it, is admitted in the operator's namespace, which enforces Pod Security.
func checkInstalledPod(t *testing.T, c client.Client, deployment *appsv1.Deployment, ref string) {
	t.Helper()
	stored := &appsv1.Deployment{}
	if err := c.Get(t.Context(), client.ObjectKeyFromObject(deployment), stored); err != nil {
		t.Fatal(err)
	}
	if got := stored.Spec.Template.Spec.Containers[0].Image; got != ref {
		t.Errorf("The stored Deployment runs %q, want %q", got, ref)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: stored.Namespace, Name: stored.Name + "-pod", Labels: stored.Spec.Template.Labels},
		Spec:       stored.Spec.Template.Spec,
	}
	if err := c.Create(t.Context(), pod, client.DryRunAll); err != nil {
		t.Errorf("Creating the operator's pod in namespace %s: %v", stored.Namespace, err)
	}
}

// sampleRollsOut creates the sample profile and waits until it is ConfigValid with a scheduler
// Deployment of the image ref: what envtest can show of a rollout.
func sampleRollsOut(t *testing.T, c client.Client, namespace, ref string) {
	t.Helper()
	profile := &schedulingv1alpha1.SchedulerProfile{}
	if err := yaml.UnmarshalStrict(readFile(t, releaseSample), profile); err != nil {
		t.Fatalf("Decoding %s: %v", releaseSample, err)
	}
	if err := c.Create(t.Context(), profile); err != nil {
		t.Fatalf("Creating SchedulerProfile %s: %v", profile.Name, err)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), profile) })
	testutil.Eventually(t, waitTimeout, "the sample profile ConfigValid, with a scheduler Deployment of the pinned image", func(ctx context.Context) error {
		p := &schedulingv1alpha1.SchedulerProfile{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(profile), p); err != nil {
			return err
		}
		if !meta.IsStatusConditionTrue(p.Status.Conditions, schedulingv1alpha1.ConditionConfigValid) || p.Status.DeploymentName == "" {
			return fmt.Errorf("conditions %+v, Deployment %q", p.Status.Conditions, p.Status.DeploymentName)
		}
		d := &appsv1.Deployment{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: p.Status.DeploymentName}, d); err != nil {
			return err
		}
		if got := d.Spec.Template.Spec.Containers[0].Image; got != ref {
			return fmt.Errorf("the scheduler runs %q, want %q", got, ref)
		}
		return nil
	})
}

// callLocalhost makes the webhooks of a ValidatingWebhookConfiguration call the path of their
// Service on the port of localhost, with no caBundle: the operator's rotation sets it.
func callLocalhost(t *testing.T, obj *unstructured.Unstructured, port int) {
	t.Helper()
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	fromUnstructured(t, obj, vwc)
	for i := range vwc.Webhooks {
		svc := vwc.Webhooks[i].ClientConfig.Service
		if svc == nil || svc.Path == nil {
			t.Fatalf("Webhook %s calls no Service path: %+v", vwc.Webhooks[i].Name, vwc.Webhooks[i].ClientConfig)
		}
		url := fmt.Sprintf("https://localhost:%d%s", port, *svc.Path)
		vwc.Webhooks[i].ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: &url}
	}
	u, err := toUnstructured(vwc)
	if err != nil {
		t.Fatal(err)
	}
	obj.Object["webhooks"] = u["webhooks"]
}

func toUnstructured(obj any) (map[string]any, error) {
	data, err := json.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var u map[string]any
	return u, json.Unmarshal(data, &u)
}

// installedOperatorOptions are the settings that install.yaml's Deployment gives the operator,
// as its flags and environment decide them, except where it serves its webhook: on a free port
// of localhost, with a certificate for localhost, from certDir.
func installedOperatorOptions(t *testing.T, deployment *appsv1.Deployment, port int, certDir string) controllers.ManagerOptions {
	t.Helper()
	c := deployment.Spec.Template.Spec.Containers[0]
	for _, arg := range c.Args {
		if strings.HasPrefix(arg, "--webhook-") || arg == "--disable-cert-rotation" || strings.HasPrefix(arg, "--enable-webhook") {
			t.Fatalf("The operator's argument %s changes its webhook's defaults, which this test assumes", arg)
		}
	}
	for _, env := range c.Env {
		if env.Name == "OPERATOR_NAMESPACE" && (env.ValueFrom == nil || env.ValueFrom.FieldRef == nil || env.ValueFrom.FieldRef.FieldPath != "metadata.namespace") {
			t.Errorf("OPERATOR_NAMESPACE is %+v, want the pod's namespace", env)
		}
	}
	return controllers.ManagerOptions{
		Namespace:      deployment.Namespace,
		SchedulerImage: envValue(c, "RELATED_IMAGE_SCHEDULER"),
		LeaderElection: slices.Contains(c.Args, "--leader-elect"),
		Webhook: &controllers.WebhookOptions{
			Host: "localhost", Port: port, CertDir: certDir, CertRotation: true, CertDNSName: "localhost",
			SecretName: controllers.DefaultWebhookSecret, ConfigName: controllers.DefaultWebhookConfigName, ServiceName: controllers.DefaultWebhookServiceName,
		},
	}
}

// rotatedCertificate waits until the operator has written its certificate into install.yaml's
// Secret and its CA into every webhook of install.yaml's configuration, and returns the Secret.
func rotatedCertificate(t *testing.T, c client.Client, namespace string) *corev1.Secret {
	t.Helper()
	secret := &corev1.Secret{}
	testutil.Eventually(t, waitTimeout, "the certificate in the Secret and its CA in the webhook configuration", func(ctx context.Context) error {
		if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: controllers.DefaultWebhookSecret}, secret); err != nil {
			return err
		}
		for _, key := range []string{"ca.crt", "tls.crt", "tls.key"} {
			if len(secret.Data[key]) == 0 {
				return fmt.Errorf("the Secret has no %s", key)
			}
		}
		vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
		if err := c.Get(ctx, client.ObjectKey{Name: controllers.DefaultWebhookConfigName}, vwc); err != nil {
			return err
		}
		for _, w := range vwc.Webhooks {
			if !bytes.Equal(w.ClientConfig.CABundle, secret.Data["ca.crt"]) {
				return fmt.Errorf("webhook %s has a caBundle of %d bytes, not the Secret's ca.crt", w.Name, len(w.ClientConfig.CABundle))
			}
		}
		return nil
	})
	return secret
}

// deleteNamespace deletes a namespace and finalizes it, the namespace controller's part: envtest
// runs none, and a namespace only deleted stays Terminating and refuses the objects of the next
// test that installs it. What is left in it stays in etcd.
func deleteNamespace(t *testing.T, rc *rest.Config, name string) {
	t.Helper()
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Error(err)
		return
	}
	ctx := context.Background()
	if err := cs.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("Deleting namespace %s: %v", name, err)
		return
	}
	ns, err := cs.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return
	}
	if err != nil {
		t.Errorf("Getting namespace %s: %v", name, err)
		return
	}
	ns.Spec.Finalizers = nil
	if _, err := cs.CoreV1().Namespaces().Finalize(ctx, ns, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
		t.Errorf("Finalizing namespace %s: %v", name, err)
	}
}

// readAbs reads a file by its path (readFile reads one of the repository).
func readAbs(t *testing.T, file string) []byte {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// catalogObjects are the manifests of the bundles of a file-based catalog (its olm.bundle.object
// properties, decoded), one after the other.
func catalogObjects(t *testing.T, data []byte) string {
	t.Helper()
	var out strings.Builder
	dec := json.NewDecoder(bytes.NewReader(data))
	for dec.More() {
		var blob struct {
			Schema     string `json:"schema"`
			Properties []struct {
				Type  string `json:"type"`
				Value struct {
					Data []byte `json:"data"`
				} `json:"value"`
			} `json:"properties"`
		}
		if err := dec.Decode(&blob); err != nil {
			t.Fatalf("Decoding the catalog: %v", err)
		}
		for _, p := range blob.Properties {
			if blob.Schema == "olm.bundle" && p.Type == "olm.bundle.object" {
				out.Write(p.Value.Data)
				out.WriteByte('\n')
			}
		}
	}
	return out.String()
}
