package localcluster

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"

	"github.com/schedops/scheduler-profile-operator/internal/freeport"
)

// setup is a cluster about to start: Options with an absolute WorkDir, every port chosen and a start
// timeout. The component builders derive every flag and file name from it.
type setup struct {
	Options
	// node is the real node, nil without Options.RealNode; subnet and gateway are its bridge's.
	node            *nodeSetup
	subnet, gateway string
}

// newSetup checks opts and completes them.
func newSetup(opts Options) (setup, error) {
	s := setup{Options: opts}
	if s.SchedulerBinary == "" {
		return s, errors.New("localcluster: Options.SchedulerBinary is empty")
	}
	if s.WorkDir == "" {
		return s, errors.New("localcluster: Options.WorkDir is empty")
	}
	for _, name := range []string{Etcd, APIServer, ControllerManager, Kwok, Scheduler} {
		if _, err := os.Stat(s.binary(name)); err != nil {
			hint := "make k8s-binaries"
			if name == Scheduler {
				hint = "make bin/kube-scheduler"
			}
			return s, fmt.Errorf("localcluster: %s binary missing, run `%s`: %w", name, hint, err)
		}
	}
	var err error
	if s.WorkDir, err = filepath.Abs(s.WorkDir); err != nil {
		return s, fmt.Errorf("localcluster: %w", err)
	}
	if s.RealNode != nil {
		if err := s.completeNode(); err != nil {
			return s, err
		}
	}
	if s.StartTimeout == 0 {
		s.StartTimeout = DefaultStartTimeout
	}
	s.Ports, err = s.Ports.withFree()
	return s, err
}

// prepareWorkDir creates WorkDir, refuses to start over a cluster that still runs there, removes the
// etcd data of an earlier one and writes the kwok stages.
func (s setup) prepareWorkDir() error {
	for _, dir := range []string{s.path("logs"), s.pki("")} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("localcluster: %w", err)
		}
	}
	switch old, err := Attach(s.WorkDir); {
	case err == nil:
		if old.node != nil {
			return fmt.Errorf("localcluster: the real node of an earlier cluster in %s was not stopped; run Attach and Stop first", s.WorkDir)
		}
		for _, p := range old.procs {
			if p.Alive() {
				return fmt.Errorf("localcluster: the cluster in %s is still running (%s, pid %d); stop it first", s.WorkDir, p.Name, p.PID)
			}
		}
	case !errors.Is(err, os.ErrNotExist):
		return err
	}
	// Nodes and leases of an earlier run would come back with its etcd data (and kwok would not take
	// over leases held by its previous identity for about 40 s).
	if err := os.RemoveAll(s.etcdData()); err != nil {
		return fmt.Errorf("localcluster: removing old etcd data: %w", err)
	}
	if s.node != nil {
		if err := s.removeNodeDir(); err != nil {
			return err
		}
	}
	if err := os.WriteFile(s.kwokStages(), kwokStages, 0o644); err != nil {
		return fmt.Errorf("localcluster: writing kwok stages: %w", err)
	}
	return nil
}

// binary returns the path of a component's binary.
func (s setup) binary(name string) string {
	if name == Scheduler {
		return s.SchedulerBinary
	}
	return filepath.Join(s.BinDir, name)
}

func (s setup) path(elem ...string) string {
	return filepath.Join(append([]string{s.WorkDir}, elem...)...)
}

// pki returns the path of a file written by writePKI: ca.crt, serving.crt and .key, front-proxy-ca.crt,
// front-proxy.crt and .key, sa.key, and <component>.kubeconfig.
func (s setup) pki(name string) string { return s.path("pki", name) }

func (s setup) kubeconfig(component string) string { return s.pki(component + ".kubeconfig") }

func (s setup) adminKubeconfig() string { return s.path(KubeconfigFileName) }

func (s setup) etcdData() string { return s.path("etcd-data") }

func (s setup) kwokStages() string { return s.path("kwok.yaml") }

func (s setup) logFile(component string) string { return s.path("logs", component+".log") }

func (s setup) url(scheme string, port int, path string) string {
	return scheme + "://127.0.0.1:" + strconv.Itoa(port) + path
}

// server is the apiserver's URL, which every kubeconfig names.
func (s setup) server() string {
	return "https://" + net.JoinHostPort(s.apiHost(), strconv.Itoa(s.Ports.APIServer))
}

// withFree returns p with every zero port replaced by a port that the kernel chose free on 127.0.0.1,
// so that clusters started at the same time (parallel test binaries) do not collide.
func (p Ports) withFree() (Ports, error) {
	var zero []*int
	for _, port := range []*int{&p.Etcd, &p.EtcdPeer, &p.APIServer, &p.ControllerManager, &p.Scheduler, &p.Kwok} {
		if *port == 0 {
			zero = append(zero, port)
		}
	}
	free, err := freeport.Ports(len(zero))
	if err != nil {
		return p, err
	}
	for i, port := range zero {
		*port = free[i]
	}
	return p, nil
}

// DefaultBinDir returns $LOCALCLUSTER_BIN_DIR, or else bin/k8s in the repository that contains the
// working directory (where `make k8s-binaries` puts the binaries).
func DefaultBinDir() (string, error) {
	if dir := os.Getenv(BinDirEnv); dir != "" {
		return dir, nil
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "bin", "k8s"), nil
}

// DefaultSchedulerBinary returns $LOCALCLUSTER_SCHEDULER, or else bin/kube-scheduler in the
// repository that contains the working directory (where `make bin/kube-scheduler` puts it).
func DefaultSchedulerBinary() (string, error) {
	if path := os.Getenv(SchedulerBinaryEnv); path != "" {
		return path, nil
	}
	root, err := RepoRoot()
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "bin", "kube-scheduler"), nil
}

// RepoRoot walks up from the working directory (a package directory under `go test`) to go.mod.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("localcluster: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("localcluster: no go.mod above the working directory; set %s and %s", BinDirEnv, SchedulerBinaryEnv)
		}
		dir = parent
	}
}
