package olm

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/schedops/scheduler-profile-operator/internal/freeport"
	"github.com/schedops/scheduler-profile-operator/internal/localcluster"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
)

const (
	// deploymentName is the operator's Deployment in the CSV.
	deploymentName = "scheduler-profile-operator-controller-manager"
	// certMountPath is where OLM mounts the webhook's serving certificate into the operator's
	// container: controller-runtime's default certificate directory.
	certMountPath = "/tmp/k8s-webhook-server/serving-certs"
	// webhookPort is the port of the webhook Service OLM makes (the CSV's containerPort), which
	// the apiserver calls at localhost once the Service is an ExternalName of localhost.
	webhookPort = 443
	// operatorReadyTimeout bounds the wait for the manager's /readyz: caches synced, webhook served.
	operatorReadyTimeout = time.Minute
)

// operatorPod is bin/manager running as the pod of the Deployment OLM made.
type operatorPod struct {
	proc *localcluster.Process
	// binary is the manager it runs: the previous release's or this tree's, by the image.
	binary string
	// webhook is whether it serves the webhook where the apiserver calls it (port 443).
	webhook bool
	// metrics is the URL of its metrics, plain HTTP on 127.0.0.1.
	metrics string
}

// startOperatorPod runs bin/manager as the pod of OLM's Deployment in ns would run: its
// arguments and environment (OPERATOR_NAMESPACE from the downward API), the token of its
// ServiceAccount, the certificate of the Secret OLM mounts at the webhook's certificate
// directory. Only the addresses differ: health and metrics (plain HTTP) on free ports of
// 127.0.0.1, and the webhook on localhost:443, which the webhook Service, made an ExternalName of
// localhost, leads the apiserver to; when port 443 cannot be bound (not root) it serves no
// webhook. The process is stopped when the test ends.
func startOperatorPod(t *testing.T, ns string) *operatorPod {
	t.Helper()
	ctx := context.Background()
	dep := &appsv1.Deployment{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: deploymentName}, dep); err != nil {
		t.Fatalf("Getting the Deployment OLM made: %v", err)
	}
	pod := dep.Spec.Template.Spec
	if len(pod.Containers) != 1 {
		t.Fatalf("OLM's Deployment has %d containers, want 1", len(pod.Containers))
	}
	container := pod.Containers[0]
	dir := filepath.Join(workDir, "operator-"+ns)
	certDir := filepath.Join(dir, "certs")
	secret := writeMountedCert(t, ns, pod, container, certDir)
	kubeconfig := writeServiceAccountKubeconfig(t, ns, pod.ServiceAccountName, filepath.Join(dir, "kubeconfig"))

	env := []string{"KUBECONFIG=" + kubeconfig}
	for _, e := range container.Env {
		switch {
		case e.ValueFrom == nil:
			env = append(env, e.Name+"="+e.Value)
		case e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.namespace":
			env = append(env, e.Name+"="+ns)
		default:
			t.Fatalf("OLM's Deployment sets %s from %+v, which this test does not know", e.Name, e.ValueFrom)
		}
	}
	ports, err := freeport.Ports(2)
	if err != nil {
		t.Fatal(err)
	}
	webhook := canBind(webhookPort)
	manager := managerOf(container.Image)
	args := operatorArgs(container.Args, ports[0], ports[1], certDir, webhook, hasFlag(t, manager, "webhook-host"))
	if webhook {
		routeWebhookService(t, ns)
	} else {
		t.Logf("Port %d of localhost cannot be bound (not root): the operator runs without its webhook", webhookPort)
	}
	proc, err := localcluster.StartProcess("manager", manager, args, env, filepath.Join(dir, "manager-"+strconv.Itoa(int(time.Now().UnixMilli()))+".log"), false)
	if err != nil {
		t.Fatalf("Starting the operator: %v", err)
	}
	p := &operatorPod{proc: proc, binary: manager, webhook: webhook, metrics: fmt.Sprintf("http://127.0.0.1:%d/metrics", ports[1])}
	t.Cleanup(p.stop)
	ready := fmt.Sprintf("http://127.0.0.1:%d/readyz", ports[0])
	err = testutil.Poll(ctx, operatorReadyTimeout, func(ctx context.Context) error {
		if !proc.Alive() {
			return errors.New("the operator exited")
		}
		return testutil.GetOK(ctx, ready)
	})
	if err != nil {
		t.Fatalf("The operator (as OLM's pod, certificate of Secret %s) is not ready: %v\n%s", secret, err, p.logTail(40))
	}
	return p
}

