package cluster

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/schedops/scheduler-profile-operator/internal/freeport"
	"github.com/schedops/scheduler-profile-operator/internal/localcluster"
)

// stopGrace is how long a process has to exit after SIGTERM.
const stopGrace = 10 * time.Second

// Scheduler is a kube-scheduler process to start.
type Scheduler struct {
	// Name names the process and its files in the work directory.
	Name string
	// Binary is the kube-scheduler to run.
	Binary string
	// Config is a KubeSchedulerConfiguration without clientConnection: the operator renders none,
	// since in a pod the scheduler uses its in-cluster config.
	Config []byte
	// QPS is the scheduler's client-side rate limit (qps and burst); 0 keeps its default.
	QPS int
	// Args are more command-line flags.
	Args []string
}

// StartSchedulers starts each of schedulers on a port of its own, pointed at c, with the log
// verbosity of the operator's Deployments. Configurations and logs go to dir.
func (c *Cluster) StartSchedulers(dir string, schedulers ...Scheduler) ([]*localcluster.Process, error) {
	ports, err := freeport.Ports(len(schedulers))
	if err != nil {
		return nil, err
	}
	var procs []*localcluster.Process
	for i, s := range schedulers {
		config := filepath.Join(dir, s.Name+".yaml")
		// A top-level key appended to the rendered configuration points the scheduler at the
		// test apiserver.
		data := fmt.Sprintf("%sclientConnection:\n  kubeconfig: %q\n", s.Config, c.Kubeconfig)
		if s.QPS > 0 {
			data += fmt.Sprintf("  qps: %d\n  burst: %d\n", s.QPS, s.QPS)
		}
		if err := os.WriteFile(config, []byte(data), 0o600); err != nil {
			return procs, err
		}
		args := append([]string{"--config=" + config, "--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(ports[i]), "--v=2"}, s.Args...)
		proc, err := localcluster.StartProcess(s.Name, s.Binary, args, nil, filepath.Join(dir, s.Name+".log"), false)
		if err != nil {
			return procs, err
		}
		procs = append(procs, proc)
	}
	return procs, nil
}

// StopAll stops procs, each within a grace period.
func StopAll(procs []*localcluster.Process) {
	for _, p := range procs {
		if err := p.Stop(stopGrace); err != nil {
			fmt.Fprintln(os.Stderr, "bench:", err)
		}
	}
}

// Memory is what /proc/<pid>/status says of the resident memory of a process, in bytes.
type Memory struct {
	// RSS is VmRSS, resident now; HWM is VmHWM, the peak of RSS.
	RSS, HWM int64
}

// ReadMemory reads VmRSS and VmHWM of pid ("self" for this process) from /proc/<pid>/status,
// where they are in kB.
func ReadMemory(pid string) (Memory, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%s/status", pid))
	if err != nil {
		return Memory{}, err
	}
	var m Memory
	fields := map[string]*int64{"VmRSS:": &m.RSS, "VmHWM:": &m.HWM}
	for line := range strings.Lines(string(data)) {
		f := strings.Fields(line)
		if len(f) != 3 || fields[f[0]] == nil || f[2] != "kB" {
			continue
		}
		kb, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			return Memory{}, fmt.Errorf("parsing %q of /proc/%s/status: %w", line, pid, err)
		}
		*fields[f[0]] = kb << 10
	}
	if m.RSS == 0 || m.HWM == 0 {
		return Memory{}, fmt.Errorf("no VmRSS or VmHWM in /proc/%s/status", pid)
	}
	return m, nil
}

// MiB converts bytes to MiB.
func MiB[T int64 | float64](bytes T) float64 { return float64(bytes) / (1 << 20) }

// ChildrenCPU is the user+system CPU time of this process's live child processes: the envtest
// apiserver and etcd of a Cluster started in it.
func ChildrenCPU() (time.Duration, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0, err
	}
	self := strconv.Itoa(os.Getpid())
	var total time.Duration
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue // exited since the listing
		}
		// The fields after the command name, which is in parentheses: state, then the parent.
		i := strings.LastIndexByte(string(data), ')')
		if i < 0 {
			continue
		}
		if fields := strings.Fields(string(data[i+1:])); len(fields) < 2 || fields[1] != self {
			continue
		}
		cpu, err := localcluster.CPUTime(pid)
		if err != nil {
			continue
		}
		total += cpu
	}
	return total, nil
}
