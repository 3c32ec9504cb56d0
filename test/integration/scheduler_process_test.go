package integration

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/schedops/scheduler-profile-operator/internal/freeport"
	"github.com/schedops/scheduler-profile-operator/internal/localcluster"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
)

// schedulerBinary returns the path of bin/kube-scheduler at the repository root. A missing
// binary fails the test instead of skipping it: the scheduler tests are the acceptance test of the
// plugins, and a skip would let `make test` pass without ever running them.
func schedulerBinary(t *testing.T) string {
	t.Helper()
	root, err := localcluster.RepoRoot()
	if err != nil {
		t.Fatalf("Finding the repository root: %v", err)
	}
	path := filepath.Join(root, "bin", "kube-scheduler")
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("The scheduler binary %s is missing (%v): run `make bin/kube-scheduler`", path, err)
	}
	return path
}

// schedulerProcess is a kube-scheduler started by startScheduler.
type schedulerProcess struct {
	// port is the secure port it serves /readyz and /metrics on, at 127.0.0.1.
	port int
	// exited receives the result of Wait once the process has exited; whoever receives it puts
	// it back, so that every later reader sees it too.
	exited chan error
}

// checkRunning returns an error if the process has exited.
func (p *schedulerProcess) checkRunning() error {
	select {
	case err := <-p.exited:
		p.exited <- err
		return fmt.Errorf("kube-scheduler exited: %v", err)
	default:
		return nil
	}
}

// startScheduler runs the scheduler binary with configPath (and args, if any) until the test ends
// and waits until it reports ready, which means its informers have synced (with leader election
// on, it may not hold the lease yet). Its output goes to a file that is printed when the test
// fails; the process is killed and reaped in t.Cleanup.
func startScheduler(t *testing.T, binary, configPath string, args ...string) *schedulerProcess {
	t.Helper()
	dir := t.TempDir() // before the cleanups below, so that it is removed after them
	logPath := filepath.Join(dir, "kube-scheduler.log")
	logFile, err := os.Create(logPath)
	if err != nil {
		t.Fatalf("Creating the scheduler log: %v", err)
	}
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		if out, err := os.ReadFile(logPath); err == nil {
			t.Logf("kube-scheduler output (%s):\n%s", logPath, out)
		}
	})

	ports, err := freeport.Ports(1)
	if err != nil {
		t.Fatal(err)
	}
	port := ports[0]
	cmd := exec.Command(binary, append([]string{
		"--config", configPath,
		"--bind-address", "127.0.0.1",
		"--secure-port", strconv.Itoa(port),
		"--v", "2",
	}, args...)...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	if err := cmd.Start(); err != nil {
		_ = logFile.Close()
		t.Fatalf("Starting %s: %v", binary, err)
	}
	proc := &schedulerProcess{port: port, exited: make(chan error, 1)}
	exited := proc.exited
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		// Kill, then wait, so that no scheduler outlives its test and binds later tests' pods.
		_ = cmd.Process.Kill()
		select {
		case err := <-exited:
			t.Logf("kube-scheduler (pid %d) stopped: %v", cmd.Process.Pid, err)
		case <-time.After(30 * time.Second):
			t.Errorf("kube-scheduler (pid %d) did not exit 30s after SIGKILL", cmd.Process.Pid)
		}
		_ = logFile.Close()
	})

	readyz := fmt.Sprintf("https://127.0.0.1:%d/readyz", port)
	httpClient := &http.Client{
		Timeout: 2 * time.Second,
		// The scheduler serves a self-signed certificate; only the status code matters here.
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, //nolint:gosec // the scheduler serves a self-signed certificate on 127.0.0.1
	}
	defer httpClient.CloseIdleConnections()
	testutil.Eventually(t, 60*time.Second, readyz+" to answer 200", func(ctx context.Context) error {
		if err := proc.checkRunning(); err != nil {
			t.Fatalf("Waiting for %s: %v", readyz, err)
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, readyz, nil)
		if err != nil {
			return err
		}
		resp, err := httpClient.Do(req)
		if err != nil {
			return err
		}
		defer func() { _ = resp.Body.Close() }()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("answered %s", resp.Status)
		}
		return nil
	})
	return proc
}
