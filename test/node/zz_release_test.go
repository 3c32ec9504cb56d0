package node

// This file's test runs after the OLM bundle's (the tests of a package run in the order of their
// files): it installs the release of make release in place of what the others installed.

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/schedops/scheduler-profile-operator/internal/operatorenv"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
)

// TestReleaseOnTheRealNode installs the release of make release as docs/tasks/install.md says:
// its image archive loaded into the node's containerd (what `kind load image-archive` does) and
// `kubectl apply --server-side -f install.yaml`, which names the image by digest. The operator
// runs on the real node from that archive, never pulled (the node reaches no registry); its
// webhook refuses an invalid profile through its Service; the binpack sample rolls out a
// scheduler of the same pinned image, which binds a pod; a namespace labelled with its name is
// assigned by the policy the operator keeps.
func TestReleaseOnTheRealNode(t *testing.T) {
	ctx := t.Context()
	if err := k8s.Get(ctx, types.NamespacedName{Name: namespace}, &corev1.Namespace{}); err == nil {
		undeploy(t)
	}
	install := filepath.Join(releaseDir, releaseInstall)
	ref := releaseImageRef(t, install)
	_, digest, pinned := strings.Cut(ref, "@")
	if !pinned || !strings.HasPrefix(ref, releaseIMG+"@sha256:") {
		t.Fatalf("install.yaml runs %q, want %s pinned by digest", ref, releaseIMG)
	}
	// An imported archive names its image by tag; the CRI resolves a reference by digest (a tag
	// beside the digest is dropped) only to an image of that name, which a pull from the
	// registry would have created.
	repo, _, _ := strings.Cut(releaseIMG, ":v")
	if err := cluster.TagImage(ctx, releaseIMG, repo+"@"+digest); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	if out, err := runKubectl(t, "", "apply", "--server-side", "-f", install); err != nil {
		t.Fatalf("kubectl apply --server-side -f install.yaml: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		_, _ = runKubectl(t, "", "delete", "schedulerprofiles", "--all", "--wait")
		_, _ = runKubectl(t, "", "delete", "--ignore-not-found", "--wait", "-f", install)
	})
	// Ready once the kubelet has refreshed the webhook certificate's Secret volume in its pod,
	// which the operator writes on its first start: up to a few of the kubelet's sync periods.
	if err := operatorenv.WaitOperator(ctx, k8s, cluster, paths, 1, 2*operatorenv.DeployTimeout); err != nil {
		t.Fatal(err)
	}
	t.Logf("the release's operator was available %s after kubectl apply", time.Since(start).Round(100*time.Millisecond))
	ops := realNodePods(t, map[string]string{"control-plane": "controller-manager"})
	if len(ops) != 1 {
		t.Fatalf("%d operator pods, want 1", len(ops))
	}
	op := &ops[0]
	if op.Spec.Containers[0].Image != ref {
		t.Errorf("The operator's pod runs %q, want %q", op.Spec.Containers[0].Image, ref)
	}
	runsRelease(t, op, digest)

	refusesInvalid(t, "release", "the release's")

	sample := filepath.Join(paths.Root, "config", "samples", "scheduling_v1alpha1_schedulerprofile_binpack.yaml")
	applyKubectl(t, "", "-f", sample)
	waitAvailable(t, "binpack", 3*time.Minute)
	var schedulers corev1.PodList
	if err := k8s.List(ctx, &schedulers, client.InNamespace(namespace), client.HasLabels{"app.kubernetes.io/managed-by"}); err != nil {
		t.Fatal(err)
	}
	for _, p := range schedulers.Items {
		if p.Labels["control-plane"] == "controller-manager" || p.DeletionTimestamp != nil {
			continue
		}
		if p.Spec.NodeName != realNode {
			t.Errorf("Scheduler pod %s runs on %q, want the real node", p.Name, p.Spec.NodeName)
		}
		if p.Spec.Containers[0].Image != ref {
			t.Errorf("Scheduler pod %s runs %q, want the release's %q", p.Name, p.Spec.Containers[0].Image, ref)
		}
		runsRelease(t, &p, digest)
	}
	deletePods(t, "release")
	pod := workloadPod("release", "release-binpack", "binpack")
	if err := k8s.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, time.Minute, "the binpack pod to be bound", func(ctx context.Context) error {
		if err := k8s.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
			return err
		}
		if !strings.HasPrefix(pod.Spec.NodeName, "kwok-") {
			return fmt.Errorf("node %q", pod.Spec.NodeName)
		}
		return nil
	})
	// The release's operator keeps the assignment policies: a labelled namespace is assigned.
	assignsThroughPolicy(t, "release-assigned", "binpack")
}

// runsRelease checks that every container of pod runs, ready, the image of the release's digest:
// the kubelet reports the name by digest it found the image under.
func runsRelease(t *testing.T, pod *corev1.Pod, digest string) {
	t.Helper()
	for _, cs := range pod.Status.ContainerStatuses {
		if !strings.HasSuffix(cs.ImageID, "@"+digest) {
			t.Errorf("Container %s of %s runs image ID %q, want the release's %s", cs.Name, pod.Name, cs.ImageID, digest)
		}
		if cs.State.Running == nil || !cs.Ready {
			t.Errorf("Container %s of %s is not running and ready: %+v", cs.Name, pod.Name, cs.State)
		}
	}
}

// releaseImageRef is the image of the operator's Deployment in install.yaml.
func releaseImageRef(t *testing.T, install string) string {
	t.Helper()
	f, err := os.Open(install)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	decoder := yaml.NewYAMLOrJSONDecoder(f, 4096)
	for {
		var d appsv1.Deployment
		if err := decoder.Decode(&d); err != nil {
			t.Fatalf("install.yaml has no Deployment %s: %v", operatorDeployment, err)
		}
		if d.Kind == "Deployment" && d.Name == operatorDeployment {
			return d.Spec.Template.Spec.Containers[0].Image
		}
	}
}
