package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/controllers"
	"github.com/schedops/scheduler-profile-operator/hack/bench/internal/cluster"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
)

// operatorProcess is what an operator's process is told, as JSON in the file that
// --operator-process names.
type operatorProcess struct {
	// Webhook, when set, serves the operator's webhooks where the cluster's webhook
	// configurations call.
	Webhook *controllers.WebhookOptions
	// CPUProfile, when set, is the prefix of a CPU profile of the process's whole life, written
	// to <CPUProfile>-operator.pprof.
	CPUProfile string
	// Preview bounds the operator's previews; zero fields keep the defaults.
	Preview controllers.PreviewOptions
}

// runOperatorProcess is an operator's process: the operator as main wires it, with its webhooks
// when it is told to serve them, until it is told to stop (SIGTERM). Its garbage collector,
// goroutines and resident memory are theirs alone.
func runOperatorProcess(ctx context.Context, o options) error {
	data, err := os.ReadFile(o.operatorProcess)
	if err != nil {
		return err
	}
	var p operatorProcess
	if err := json.Unmarshal(data, &p); err != nil {
		return err
	}
	return profiled(p.CPUProfile, "operator", func() error { return serveOperator(ctx, p) })
}

// serveOperator runs the operator as p says until ctx ends.
func serveOperator(ctx context.Context, p operatorProcess) error {
	// As main reads its configuration: KUBECONFIG, and controller-runtime's client rate limit.
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return err
	}
	opts := operatorOptions()
	opts.Webhook = p.Webhook
	opts.Preview = p.Preview
	stop, err := startOperatorWith(ctx, cfg, opts)
	if err != nil {
		return err
	}
	defer stop()
	<-ctx.Done()
	return nil
}

// operatorProc is an operator's process, started by startOperatorProcess, and what it was told.
type operatorProc struct {
	cmd *exec.Cmd
	operatorProcess
}

// startOperatorProcess creates the operator's namespace and starts the operator in a process of
// its own (this command with --operator-process), as p says; name names the file that tells it.
// It returns once the process runs: the operator's cache may not have synced yet.
func startOperatorProcess(ctx context.Context, c *cluster.Cluster, admin client.Client, o options, name string, p operatorProcess) (*operatorProc, error) {
	// A second operator on the same cluster finds the namespace of the first.
	if err := admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: operatorNamespace}}); err != nil && !apierrors.IsAlreadyExists(err) {
		return nil, err
	}
	data, err := json.Marshal(p)
	if err != nil {
		return nil, err
	}
	path, err := filepath.Abs(filepath.Join(o.dir, name+"-operator.json"))
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return nil, err
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, "--operator-process="+path)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+c.Kubeconfig)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return &operatorProc{cmd: cmd, operatorProcess: p}, nil
}

func (p *operatorProc) pid() int { return p.cmd.Process.Pid }

// stop stops the operator's process and waits for it.
func (p *operatorProc) stop() {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	if err := p.cmd.Wait(); err != nil {
		fmt.Fprintln(os.Stderr, "bench: the operator's process:", err)
	}
}

// availableProfile creates the profile p, waits until it is Available (waitAvailable) and returns
// its scheduler name.
func availableProfile(ctx context.Context, admin client.Client, p *v1alpha1.SchedulerProfile) (string, error) {
	if err := admin.Create(ctx, p); err != nil {
		return "", err
	}
	got, err := waitAvailable(ctx, admin, p.Name)
	if err != nil {
		return "", err
	}
	return got.Status.SchedulerName, nil
}

// waitAvailable marks the Deployment of the profile name available, as the Deployment controller
// (absent in envtest) would once the pods of its template run, until the profile is Available at
// its generation, and returns the profile.
func waitAvailable(ctx context.Context, admin client.Client, name string) (*v1alpha1.SchedulerProfile, error) {
	p := &v1alpha1.SchedulerProfile{}
	marked := false
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := admin.Get(ctx, client.ObjectKey{Name: name}, p); err != nil {
			return false, err
		}
		if marked && available(p) && p.Status.ObservedGeneration == p.Generation {
			return true, nil
		}
		if p.Status.DeploymentName == "" {
			return false, nil
		}
		marked = true
		return false, testutil.MarkDeploymentAvailable(ctx, admin, client.ObjectKey{Namespace: operatorNamespace, Name: p.Status.DeploymentName})
	})
	if err != nil {
		return nil, fmt.Errorf("waiting for SchedulerProfile %s to be Available: %w", name, err)
	}
	return p, nil
}
