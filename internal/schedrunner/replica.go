package schedrunner

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/schedops/scheduler-profile-operator/internal/freeport"
	"github.com/schedops/scheduler-profile-operator/internal/localcluster"
)

// tokenLifetime is how long a scheduler's ServiceAccount token is valid. A kubelet refreshes the
// token of a pod; a local process keeps the one it started with, so it outlives any test or demo.
const tokenLifetime = 30 * 24 * time.Hour

// stopGrace is how long a stopped scheduler gets to release its lease and exit before SIGKILL.
const stopGrace = 10 * time.Second

// Replica is one scheduler process of a Deployment, standing for one of its pods.
type Replica struct {
	// Hash is the config hash of the pod template that the process runs.
	Hash string
	// Revision is the revision of that pod template: a new one (a new configuration, or a new
	// certificate in a mounted Secret) rolls the processes.
	Revision string
	// Process is the kube-scheduler process; its Log is the process's output.
	Process *localcluster.Process
	// Port is its secure port on 127.0.0.1 (it serves /readyz, /livez and /metrics there).
	Port int
	// Kubeconfig holds its ServiceAccount token and nothing else: it is its client, delegated
	// authentication and delegated authorization kubeconfig.
	Kubeconfig string
	// Ready is set once /readyz answered 200, as a readiness probe would mark the pod.
	Ready bool
}

// startReplica runs kube-scheduler as a pod of d would run: with the Deployment's args and the
// config of the ConfigMap it mounts, authenticated as its ServiceAccount. Only what a local process
// needs changes: file paths, the secure port and the kubeconfigs that stand in for in-cluster config.
func (r *Runner) startReplica(ctx context.Context, d *appsv1.Deployment, hash, revision string) (*Replica, error) {
	if len(d.Spec.Template.Spec.Containers) == 0 {
		return nil, fmt.Errorf("no container")
	}
	r.started++
	name := fmt.Sprintf("%s-%d", d.Name, r.started)
	dir := filepath.Join(r.opts.WorkDir, name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	kubeconfig, err := r.writeKubeconfig(ctx, d, filepath.Join(dir, "kubeconfig"))
	if err != nil {
		return nil, err
	}
	mounts, err := r.writeSecretVolumes(ctx, d, filepath.Join(dir, "volumes"))
	if err != nil {
		return nil, err
	}
	configPath, err := r.writeConfig(ctx, d, kubeconfig, mounts, filepath.Join(dir, "config.yaml"))
	if err != nil {
		return nil, err
	}
	ports, err := freeport.Ports(1)
	if err != nil {
		return nil, err
	}
	args := localArgs(d.Spec.Template.Spec.Containers[0].Args, configPath, dir, ports[0])
	args = append(args, "--bind-address=127.0.0.1",
		"--authentication-kubeconfig="+kubeconfig, "--authorization-kubeconfig="+kubeconfig)
	binary := r.opts.SchedulerBinary
	if b, ok := r.opts.SchedulerBinaries[d.Spec.Template.Spec.Containers[0].Image]; ok {
		binary = b
	}
	proc, err := localcluster.StartProcess(name, binary, args, nil, filepath.Join(r.opts.WorkDir, name+".log"), false)
	if err != nil {
		return nil, err
	}
	return &Replica{Hash: hash, Revision: revision, Process: proc, Port: ports[0], Kubeconfig: kubeconfig}, nil
}

// localArgs are the container's args with the paths and the port of this process.
func localArgs(containerArgs []string, configPath, certDir string, port int) []string {
	var args []string
	for _, a := range containerArgs {
		switch {
		case strings.HasPrefix(a, "--config="):
			a = "--config=" + configPath
		case strings.HasPrefix(a, "--secure-port="):
			a = fmt.Sprintf("--secure-port=%d", port)
		case strings.HasPrefix(a, "--cert-dir="):
			a = "--cert-dir=" + certDir
		}
		args = append(args, a)
	}
	return args
}

// writeKubeconfig writes a kubeconfig with the cluster's server and CA and a fresh token of the
// Deployment's ServiceAccount (the TokenRequest API, as a kubelet gets a pod's token), and no other
// credential, so the scheduler can do exactly what the operator's RBAC grants that ServiceAccount.
func (r *Runner) writeKubeconfig(ctx context.Context, d *appsv1.Deployment, path string) (string, error) {
	admin, err := clientcmd.LoadFromFile(r.opts.Kubeconfig)
	if err != nil {
		return "", fmt.Errorf("reading the admin kubeconfig: %w", err)
	}
	adminContext, ok := admin.Contexts[admin.CurrentContext]
	if !ok || admin.Clusters[adminContext.Cluster] == nil {
		return "", fmt.Errorf("the admin kubeconfig %s has no current cluster", r.opts.Kubeconfig)
	}
	sa := &corev1.ServiceAccount{}
	key := client.ObjectKey{Namespace: d.Namespace, Name: d.Spec.Template.Spec.ServiceAccountName}
	if err := r.opts.Client.Get(ctx, key, sa); err != nil {
		return "", fmt.Errorf("reading ServiceAccount %s: %w", key, err)
	}
	token := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: ptr.To(int64(tokenLifetime / time.Second)),
	}}
	if err := r.opts.Client.SubResource("token").Create(ctx, sa, token); err != nil {
		return "", fmt.Errorf("requesting a token of ServiceAccount %s: %w", key, err)
	}
	user := "system:serviceaccount:" + key.Namespace + ":" + key.Name
	config := clientcmdapi.NewConfig()
	config.Clusters["local"] = admin.Clusters[adminContext.Cluster]
	config.AuthInfos[user] = &clientcmdapi.AuthInfo{Token: token.Status.Token}
	config.Contexts["local"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: user}
	config.CurrentContext = "local"
	if err := clientcmd.WriteToFile(*config, path); err != nil {
		return "", err
	}
	return path, nil
}

