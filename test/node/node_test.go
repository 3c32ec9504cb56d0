package node

import (
	"archive/tar"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/internal/operatorenv"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
	"github.com/schedops/scheduler-profile-operator/test/framework"
)

// operatorPodLabels select the operator's pod (config/manager).
var operatorPodLabels = operatorenv.OperatorPodLabels

// tarballImageID returns the ID of the image in a `docker save` tarball: the digest of its config.
func tarballImageID(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", fmt.Errorf("opening the image (run `make image`): %w", err)
	}
	defer func() { _ = f.Close() }()
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return "", fmt.Errorf("%s has no manifest.json", path)
		}
		if err != nil {
			return "", err
		}
		if hdr.Name != "manifest.json" {
			continue
		}
		var manifest []struct{ Config string }
		if err := json.NewDecoder(tr).Decode(&manifest); err != nil || len(manifest) != 1 {
			return "", fmt.Errorf("manifest.json of %s: %v (%d images)", path, err, len(manifest))
		}
		return manifest[0].Config, nil
	}
}

// checkRunsImage fails the test unless the pod's containers run the image of `make image`: the
// runtime's image ID in the pod status is the tarball's.
func checkRunsImage(t *testing.T, pod *corev1.Pod) {
	t.Helper()
	if len(pod.Status.ContainerStatuses) == 0 {
		t.Fatalf("Pod %s has no container status", pod.Name)
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if !strings.HasSuffix(cs.ImageID, strings.TrimPrefix(imageID, "sha256:")) {
			t.Errorf("Container %s of %s runs image ID %q, want the tarball's %s", cs.Name, pod.Name, cs.ImageID, imageID)
		}
		if cs.State.Running == nil || !cs.Ready {
			t.Errorf("Container %s of %s is not running and ready: %+v", cs.Name, pod.Name, cs.State)
		}
	}
}

// containerProcess finds, on this host, the process of a container whose command line starts with
// argv0 and contains marker, and returns /proc/<pid>.
func containerProcess(t *testing.T, argv0, marker string) string {
	t.Helper()
	var found string
	testutil.Eventually(t, 10*time.Second, "the process "+argv0+" of the container", func(context.Context) error {
		dirs, _ := filepath.Glob("/proc/[0-9]*")
		for _, d := range dirs {
			cmdline, err := os.ReadFile(filepath.Join(d, "cmdline"))
			if err != nil {
				continue
			}
			args := strings.Split(string(cmdline), "\x00")
			if args[0] == argv0 && strings.Contains(string(cmdline), marker) {
				found = d
				return nil
			}
		}
		return errors.New("not found")
	})
	return found
}

// TestOperatorRunsFromImage: the operator installed by `make deploy` runs as a container of the
// image `make image` built, on the real node, as the image's nonroot user, on a read-only root
// file system, in a namespace that enforces the restricted Pod Security Standard.
func TestOperatorRunsFromImage(t *testing.T) {
	pods := realNodePods(t, operatorPodLabels)
	if len(pods) != 1 {
		t.Fatalf("%d operator pods, want 1", len(pods))
	}
	checkRunsImage(t, &pods[0])

	proc := containerProcess(t, "/manager", "--leader-elect")
	status, err := os.ReadFile(filepath.Join(proc, "status"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(status), "\nUid:\t65532\t65532\t65532\t65532\n") {
		t.Errorf("The operator's process does not run as 65532 (the image's USER):\n%s", status)
	}
	mounts, err := os.ReadFile(filepath.Join(proc, "mounts"))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(mounts), "\n") {
		if f := strings.Fields(line); len(f) > 3 && f[1] == "/" && !strings.HasPrefix(f[3], "ro") {
			t.Errorf("The operator's root file system is mounted %s, want ro (readOnlyRootFilesystem)", f[3])
		}
	}

	ns := &corev1.Namespace{}
	if err := k8s.Get(t.Context(), types.NamespacedName{Name: namespace}, ns); err != nil {
		t.Fatal(err)
	}
	if got := ns.Labels["pod-security.kubernetes.io/enforce"]; got != "restricted" {
		t.Errorf("Namespace %s enforces Pod Security %q, want restricted", namespace, got)
	}
	privileged := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "privileged", Namespace: namespace},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: img,
			SecurityContext: &corev1.SecurityContext{Privileged: new(true)}}}},
	}
	err = k8s.Create(t.Context(), privileged, client.DryRunAll)
	if err == nil || !strings.Contains(err.Error(), "violates PodSecurity") {
		t.Errorf("A privileged pod in %s: %v, want refused by Pod Security admission", namespace, err)
	}
}

