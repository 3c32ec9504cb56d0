package localcluster

import (
	"context"
	"strconv"
)

// genericWorkloadGate turns on the Workload and PodGroup APIs and gang scheduling (Kubernetes 1.37).
const genericWorkloadGate = "GenericWorkload=true"

// component is how to run one control-plane process and how to tell that it is ready.
type component struct {
	name string
	args []string
	env  []string
	// healthURL answers 200 once the component is ready; ready says what that means, for errors.
	healthURL string
	ready     string
	// bin is the binary when it is not in BinDir; check replaces healthURL when set.
	bin   string
	check func(context.Context) error
}

func etcd(s setup) component {
	clientURL, peerURL := s.url("http", s.Ports.Etcd, ""), s.url("http", s.Ports.EtcdPeer, "")
	return component{
		name: Etcd,
		args: []string{
			"--name=localcluster",
			"--data-dir=" + s.etcdData(),
			"--listen-client-urls=" + clientURL,
			"--advertise-client-urls=" + clientURL,
			"--listen-peer-urls=" + peerURL,
			"--initial-advertise-peer-urls=" + peerURL,
			"--initial-cluster=localcluster=" + peerURL,
			// The data is thrown away after the test; fsync only slows every write down.
			"--unsafe-no-fsync=true",
		},
		healthURL: s.url("http", s.Ports.Etcd, "/health"),
		ready:     "healthy",
	}
}

func apiServer(s setup) component {
	return component{
		name: APIServer,
		args: append([]string{
			"--etcd-servers=" + s.url("http", s.Ports.Etcd, ""),
			"--bind-address=" + s.apiHost(),
			"--advertise-address=" + s.apiHost(),
			"--secure-port=" + strconv.Itoa(s.Ports.APIServer),
			// The default reconciler refuses a loopback address for the kubernetes Service endpoints;
			// the real node's bridge address is routable from its pods.
			"--endpoint-reconciler-type=" + s.endpointReconciler(),
			"--tls-cert-file=" + s.pki("serving.crt"),
			"--tls-private-key-file=" + s.pki("serving.key"),
			"--client-ca-file=" + s.pki("ca.crt"),
			"--authorization-mode=Node,RBAC",
			"--allow-privileged=true",
			"--service-cluster-ip-range=" + serviceCIDR,
			"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
			"--service-account-key-file=" + s.pki("sa.key"),
			"--service-account-signing-key-file=" + s.pki("sa.key"),
			// Without a front-proxy CA the apiserver publishes no requestheader settings, and the controller
			// manager and scheduler log errors about the missing CA forever.
			"--requestheader-client-ca-file=" + s.pki("front-proxy-ca.crt"),
			"--requestheader-allowed-names=" + frontProxyClientName,
			"--requestheader-extra-headers-prefix=X-Remote-Extra-",
			"--requestheader-group-headers=X-Remote-Group",
			"--requestheader-username-headers=X-Remote-User",
			"--proxy-client-cert-file=" + s.pki("front-proxy.crt"),
			"--proxy-client-key-file=" + s.pki("front-proxy.key"),
			// Gang scheduling (Kubernetes 1.37): PodGroups and the pods' spec.schedulingGroup are served
			// only with the gate on and the beta API enabled; a scheduler with GenericWorkload waits for
			// its podgroups informer forever without them.
			"--feature-gates=" + genericWorkloadGate,
			"--runtime-config=scheduling.k8s.io/v1beta1=true",
		}, s.kubeletClientArgs()...),
		healthURL: s.server() + "/readyz",
		ready:     "ready",
	}
}

// servingArgs are the flags that kube-controller-manager and kube-scheduler share: a kubeconfig of
// their own for the apiserver and for delegated authentication and authorization, and serving on
// 127.0.0.1 with the cluster's serving certificate.
func servingArgs(s setup, name string, port int) []string {
	kubeconfig := s.kubeconfig(name)
	return []string{
		"--kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--tls-cert-file=" + s.pki("serving.crt"),
		"--tls-private-key-file=" + s.pki("serving.key"),
		"--leader-elect=false",
	}
}

func controllerManager(s setup) component {
	return component{
		name: ControllerManager,
		args: append(servingArgs(s, ControllerManager, s.Ports.ControllerManager),
			// Every controller with its own service account, as in a real cluster, so RBAC applies to each.
			"--use-service-account-credentials=true",
			"--service-account-private-key-file="+s.pki("sa.key"),
			"--root-ca-file="+s.pki("ca.crt"),
			// Tests create many pods at once; the defaults (20/30) would pace ReplicaSets.
			"--kube-api-qps=100",
			"--kube-api-burst=200",
			// The controllers that know PodGroups and Workloads (garbage collection, Job's PodGroups) follow the apiserver's gate.
			"--feature-gates="+genericWorkloadGate,
		),
		healthURL: s.url("https", s.Ports.ControllerManager, "/healthz"),
		ready:     "healthy",
	}
}

func scheduler(s setup) component {
	return component{
		name:      Scheduler,
		args:      servingArgs(s, Scheduler, s.Ports.Scheduler),
		healthURL: s.url("https", s.Ports.Scheduler, "/readyz"),
		ready:     "ready",
	}
}

func kwok(s setup) component {
	return component{
		name: Kwok,
		args: []string{
			"--kubeconfig=" + s.kubeconfig(Kwok),
			"--config=" + s.kwokStages(),
			// Flags, not a KwokConfiguration document: in v0.8.0 such a document turns off the option defaults.
			"--manage-all-nodes=false",
			"--manage-nodes-with-annotation-selector=" + KwokNodeAnnotation + "=" + KwokNodeAnnotationValue,
			"--server-address=127.0.0.1:" + strconv.Itoa(s.Ports.Kwok),
			"--node-lease-duration-seconds=" + strconv.Itoa(kwokLeaseSeconds),
			"--cidr=" + podCIDR,
		},
		// kwok also loads $KWOK_WORKDIR/kwok.yaml (default ~/.kwok); keep a user's file out of the cluster.
		env:       []string{"KWOK_WORKDIR=" + s.path("kwok")},
		healthURL: s.url("http", s.Ports.Kwok, "/healthz"),
		ready:     "healthy",
	}
}
