package localcluster

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// prepareHost records the host's state in the state file, then changes it for the real node: the
// kubelet's cgroup root, the bridge with the gateway address, the forward drop rule, and the
// configuration files. Recording first means that Stop can undo a start that failed half-way.
func (c *Cluster) prepareHost(s setup) error {
	mounts, err := cgroupMounts()
	if err != nil {
		return err
	}
	st := &nodeState{
		Name: s.node.Name, Bridge: s.node.bridgeName(), Subnet: s.subnet, Gateway: s.gateway,
		CgroupRoot: s.node.cgroupRoot(), CgroupMounts: mounts,
		ContainerdSocket: s.containerdSocket(), ContainerdState: s.containerdState(),
		PodLogsDir: s.podLogsDir(), NetworkName: s.node.networkName(), Bins: s.node.bins,
	}
	if err := recordHost(st); err != nil {
		return err
	}
	c.node = st
	if err := c.writeState(); err != nil {
		return err
	}
	if err := createCgroups(st); err != nil {
		return err
	}
	if err := s.node.createBridge(s.gateway + "/24"); err != nil {
		return err
	}
	if err := s.node.addForwardDrop(); err != nil {
		return err
	}
	for _, dir := range []string{s.containerdRoot(), s.containerdState(), s.kubeletRoot(), s.podLogsDir()} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return fmt.Errorf("localcluster: %w", err)
		}
	}
	return s.writeNodeConfigs()
}

// cgroupMounts returns the mount points of the cgroup hierarchies (v1 and the v2 one, if any).
func cgroupMounts() ([]string, error) {
	mounts, err := readMountinfo()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, m := range mounts {
		if m.fstype == "cgroup" || m.fstype == "cgroup2" {
			out = append(out, m.point)
		}
	}
	return out, nil
}

// createCgroups creates the cgroup root in every hierarchy (the kubelet refuses a cgroupRoot that
// does not exist); a cpuset cgroup gets its parent's CPUs and memory nodes, or no task could join it.
func createCgroups(st *nodeState) error {
	for _, m := range st.CgroupMounts {
		dir := filepath.Join(m, st.CgroupRoot)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return fmt.Errorf("localcluster: creating cgroup %s: %w", dir, err)
		}
		for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
			parent, err := os.ReadFile(filepath.Join(m, f))
			if err != nil {
				continue
			}
			if err := os.WriteFile(filepath.Join(dir, f), parent, 0o644); err != nil {
				return fmt.Errorf("localcluster: setting %s of %s: %w", f, dir, err)
			}
		}
	}
	return nil
}

// removeCgroups removes the cgroup root and everything below it, deepest first; the cgroups must
// be empty of tasks.
func removeCgroups(st *nodeState) error {
	var errs []error
	for _, m := range st.CgroupMounts {
		root := filepath.Join(m, st.CgroupRoot)
		dirs, err := cgroupDirs(root)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for i := len(dirs) - 1; i >= 0; i-- {
			if err := os.Remove(dirs[i]); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, fmt.Errorf("localcluster: removing cgroup: %w", err))
			}
		}
	}
	return errors.Join(errs...)
}

// cgroupDirs returns root and the directories below it, parents before children.
func cgroupDirs(root string) ([]string, error) {
	var dirs []string
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return filepath.SkipDir
			}
			return err
		}
		if d.IsDir() {
			dirs = append(dirs, path)
		}
		return nil
	})
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("localcluster: listing cgroups: %w", err)
	}
	return dirs, nil
}

// cgroupTasks returns the PIDs in the cgroup root and below, in every hierarchy.
func cgroupTasks(st *nodeState) []int {
	seen := map[int]bool{}
	for _, m := range st.CgroupMounts {
		dirs, _ := cgroupDirs(filepath.Join(m, st.CgroupRoot))
		for _, d := range dirs {
			data, err := os.ReadFile(filepath.Join(d, "cgroup.procs"))
			if err != nil {
				continue
			}
			for _, f := range strings.Fields(string(data)) {
				var pid int
				if _, err := fmt.Sscan(f, &pid); err == nil {
					seen[pid] = true
				}
			}
		}
	}
	pids := make([]int, 0, len(seen))
	for pid := range seen {
		pids = append(pids, pid)
	}
	sort.Ints(pids)
	return pids
}

// mount is one line of /proc/self/mountinfo.
type mount struct {
	point, fstype, source string
}

// readMountinfo parses /proc/self/mountinfo; mount points are unescaped (\040 is a space).
func readMountinfo() ([]mount, error) {
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return nil, fmt.Errorf("localcluster: reading mounts: %w", err)
	}
	defer func() { _ = f.Close() }()
	var mounts []mount
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		sep := -1
		for i, fld := range fields {
			if fld == "-" {
				sep = i
				break
			}
		}
		if len(fields) < 5 || sep < 0 || sep+2 >= len(fields) {
			continue
		}
		mounts = append(mounts, mount{point: unescapeMount(fields[4]), fstype: fields[sep+1], source: fields[sep+2]})
	}
	return mounts, sc.Err()
}

// unescapeMount decodes the octal escapes of mountinfo (space, tab, newline, backslash).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			var v int
			if _, err := fmt.Sscanf(s[i+1:i+4], "%o", &v); err == nil {
				b.WriteByte(byte(v))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