// managerOf is the operator binary of a container image: the previous release's bin/manager
// for its image, bin/manager of this tree for any other.
func managerOf(image string) string {
	if image == previous.image {
		return previous.manager
	}
	return filepath.Join(paths.Root, "bin", "manager")
}

// hasFlag reports whether the program at path has the flag name, as its -h lists it: the
// previous release's manager has no --webhook-host.
func hasFlag(t *testing.T, path, name string) bool {
	t.Helper()
	out, _ := exec.Command(path, "-h").CombinedOutput()
	if !strings.Contains(string(out), "-metrics-bind-address") {
		t.Fatalf("%s -h lists no flag of the manager:\n%s", path, out)
	}
	return strings.Contains(string(out), "-"+name+" ")
}

// operatorArgs are the container's arguments with the addresses of a process on this host;
// metrics are served in plain HTTP, for the test to count the webhook's requests. The webhook
// listens on localhost where the manager has --webhook-host (on every address otherwise).
func operatorArgs(container []string, healthPort, metricsPort int, certDir string, webhook, webhookHost bool) []string {
	var args []string
	for _, a := range container {
		switch {
		case strings.HasPrefix(a, "--health-probe-bind-address="):
			a = "--health-probe-bind-address=127.0.0.1:" + strconv.Itoa(healthPort)
		case strings.HasPrefix(a, "--metrics-bind-address="):
			a = "--metrics-bind-address=127.0.0.1:" + strconv.Itoa(metricsPort)
		case a == "--metrics-secure":
			a = "--metrics-secure=false"
		}
		args = append(args, a)
	}
	if webhook {
		if webhookHost {
			args = append(args, "--webhook-host=localhost")
		}
		return append(args, "--webhook-port="+strconv.Itoa(webhookPort), "--webhook-cert-dir="+certDir)
	}
	return append(args, "--enable-webhook=false")
}

