package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/schedops/scheduler-profile-operator/internal/localcluster"
	"github.com/schedops/scheduler-profile-operator/internal/operatorenv"
)

// realNode is the demo with a real node (`make demo NODE=real`): the operator, installed with
// `make deploy`, and its schedulers run as containers on a kubelet node, the way test/node runs
// them, and the workloads on the kwok nodes. A nil *realNode is the default demo, where the
// operator and the schedulers are local processes and every node is a kwok node.
type realNode struct {
	// img is the image's tag (IMG), imageTar the tarball of `make image`.
	img, imageTar string
	// pauseImageTar and pauseImage are the sandbox image's tarball and reference.
	pauseImageTar, pauseImage string
}

// nodeOptions are the cluster's real-node options: nothing is pulled, both images are imported.
func (r *realNode) nodeOptions() *localcluster.RealNodeOptions {
	if r == nil {
		return nil
	}
	return &localcluster.RealNodeOptions{Images: []string{r.imageTar, r.pauseImageTar}, SandboxImage: r.pauseImage}
}

// startCluster starts the local cluster, with the real node when r is set.
func (r *realNode) startCluster(ctx context.Context, paths operatorenv.Paths, dir string) (*localcluster.Cluster, error) {
	what := "etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok"
	if r != nil {
		what += "; a real node: containerd, kubelet, kube-proxy"
	}
	step("Starting the local cluster (" + what + ")")
	if r != nil && os.Geteuid() == 0 {
		// A demo whose processes were killed (a reboot, a kill -9) leaves its node on the host.
		recovered, err := localcluster.RecoverStaleNodes()
		if err != nil {
			return nil, err
		}
		for _, d := range recovered {
			fmt.Fprintf(os.Stderr, "    undid the real node a killed cluster left (its WorkDir %s)\n", d)
		}
	}
	began := time.Now()
	cluster, err := localcluster.Start(ctx, localcluster.Options{
		BinDir: paths.BinDir, SchedulerBinary: paths.Scheduler, WorkDir: dir, Detach: true, RealNode: r.nodeOptions(),
	})
	if errors.Is(err, localcluster.ErrNeedsRoot) {
		return nil, fmt.Errorf("NODE=real needs root (a kubelet, containerd, a bridge and iptables rules); run `make demo NODE=real` as root, or `make demo` without a real node: %w", err)
	}
	if err != nil {
		return nil, err
	}
	if node, ok := cluster.RealNode(); ok {
		fmt.Fprintf(os.Stderr, "    cluster with real node %s (%s on bridge %s) started in %s, the node Ready %s after its kubelet started\n",
			node.Name, node.IP, node.Bridge, time.Since(began).Round(100*time.Millisecond), node.ReadyAfterKubeletStart.Round(100*time.Millisecond))
	}
	return cluster, nil
}

// deploy installs the operator with `make deploy IMG=...` and waits until it is available; its
// pod lands on the real node, the only node without the kwok taint.
func (r *realNode) deploy(ctx context.Context, c client.Client, cluster *localcluster.Cluster, paths operatorenv.Paths) error {
	step("Installing the operator with `make deploy IMG=" + r.img + "`: CRDs, RBAC, webhook, its Deployment")
	began := time.Now()
	if _, err := operatorenv.Deploy(ctx, c, cluster, paths, r.img); err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "    operator installed and available, its webhook answering, in %s\n", time.Since(began).Round(100*time.Millisecond))
	return nil
}

// kwokNodes marks the nodes, all kwok nodes, with the kwok taint and label when there is a real
// node, so that the operator's and the schedulers' pods keep off them.
func (r *realNode) kwokNodes(nodes ...*corev1.Node) []*corev1.Node {
	if r != nil {
		operatorenv.MarkKwok(nodes...)
	}
	return nodes
}

// onKwok keeps a workload pod on the kwok nodes when there is a real node: it tolerates their
// taint and selects their label.
func (r *realNode) onKwok(spec *corev1.PodSpec) {
	if r == nil {
		return
	}
	spec.Tolerations = append(spec.Tolerations, operatorenv.KwokToleration())
	if spec.NodeSelector == nil {
		spec.NodeSelector = map[string]string{}
	}
	maps.Copy(spec.NodeSelector, operatorenv.KwokNodeSelector())
}

// logsHint says where the logs of the operator and of the schedulers are.
func (r *realNode) logsHint(dir string) string {
	if r == nil {
		return fmt.Sprintf("operator log: %s/manager.log, scheduler logs: %s/schedulers", dir, dir)
	}
	return fmt.Sprintf("logs: kubectl --kubeconfig %s/cluster/kubeconfig -n %s logs deploy/<name>", dir, operatorenv.Namespace)
}