// workloadPod is a pod of a test for schedulerName, for the kwok nodes only.
func workloadPod(test, name, schedulerName string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceDefault, Labels: map[string]string{testLabel: test}},
		Spec: corev1.PodSpec{
			SchedulerName: schedulerName,
			NodeSelector:  operatorenv.KwokNodeSelector(),
			Tolerations:   []corev1.Toleration{operatorenv.KwokToleration()},
			Containers:    []corev1.Container{{Name: "c", Image: "workload"}},
		},
	}
}

// deletePods deletes the workload pods of a test when it ends.
func deletePods(t *testing.T, test string) {
	t.Cleanup(func() {
		_ = k8s.DeleteAllOf(context.Background(), &corev1.Pod{}, client.InNamespace(metav1.NamespaceDefault),
			client.MatchingLabels{testLabel: test}, client.GracePeriodSeconds(0))
	})
}

// waitAvailable waits until the profile says Available=True and returns it.
func waitAvailable(t *testing.T, name string, timeout time.Duration) *schedulingv1alpha1.SchedulerProfile {
	t.Helper()
	p := &schedulingv1alpha1.SchedulerProfile{}
	testutil.Eventually(t, timeout, "profile "+name+" to be available", func(ctx context.Context) error {
		if err := k8s.Get(ctx, types.NamespacedName{Name: name}, p); err != nil {
			return err
		}
		if c := meta.FindStatusCondition(p.Status.Conditions, schedulingv1alpha1.ConditionAvailable); c == nil || c.Status != metav1.ConditionTrue || c.ObservedGeneration != p.Generation {
			return fmt.Errorf("conditions %+v", p.Status.Conditions)
		}
		return nil
	})
	return p
}

// TestSamples: the samples applied with kubectl (through the webhook's Service) are served by
// schedulers that run as containers of our image on the real node, with the ServiceAccount tokens
// the kubelet mounts, and bind pods of each schedulerName onto the kwok nodes.
func TestSamples(t *testing.T) {
	start := time.Now()
	// The first call of the webhook through its Service can meet an endpoint that kube-proxy has not
	// programmed yet ("no route to host"): applyKubectl tries it again.
	applyKubectl(t, "", "-k", filepath.Join(paths.Root, "config", "samples"))
	// The samples' profiles and their schedulerNames.
	names := map[string]string{"binpack": "binpack", "batch-pool": "batch-pool", "spread": "zone-spread", "shared-binpack": "shared-binpack", "shared-spread": "shared-spread"}
	for name := range names {
		waitAvailable(t, name, 3*time.Minute)
	}
	t.Logf("the %d sample profiles were available %s after kubectl apply", len(names), time.Since(start).Round(100*time.Millisecond))

	// Available means a replica serves; the standbys of batch-pool (replicas: 2) may still be
	// starting, so wait for every replica before checking each pod.
	testutil.Eventually(t, 2*time.Minute, "every replica of the samples' schedulers", func(ctx context.Context) error {
		deps, err := schedulerDeployments(ctx)
		if err != nil {
			return err
		}
		for _, d := range deps {
			if err := deploymentRolled(ctx, d.Name, ""); err != nil {
				return err
			}
		}
		return nil
	})
	var pods corev1.PodList
	if err := k8s.List(t.Context(), &pods, client.InNamespace(namespace), client.HasLabels{"app.kubernetes.io/managed-by"}); err != nil {
		t.Fatal(err)
	}
	schedulers := 0
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Labels["control-plane"] == "controller-manager" || p.DeletionTimestamp != nil {
			continue
		}
		schedulers++
		if p.Spec.NodeName != realNode {
			t.Errorf("Scheduler pod %s runs on %q, want the real node", p.Name, p.Spec.NodeName)
		}
		checkRunsImage(t, p)
	}
	// binpack 1, batch-pool 2 (replicas: 2), spread 1, shared 1.
	if schedulers != 5 {
		t.Errorf("%d scheduler pods, want 5", schedulers)
	}

	deletePods(t, "samples")
	for name, schedulerName := range names {
		pod := workloadPod("samples", "samples-"+name, schedulerName)
		if err := k8s.Create(t.Context(), pod); err != nil {
			t.Fatal(err)
		}
		testutil.Eventually(t, 30*time.Second, "pod "+pod.Name+" to be bound", func(ctx context.Context) error {
			if err := k8s.Get(ctx, client.ObjectKeyFromObject(pod), pod); err != nil {
				return err
			}
			if !strings.HasPrefix(pod.Spec.NodeName, "kwok-") {
				return fmt.Errorf("node %q", pod.Spec.NodeName)
			}
			return nil
		})
		if name == "batch-pool" && pod.Spec.NodeName != "kwok-0" && pod.Spec.NodeName != "kwok-1" {
			t.Errorf("The batch-pool pod landed on %s, outside pool batch (kwok-0, kwok-1)", pod.Spec.NodeName)
		}
	}
}