// writeMountedCert writes the Secret that the pod mounts at certMountPath into dir, as the
// kubelet would, and returns its name.
func writeMountedCert(t *testing.T, ns string, pod corev1.PodSpec, container corev1.Container, dir string) string {
	t.Helper()
	var volume string
	for _, m := range container.VolumeMounts {
		if m.MountPath == certMountPath {
			volume = m.Name
		}
	}
	var secretName string
	for _, v := range pod.Volumes {
		if v.Name == volume && v.Secret != nil {
			secretName = v.Secret.SecretName
		}
	}
	if secretName == "" {
		t.Fatalf("OLM's Deployment mounts no Secret at %s (mounts %+v)", certMountPath, container.VolumeMounts)
	}
	secret := &corev1.Secret{}
	if err := k8s.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: secretName}, secret); err != nil {
		t.Fatalf("Getting the webhook's certificate OLM made: %v", err)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{corev1.TLSCertKey, corev1.TLSPrivateKeyKey} {
		if len(secret.Data[key]) == 0 {
			t.Fatalf("Secret %s OLM made has no %s (keys %v)", secretName, key, keys(secret.Data))
		}
		if err := os.WriteFile(filepath.Join(dir, key), secret.Data[key], 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return secretName
}

// writeServiceAccountKubeconfig writes a kubeconfig of the cluster with a token of the
// ServiceAccount sa of ns, so that the operator may do what OLM's Roles of the CSV allow.
func writeServiceAccountKubeconfig(t *testing.T, ns, sa, path string) string {
	t.Helper()
	ctx := context.Background()
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}
	account := &corev1.ServiceAccount{}
	if err := k8s.Get(ctx, client.ObjectKey{Namespace: ns, Name: sa}, account); err != nil {
		t.Fatalf("Getting ServiceAccount %s that OLM made: %v", sa, err)
	}
	if err := k8s.SubResource("token").Create(ctx, account, tr); err != nil {
		t.Fatalf("Requesting a token of ServiceAccount %s: %v", sa, err)
	}
	admin, err := clientcmd.LoadFromFile(cluster.Kubeconfig())
	if err != nil {
		t.Fatal(err)
	}
	var server *clientcmdapi.Cluster
	for _, c := range admin.Clusters {
		server = c
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["cluster"] = server
	cfg.AuthInfos["operator"] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	cfg.Contexts["operator"] = &clientcmdapi.Context{Cluster: "cluster", AuthInfo: "operator", Namespace: ns}
	cfg.CurrentContext = "operator"
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// routeWebhookService turns the Service that OLM's webhook configurations of ns call into an
// ExternalName of localhost: with no Service network, the apiserver then calls localhost at the
// configuration's port, and still checks the certificate for the Service's name.
func routeWebhookService(t *testing.T, ns string) {
	t.Helper()
	ctx := context.Background()
	vwcs := &admissionregistrationv1.ValidatingWebhookConfigurationList{}
	if err := k8s.List(ctx, vwcs, client.MatchingLabels{olmOwnerLabel + ".namespace": ns}); err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, v := range vwcs.Items {
		for _, w := range v.Webhooks {
			if w.ClientConfig.Service != nil {
				names[w.ClientConfig.Service.Name] = true
			}
		}
	}
	if len(names) != 1 {
		t.Fatalf("OLM's webhook configurations of namespace %s call the Services %v, want one", ns, keys(names))
	}
	patch := []byte(`{"spec":{"type":"ExternalName","externalName":"localhost"}}`)
	for name := range names {
		svc := &corev1.Service{}
		svc.Namespace, svc.Name = ns, name
		if err := k8s.Patch(ctx, svc, client.RawPatch(types.MergePatchType, patch)); err != nil {
			t.Fatalf("Routing OLM's webhook Service %s to localhost: %v", name, err)
		}
	}
}

// canBind reports whether this process may listen on port of 127.0.0.1, and the port is free.
func canBind(port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	_ = l.Close()
	return true
}

// webhookRequests is how many admission reviews the operator's webhook of path has answered
// (controller-runtime's controller_runtime_webhook_requests_total).
func (p *operatorPod) webhookRequests(ctx context.Context, path string) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.metrics, nil)
	if err != nil {
		return 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err
	}
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	var total float64
	for _, line := range strings.Split(string(body), "\n") {
		if !strings.HasPrefix(line, "controller_runtime_webhook_requests_total{") || !strings.Contains(line, `webhook="`+path+`"`) {
			continue
		}
		v, err := strconv.ParseFloat(line[strings.LastIndex(line, " ")+1:], 64)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", line, err)
		}
		total += v
	}
	return total, nil
}

// logLines are the lines of the operator's log that contain s.
func (p *operatorPod) logLines(s string) []string {
	data, err := os.ReadFile(p.proc.Log)
	if err != nil {
		return []string{err.Error()}
	}
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		if strings.Contains(line, s) {
			out = append(out, line)
		}
	}
	return out
}

// logTail is the end of the operator's log.
func (p *operatorPod) logTail(lines int) string {
	return fmt.Sprintf("the operator's log (%s), last lines:\n%s", p.proc.Log, fileTail(p.proc.Log, lines))
}

func (p *operatorPod) stop() {
	if err := p.proc.Stop(10 * time.Second); err != nil {
		fmt.Fprintf(os.Stderr, "stopping the operator: %v\n", err)
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
