package localcluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// stopNode stops the real node's processes, in this order: kubelet and kube-proxy (so nothing
// recreates pods or rules), the containers (every task in the cgroup root), containerd and its shims
// (found by their -address argument). It returns the shims' files outside WorkDir, for restoreHost.
func (c *Cluster) stopNode() ([]string, error) {
	st := c.node
	var errs []error
	for _, name := range []string{KubeProxy, Kubelet} {
		if p := c.findProcess(name); p != nil {
			errs = append(errs, p.Stop(stopGrace))
		}
	}
	errs = append(errs, killTasks(st))
	shims := shimProcesses(st.ContainerdSocket)
	shimFiles := shimRuntimeFiles(st.ContainerdState)
	if p := c.findProcess(Containerd); p != nil {
		errs = append(errs, p.Stop(stopGrace))
	}
	errs = append(errs, killAll(append(shims, shimProcesses(st.ContainerdSocket)...)))
	if err := errors.Join(errs...); err != nil {
		return shimFiles, fmt.Errorf("stopping the real node: %w", err)
	}
	return shimFiles, nil
}

// restoreHost undoes the real node's changes once every process is gone (the apiserver listens
// on the bridge's address until then): the mounts under WorkDir (rootfs, volumes, network
// namespaces), the shims' files, the links, iptables tables, sysctls, cgroups and the host
// directories the node created. It goes on after an error, so that one failure leaves as little
// behind as possible, and returns all errors.
func (c *Cluster) restoreHost(shimFiles []string) error {
	st := c.node
	errs := []error{unmountUnder(c.workDir), removeFiles(shimFiles), deleteLinks(st.Bins["ip"], st.Bridge)}
	errs = append(errs, restoreIptables(st), restoreSysctls(st), removeCgroups(st), removeHostFiles(st, c.workDir))
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("restoring the host after the real node: %w", err)
	}
	return nil
}

// findProcess returns the recorded process of a component, or nil.
func (c *Cluster) findProcess(name string) *Process {
	for _, p := range c.procs {
		if p.Name == name {
			return p
		}
	}
	return nil
}

// killTasks kills every process in the node's cgroups (the containers and their sandboxes) until
// none is left; container processes can fork while they are being killed.
func killTasks(st *nodeState) error {
	deadline := time.Now().Add(20 * time.Second)
	for {
		pids := cgroupTasks(st)
		if len(pids) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("localcluster: processes %v still in cgroup %s", pids, st.CgroupRoot)
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// shimProcesses returns containerd-shim processes serving the containerd at socket: their command
// line has `-address <socket>`. Processes are identified by PID and start time.
func shimProcesses(socket string) []*Process {
	entries, _ := os.ReadDir("/proc")
	var out []*Process
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil || !hasArgPair(strings.Split(string(data), "\x00"), "-address", socket) {
			continue
		}
		if _, start, err := procStat(pid); err == nil {
			out = append(out, &Process{Name: "containerd-shim", PID: pid, StartTime: start})
		}
	}
	return out
}

func hasArgPair(args []string, flag, value string) bool {
	for i := 0; i+1 < len(args); i++ {
		if args[i] == flag && args[i+1] == value {
			return true
		}
	}
	return false
}

// killAll stops processes (SIGTERM, SIGKILL after a short grace).
func killAll(procs []*Process) error {
	var errs []error
	for _, p := range procs {
		errs = append(errs, p.Stop(2*time.Second))
	}
	return errors.Join(errs...)
}

// shimRuntimeFiles returns the files that containerd 1.6's shims keep outside containerd's state
// directory: the socket named in each task's address file (/run/containerd/s/<hash>) and runc's
// state directory (/run/containerd/runc/<namespace>/<id>).
func shimRuntimeFiles(stateDir string) []string {
	var files []string
	bundles, _ := filepath.Glob(filepath.Join(stateDir, "io.containerd.runtime.v2.task", "*", "*"))
	for _, b := range bundles {
		if addr, err := os.ReadFile(filepath.Join(b, "address")); err == nil {
			if path, ok := strings.CutPrefix(strings.TrimSpace(string(addr)), "unix://"); ok {
				files = append(files, path)
			}
		}
		ns, id := filepath.Base(filepath.Dir(b)), filepath.Base(b)
		files = append(files, filepath.Join("/run/containerd/runc", ns, id))
	}
	return files
}

func removeFiles(paths []string) error {
	var errs []error
	for _, p := range paths {
		if err := os.RemoveAll(p); err != nil {
			errs = append(errs, fmt.Errorf("localcluster: %w", err))
		}
	}
	return errors.Join(errs...)
}

// unmountUnder unmounts every mount point under dir, deepest first; a busy one is detached.
func unmountUnder(dir string) error {
	var errs []error
	for range 5 {
		points, err := mountsUnder(dir)
		if err != nil || len(points) == 0 {
			return err
		}
		errs = nil
		for _, p := range points {
			if err := syscall.Unmount(p, 0); err != nil && !errors.Is(err, syscall.EINVAL) && !errors.Is(err, syscall.ENOENT) {
				if err := syscall.Unmount(p, syscall.MNT_DETACH); err != nil {
					errs = append(errs, fmt.Errorf("localcluster: unmounting %s: %w", p, err))
				}
			}
		}
	}
	if points, _ := mountsUnder(dir); len(points) > 0 {
		errs = append(errs, fmt.Errorf("localcluster: still mounted under %s: %v", dir, points))
	}
	return errors.Join(errs...)
}

// mountsUnder returns the mount points below dir, the longest (deepest) first.
func mountsUnder(dir string) ([]string, error) {
	mounts, err := readMountinfo()
	if err != nil {
		return nil, err
	}
	var points []string
	for _, m := range mounts {
		if strings.HasPrefix(m.point, dir+"/") {
			points = append(points, m.point)
		}
	}
	sort.Slice(points, func(i, j int) bool { return len(points[i]) > len(points[j]) })
	return points, nil
}

// removeHostFiles removes what the node left outside WorkDir: kubelet's symlinks to our pod logs
// in /var/log/containers, libcni's cached results of our sandboxes, and then the host paths that
// did not exist before the start, deepest first (a directory only if empty).
func removeHostFiles(st *nodeState, workDir string) error {
	var errs []error
	links, _ := filepath.Glob("/var/log/containers/*")
	for _, l := range links {
		if target, err := os.Readlink(l); err == nil && strings.HasPrefix(target, st.PodLogsDir+"/") {
			errs = append(errs, os.Remove(l))
		}
	}
	errs = append(errs, removeFiles(cniResults(workDir)))
	for i := len(st.CreatedPaths) - 1; i >= 0; i-- {
		if err := os.Remove(st.CreatedPaths[i]); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("localcluster: removing %s: %w", st.CreatedPaths[i], err))
		}
	}
	return errors.Join(errs...)
}

// cniResults returns libcni's cached results (/var/lib/cni/results/<network>-<id>-<interface>,
// for our network and containerd's loopback one) whose network namespace is under workDir.
func cniResults(workDir string) []string {
	files, _ := filepath.Glob("/var/lib/cni/results/*")
	var out []string
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		var cached struct {
			Result struct {
				Interfaces []struct {
					Sandbox string `json:"sandbox"`
				} `json:"interfaces"`
			} `json:"result"`
		}
		if json.Unmarshal(data, &cached) != nil {
			continue
		}
		for _, i := range cached.Result.Interfaces {
			if strings.HasPrefix(i.Sandbox, workDir+"/") {
				out = append(out, f)
				break
			}
		}
	}
	return out
}