// maxRolloutGap bounds the longest time without a binding while a scheduler rolls on the real
// node. The new pod starts beside the old one (surge first) and becomes ready at a readiness probe
// (every 5 s) once its caches are synced; only then is the old one stopped, and it releases its
// lease, which the new one takes at its next retry (1 s, jitter 1.2): 2.2 s, plus the binding and
// a margin for a loaded 2-core machine. A standby that is not ready when the old pod stops would
// leave pods waiting for the 15 s lease duration.
const maxRolloutGap = 5 * time.Second

// TestRolloutGap: pods of the profile's schedulerName created every 200 ms keep being bound while a
// change of the profile rolls its scheduler Deployment on the real node.
func TestRolloutGap(t *testing.T) {
	const name = "node-gap"
	profileFor := func(strategy string) string {
		return fmt.Sprintf(`apiVersion: scheduling.schedops.io/v1alpha1
kind: SchedulerProfile
metadata: {name: %s}
spec:
  pluginConfig:
  - name: NodeResourcesFit
    args: {scoringStrategy: {type: %s}}
`, name, strategy)
	}
	apply := func(doc string) {
		t.Helper()
		applyKubectl(t, doc, "-f", "-")
	}
	apply(profileFor("LeastAllocated"))
	p := waitAvailable(t, name, 2*time.Minute)
	first := p.Status.ConfigHash
	t.Cleanup(func() { _ = k8s.Delete(context.Background(), p) })
	deletePods(t, name)

	bound := framework.WatchBindings(t, cfg, k8s, metav1.NamespaceDefault, map[string]string{testLabel: name})
	stopPods := framework.CreatePods(t, k8s, 200*time.Millisecond, func(i int) *corev1.Pod {
		return workloadPod(name, fmt.Sprintf("%s-%04d", name, i), name)
	})
	time.Sleep(2 * time.Second)
	start := time.Now()
	apply(profileFor("MostAllocated"))
	testutil.Eventually(t, 2*time.Minute, "the new revision to be available", func(ctx context.Context) error {
		if err := k8s.Get(ctx, types.NamespacedName{Name: name}, p); err != nil {
			return err
		}
		if p.Status.ConfigHash == first || p.Status.LastAvailableRevision == "" {
			return fmt.Errorf("config %s", p.Status.ConfigHash)
		}
		return deploymentRolled(ctx, p.Status.DeploymentName, "")
	})
	rolled := time.Since(start)
	time.Sleep(2 * time.Second)
	created := stopPods()
	gap, at := framework.LongestGap(bound.Wait(t, created, time.Minute))
	t.Logf("%d pods created every 200 ms; the rollout on the real node took %s; longest gap between bindings %s, ending at %s",
		len(created), rolled.Round(100*time.Millisecond), gap.Round(10*time.Millisecond), at.Format("15:04:05.000"))
	if gap >= maxRolloutGap {
		t.Errorf("No pod was bound for %s during the rollout, want under %s", gap, maxRolloutGap)
	}
}

// deploymentRolled returns nil once the scheduler Deployment has rolled out its current template
// (with image, when not empty): every replica updated and available, none left of older ones.
func deploymentRolled(ctx context.Context, name, image string) error {
	d := &appsv1.Deployment{}
	if err := k8s.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, d); err != nil {
		return err
	}
	if image != "" && d.Spec.Template.Spec.Containers[0].Image != image {
		return fmt.Errorf("%s runs image %s, want %s", name, d.Spec.Template.Spec.Containers[0].Image, image)
	}
	if !rolledOut(d) {
		return fmt.Errorf("%s: generation %d observed %d, replicas %d updated %d available %d", name, d.Generation,
			d.Status.ObservedGeneration, d.Status.Replicas, d.Status.UpdatedReplicas, d.Status.AvailableReplicas)
	}
	return nil
}

// rolledOut reports whether every replica of the Deployment's current template is available.
func rolledOut(d *appsv1.Deployment) bool {
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	s := d.Status
	return s.ObservedGeneration >= d.Generation && s.UpdatedReplicas == want && s.AvailableReplicas == want && s.Replicas == want
}

// refusesInvalid checks that the webhook of the install under test refuses an invalid profile,
// named <prefix>-broken; whose names the install in the failure ("the chart's").
func refusesInvalid(t *testing.T, prefix, whose string) {
	t.Helper()
	broken := testutil.MakeProfile(prefix+"-broken").PluginConfig("NodeResourcesFit", `{"scoringStrategy":{"type":"Most"}}`).Obj()
	const want = `spec.pluginConfig[0].args.scoringStrategy.type: Unsupported value: "Most"`
	testutil.Eventually(t, time.Minute, whose+" webhook to refuse an invalid profile", func(ctx context.Context) error {
		err := k8s.Create(ctx, broken.DeepCopy(), client.DryRunAll)
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), want) {
			return fmt.Errorf("dry-run create of an invalid profile: %v", err)
		}
		return nil
	})
}
