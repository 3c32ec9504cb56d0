package operatorenv

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/schedops/scheduler-profile-operator/internal/localcluster"
)

// The operator installed by `make deploy` on a cluster with a real node (localcluster's real-node
// mode): the operator and its schedulers run as containers there, and the workloads on kwok nodes.
// The real-node tier (test/node) and `make demo NODE=real` install it this way.

const (
	// OperatorDeployment is the operator's Deployment in Namespace, as config/default names it.
	OperatorDeployment = "scheduler-profile-operator-controller-manager"
	// KwokNodeKey is the label and the NoSchedule taint of the kwok nodes beside a real node:
	// the taint keeps the operator's and the schedulers' pods, which kwok would only pretend to
	// run, on the real node; workload pods tolerate it and select the kwok nodes by the label.
	KwokNodeKey = "node.schedops.io/kwok"
	// DeployTimeout bounds Deploy's wait for the operator: the image is imported, not pulled, so
	// it is the kubelet starting a container and the probes passing.
	DeployTimeout = 4 * time.Minute
)

// OperatorPodLabels select the operator's pod (config/manager).
var OperatorPodLabels = map[string]string{"control-plane": "controller-manager"}

// MarkKwok labels and taints kwok nodes with KwokNodeKey, so that only pods with
// KwokToleration and KwokNodeSelector land on them.
func MarkKwok(nodes ...*corev1.Node) {
	for _, n := range nodes {
		if n.Labels == nil {
			n.Labels = map[string]string{}
		}
		n.Labels[KwokNodeKey] = "true"
		n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: KwokNodeKey, Value: "true", Effect: corev1.TaintEffectNoSchedule})
	}
}

// KwokToleration lets a pod onto the nodes MarkKwok tainted.
func KwokToleration() corev1.Toleration {
	return corev1.Toleration{Key: KwokNodeKey, Operator: corev1.TolerationOpExists}
}

// KwokNodeSelector keeps a pod on the nodes MarkKwok labelled, off the real node.
func KwokNodeSelector() map[string]string { return map[string]string{KwokNodeKey: "true"} }

// Deploy installs the operator as a user does: `make deploy IMG=img` with the cluster's kubeconfig
// and the kubectl of paths.BinDir, adds args (if any) to its container, and waits until it is
// available (DeployTimeout). The image must be on the real node (RealNodeOptions.Images). It
// returns how long `make deploy` took: until the first pod was available and its webhook answered.
func Deploy(ctx context.Context, c client.Client, cluster *localcluster.Cluster, paths Paths, img string, args ...string) (time.Duration, error) {
	start := time.Now()
	if out, err := MakeCommand(ctx, cluster, paths, "deploy", img).CombinedOutput(); err != nil {
		return 0, fmt.Errorf("make deploy: %w\n%s", err, out)
	}
	made := time.Since(start)
	dep := &appsv1.Deployment{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: Namespace, Name: OperatorDeployment}, dep); err != nil {
		return made, err
	}
	if len(args) > 0 {
		base := dep.DeepCopy()
		container := &dep.Spec.Template.Spec.Containers[0]
		container.Args = append(container.Args, args...)
		// Patch writes the new generation into dep.
		if err := c.Patch(ctx, dep, client.MergeFrom(base)); err != nil {
			return made, err
		}
	}
	return made, WaitOperator(ctx, c, cluster, paths, dep.Generation, DeployTimeout)
}

// MakeCommand is `make -s TARGET IMG=img` in the repository with the cluster's kubeconfig and the
// kubectl of paths.BinDir, as a user runs make deploy and make undeploy.
func MakeCommand(ctx context.Context, cluster *localcluster.Cluster, paths Paths, target, img string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, "make", "-s", target, "IMG="+img)
	cmd.Dir = paths.Root
	cmd.Env = append(os.Environ(), "KUBECONFIG="+cluster.Kubeconfig(), "PATH="+paths.BinDir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return cmd
}

// WaitOperator waits until the operator's Deployment has observed generation and its one pod is
// available on the new template, and no other pod of it is left. On timeout the error carries the
// end of the operator's log.
func WaitOperator(ctx context.Context, c client.Client, cluster *localcluster.Cluster, paths Paths, generation int64, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var last string
	for {
		dep := &appsv1.Deployment{}
		err := c.Get(ctx, client.ObjectKey{Namespace: Namespace, Name: OperatorDeployment}, dep)
		if err == nil {
			s := dep.Status
			var pods corev1.PodList
			if err := c.List(ctx, &pods, client.InNamespace(Namespace), client.MatchingLabels(OperatorPodLabels)); err != nil {
				return err
			}
			// The old pod is gone too: it holds the leader lease and serves the webhook until then.
			if s.ObservedGeneration >= generation && s.UpdatedReplicas == 1 && s.AvailableReplicas == 1 && s.Replicas == 1 && len(pods.Items) == 1 {
				return nil
			}
			last = fmt.Sprintf("generation %d observed %d, replicas %d updated %d available %d, %d pods", dep.Generation, s.ObservedGeneration, s.Replicas, s.UpdatedReplicas, s.AvailableReplicas, len(pods.Items))
		} else {
			last = err.Error()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("the operator is not available: %s\n%s", last, OperatorLogs(cluster, paths))
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// OperatorLogs returns the last lines of the operator's log (kubectl logs), for failures.
func OperatorLogs(cluster *localcluster.Cluster, paths Paths) string {
	kubectl := filepath.Join(paths.BinDir, "kubectl")
	out, _ := exec.Command(kubectl, "--kubeconfig", cluster.Kubeconfig(), "-n", Namespace, "logs", "deploy/"+OperatorDeployment, "--tail=40").CombinedOutput()
	return "operator log:\n" + string(out)
}
