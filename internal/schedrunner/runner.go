// Package schedrunner runs, as local processes, the schedulers that the operator's Deployments
// describe. kwok only pretends that pods run, so on the local simulated cluster nothing would
// schedule the pods of a profile; the runner starts bin/kube-scheduler with exactly the config of
// the ConfigMap that a Deployment mounts and the Deployment's own args, pointed at the local
// apiserver, and restarts it when the Deployment rolls to a new configuration.
//
// It is test and demo code, not part of the product.
package schedrunner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/schedops/scheduler-profile-operator/controllers"
	"github.com/schedops/scheduler-profile-operator/internal/localcluster"
)

// Options configure a Runner.
type Options struct {
	// Client reads Deployments and ConfigMaps.
	Client client.Client
	// Namespace is the operator's namespace.
	Namespace string
	// SchedulerBinary is bin/kube-scheduler.
	SchedulerBinary string
	// Kubeconfig is what the schedulers use instead of the in-cluster client.
	Kubeconfig string
	// WorkDir holds the config files and logs of the schedulers.
	WorkDir string
	// Interval between two looks at the Deployments; 500ms when zero.
	Interval time.Duration
}

// Runner keeps one scheduler process per scheduler Deployment, running the Deployment's config.
type Runner struct {
	opts Options

	mu      sync.Mutex
	running map[string]*scheduler
}

// scheduler is one running scheduler process.
type scheduler struct {
	hash string
	proc *localcluster.Process
}

// New returns a Runner; Run starts it.
func New(opts Options) *Runner {
	if opts.Interval == 0 {
		opts.Interval = 500 * time.Millisecond
	}
	return &Runner{opts: opts, running: map[string]*scheduler{}}
}

// Run syncs the schedulers with the Deployments until ctx ends, then stops them all.
func (r *Runner) Run(ctx context.Context) error {
	defer r.stopAll()
	ticker := time.NewTicker(r.opts.Interval)
	defer ticker.Stop()
	for {
		if err := r.sync(ctx); err != nil && ctx.Err() == nil {
			fmt.Fprintf(os.Stderr, "schedrunner: %v\n", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
	}
}

// Hash returns the config hash that the scheduler of a Deployment runs, or "" if none runs.
func (r *Runner) Hash(deployment string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if s, ok := r.running[deployment]; ok && s.proc.Alive() {
		return s.hash
	}
	return ""
}

// Log returns the log file of a Deployment's scheduler.
func (r *Runner) Log(deployment string) string {
	return filepath.Join(r.opts.WorkDir, deployment+".log")
}

func (r *Runner) sync(ctx context.Context) error {
	var list appsv1.DeploymentList
	if err := r.opts.Client.List(ctx, &list, client.InNamespace(r.opts.Namespace),
		client.MatchingLabels{"app.kubernetes.io/managed-by": controllers.FieldManager}); err != nil {
		return fmt.Errorf("listing scheduler Deployments: %w", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := map[string]bool{}
	for i := range list.Items {
		d := &list.Items[i]
		seen[d.Name] = true
		hash := d.Spec.Template.Annotations[controllers.AnnotationConfigHash]
		if s, ok := r.running[d.Name]; ok && s.hash == hash && s.proc.Alive() {
			continue
		}
		if s, ok := r.running[d.Name]; ok {
			_ = s.proc.Stop(10 * time.Second)
			delete(r.running, d.Name)
		}
		proc, err := r.start(ctx, d)
		if err != nil {
			return fmt.Errorf("starting the scheduler of %s: %w", d.Name, err)
		}
		r.running[d.Name] = &scheduler{hash: hash, proc: proc}
	}
	for name, s := range r.running {
		if !seen[name] {
			_ = s.proc.Stop(10 * time.Second)
			delete(r.running, name)
		}
	}
	return nil
}

// start runs kube-scheduler with the Deployment's args and its ConfigMap's config, changing only
// what a local process needs: the kubeconfig, the config path, the port and the cert dir.
func (r *Runner) start(ctx context.Context, d *appsv1.Deployment) (*localcluster.Process, error) {
	if len(d.Spec.Template.Spec.Containers) == 0 {
		return nil, fmt.Errorf("no container")
	}
	var cmName string
	for _, v := range d.Spec.Template.Spec.Volumes {
		if v.ConfigMap != nil {
			cmName = v.ConfigMap.Name
		}
	}
	cm := &corev1.ConfigMap{}
	if err := r.opts.Client.Get(ctx, client.ObjectKey{Namespace: d.Namespace, Name: cmName}, cm); err != nil {
		return nil, fmt.Errorf("reading ConfigMap %q: %w", cmName, err)
	}
	config, err := withKubeconfig([]byte(cm.Data["config.yaml"]), r.opts.Kubeconfig)
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(r.opts.WorkDir, d.Name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	configPath := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(configPath, config, 0o600); err != nil {
		return nil, err
	}
	ports, err := localcluster.FreePorts(1)
	if err != nil {
		return nil, err
	}
	var args []string
	for _, a := range d.Spec.Template.Spec.Containers[0].Args {
		switch {
		case strings.HasPrefix(a, "--config="):
			a = "--config=" + configPath
		case strings.HasPrefix(a, "--secure-port="):
			a = fmt.Sprintf("--secure-port=%d", ports[0])
		case strings.HasPrefix(a, "--cert-dir="):
			a = "--cert-dir=" + dir
		}
		args = append(args, a)
	}
	args = append(args, "--bind-address=127.0.0.1")
	return localcluster.StartProcess(d.Name, r.opts.SchedulerBinary, args, nil, r.Log(d.Name), false)
}

// withKubeconfig points the config's client connection at kubeconfig; nothing else changes.
func withKubeconfig(config []byte, kubeconfig string) ([]byte, error) {
	var doc map[string]any
	if err := yaml.Unmarshal(config, &doc); err != nil {
		return nil, fmt.Errorf("parsing the scheduler config: %w", err)
	}
	doc["clientConnection"] = map[string]any{"kubeconfig": kubeconfig}
	return yaml.Marshal(doc)
}

func (r *Runner) stopAll() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for name, s := range r.running {
		_ = s.proc.Stop(10 * time.Second)
		delete(r.running, name)
	}
}