// writeSecretVolumes writes the Secrets that the container mounts into dir, one directory per
// volume with a file per key, as a kubelet fills a Secret volume, and returns the local directory
// of each mount path.
func (r *Runner) writeSecretVolumes(ctx context.Context, d *appsv1.Deployment, dir string) (map[string]string, error) {
	secrets := map[string]string{}
	items := map[string][]corev1.KeyToPath{}
	for _, v := range d.Spec.Template.Spec.Volumes {
		if v.Secret != nil {
			secrets[v.Name] = v.Secret.SecretName
			items[v.Name] = v.Secret.Items
		}
	}
	mounts := map[string]string{}
	for _, m := range d.Spec.Template.Spec.Containers[0].VolumeMounts {
		name, ok := secrets[m.Name]
		if !ok {
			continue
		}
		secret := &corev1.Secret{}
		if err := r.opts.Client.Get(ctx, client.ObjectKey{Namespace: d.Namespace, Name: name}, secret); err != nil {
			return nil, fmt.Errorf("reading Secret %q: %w", name, err)
		}
		local := filepath.Join(dir, m.Name)
		if err := os.MkdirAll(local, 0o700); err != nil {
			return nil, err
		}
		// With items, a kubelet writes only the listed keys, at their paths; a listed key the
		// Secret lacks fails the mount.
		files := map[string][]byte{}
		for key, data := range secret.Data {
			files[key] = data
		}
		if len(items[m.Name]) > 0 {
			files = map[string][]byte{}
			for _, item := range items[m.Name] {
				data, ok := secret.Data[item.Key]
				if !ok {
					return nil, fmt.Errorf("secret %q has no key %q of volume %s", name, item.Key, m.Name)
				}
				files[item.Path] = data
			}
		}
		for file, data := range files {
			if err := os.WriteFile(filepath.Join(local, file), data, 0o600); err != nil {
				return nil, err
			}
		}
		mounts[m.MountPath] = local
	}
	return mounts, nil
}

// writeConfig writes the config of the ConfigMap that the Deployment mounts, with its client
// connection pointed at kubeconfig instead of the in-cluster client, and the paths into mounted
// Secrets pointed at their local copies (mounts); nothing else changes.
func (r *Runner) writeConfig(ctx context.Context, d *appsv1.Deployment, kubeconfig string, mounts map[string]string, path string) (string, error) {
	var cmName string
	for _, v := range d.Spec.Template.Spec.Volumes {
		if v.ConfigMap != nil {
			cmName = v.ConfigMap.Name
		}
	}
	cm := &corev1.ConfigMap{}
	if err := r.opts.Client.Get(ctx, client.ObjectKey{Namespace: d.Namespace, Name: cmName}, cm); err != nil {
		return "", fmt.Errorf("reading ConfigMap %q: %w", cmName, err)
	}
	text := cm.Data["config.yaml"]
	for mountPath, local := range mounts {
		text = strings.ReplaceAll(text, strings.TrimSuffix(mountPath, "/")+"/", local+"/")
	}
	var doc map[string]any
	if err := yaml.Unmarshal([]byte(text), &doc); err != nil {
		return "", fmt.Errorf("parsing the scheduler config: %w", err)
	}
	doc["clientConnection"] = map[string]any{"kubeconfig": kubeconfig}
	config, err := yaml.Marshal(doc)
	if err != nil {
		return "", err
	}
	return path, os.WriteFile(path, config, 0o600)
}

// probeClient checks /readyz as a kubelet's HTTPS probe does: without verifying the scheduler's
// self-signed serving certificate.
var probeClient = &http.Client{
	Timeout:   time.Second,
	Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}},
}

// probe marks the replica ready once its /readyz answers 200.
func (rep *Replica) probe(ctx context.Context) {
	if rep.Ready {
		return
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d/readyz", rep.Port), nil)
	if err != nil {
		return
	}
	resp, err := probeClient.Do(req)
	if err != nil {
		return
	}
	_ = resp.Body.Close()
	rep.Ready = resp.StatusCode == http.StatusOK
}
