package localcluster

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// HostSnapshot is what a real node could leave behind on the host, for a test to compare before
// and after a cluster: Diff reports what changed.
type HostSnapshot struct {
	// Processes maps "pid/starttime" to the process's parent PID and command line.
	Processes map[string]HostProcess
	// Mounts are "mount point fstype source" lines of /proc/self/mountinfo.
	Mounts []string
	// Links are the network interfaces' names.
	Links []string
	// Iptables maps "iptables/filter" (program/table) to its rules without counters.
	Iptables map[string][]string
	// NftTables are the nftables tables ("ip filter"), empty without nft.
	NftTables []string
	// Sysctls maps the writable settings under /proc/sys/{kernel,vm,net} (without per-interface
	// ones) to their values.
	Sysctls map[string]string
	// Cgroups are the cgroup directories of every hierarchy.
	Cgroups []string
	// Files are the entries below the host directories that kubelet, containerd and CNI use.
	Files []string
}

// HostProcess is one process of a HostSnapshot.
type HostProcess struct {
	PPID    int
	Cmdline string
	// Exe is the base name of the process's executable; Cgroup its /proc/<pid>/cgroup.
	Exe, Cgroup string
}

// clusterPrograms are the executables a cluster with a real node runs on the host or in its
// containers: the control plane, the node, the runtime, and the images of the tests.
var clusterPrograms = map[string]bool{
	Etcd: true, APIServer: true, ControllerManager: true, Scheduler: true, Kwok: true, Kubelet: true, KubeProxy: true,
	Containerd: true, "containerd-shim-runc-v2": true, "runc": true, "pause": true, "manager": true,
}

// fromCluster reports whether a process is one a cluster may have started: one of its programs or
// any process in the node's cgroups. Other processes that the machine starts meanwhile (a shell of
// another user, a daemon) are no leftover of the cluster.
func (p HostProcess) fromCluster() bool {
	exe := p.Exe
	if exe == "" {
		exe, _, _ = strings.Cut(p.Cmdline, " ")
		exe = filepath.Base(exe)
	}
	return clusterPrograms[exe] || strings.Contains(p.Cgroup, "/localcluster-")
}

// clusterCgroup reports whether a cgroup directory is one a real node creates (below its cgroup
// root, kubelet's kubepods, containerd's): others come and go with the machine's own processes.
func clusterCgroup(dir string) bool {
	for _, part := range []string{"localcluster", "kubepods", "kubelet", "containerd", "/pod"} {
		if strings.Contains(dir, part) {
			return true
		}
	}
	return false
}

// snapshotDirs are the host directories whose contents a HostSnapshot lists.
var snapshotDirs = []string{
	"/var/run/netns", "/run/netns", "/var/lib/cni", "/var/log/containers", "/var/log/pods", "/run/containerd",
	"/var/lib/containerd", "/opt/containerd", "/etc/cni", "/var/lib/kubelet", "/etc/containerd",
}

// SnapshotHost reads the host's processes, mounts, links, iptables rules, nftables tables,
// sysctls, cgroups and the node directories outside WorkDir. It needs iptables-save for the rules.
func SnapshotHost() (HostSnapshot, error) {
	var snap HostSnapshot
	var err error
	if snap.Processes, err = hostProcesses(); err != nil {
		return snap, err
	}
	mounts, err := readMountinfo()
	if err != nil {
		return snap, err
	}
	for _, m := range mounts {
		snap.Mounts = append(snap.Mounts, m.point+" "+m.fstype+" "+m.source)
	}
	if snap.Links, err = dirNames("/sys/class/net"); err != nil {
		return snap, err
	}
	if snap.Iptables, err = snapshotIptables(); err != nil {
		return snap, err
	}
	for t := range nftTables() {
		snap.NftTables = append(snap.NftTables, t)
	}
	snap.Sysctls = snapshotSysctls()
	if snap.Cgroups, err = snapshotCgroups(); err != nil {
		return snap, err
	}
	for _, d := range snapshotDirs {
		snap.Files = append(snap.Files, walkNames(d)...)
	}
	return snap, nil
}

func hostProcesses() (map[string]HostProcess, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("localcluster: listing processes: %w", err)
	}
	procs := map[string]HostProcess{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		fields, err := statFields(pid)
		if err != nil {
			continue
		}
		ppid, _ := strconv.Atoi(fields[1])
		dir := filepath.Join("/proc", e.Name())
		cmdline, _ := os.ReadFile(filepath.Join(dir, "cmdline"))
		exe, _ := os.Readlink(filepath.Join(dir, "exe"))
		cgroup, _ := os.ReadFile(filepath.Join(dir, "cgroup"))
		procs[e.Name()+"/"+fields[19]] = HostProcess{
			PPID: ppid, Cmdline: strings.TrimSpace(strings.ReplaceAll(string(cmdline), "\x00", " ")),
			Exe: filepath.Base(strings.TrimSuffix(exe, " (deleted)")), Cgroup: string(cgroup),
		}
	}
	return procs, nil
}

func snapshotIptables() (map[string][]string, error) {
	out := map[string][]string{}
	tables := nftTables()
	for _, prog := range []string{"iptables", "ip6tables"} {
		bin, err := exec.LookPath(prog + "-save")
		if err != nil {
			continue
		}
		for _, table := range iptablesTables {
			if tables != nil && !tables[nftFamily[prog]+" "+table] {
				continue
			}
			save, err := iptablesSave(bin, table)
			if err != nil {
				return nil, err
			}
			if lines := normalizeIptables(save); lines != nil {
				out[prog+"/"+table] = lines
			}
		}
	}
	return out, nil
}

// volatileSysctls change by themselves.
var volatileSysctls = map[string]bool{"kernel/ns_last_pid": true, "kernel/random/boot_id": true, "kernel/random/uuid": true}

// snapshotSysctls reads the writable files under /proc/sys/{kernel,vm,net}; per-interface
// settings (net/*/conf/<if>, net/*/neigh/<if>) are left out: interfaces come and go with their links.
func snapshotSysctls() map[string]string {
	out := map[string]string{}
	for _, top := range []string{"kernel", "vm", "net"} {
		_ = filepath.WalkDir(filepath.Join("/proc/sys", top), func(path string, d os.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			key := strings.TrimPrefix(path, "/proc/sys/")
			if d.IsDir() {
				if perInterface(key) {
					return filepath.SkipDir
				}
				return nil
			}
			if info, err := d.Info(); err != nil || info.Mode().Perm()&0o200 == 0 || volatileSysctls[key] {
				return nil
			}
			if v, err := os.ReadFile(path); err == nil {
				out[key] = strings.TrimSpace(string(v))
			}
			return nil
		})
	}
	return out
}

// perInterface reports whether a sysctl directory is one interface's (not all or default).
func perInterface(key string) bool {
	parts := strings.Split(key, "/")
	if len(parts) != 4 || parts[0] != "net" || (parts[2] != "conf" && parts[2] != "neigh") {
		return false
	}
	return parts[3] != "all" && parts[3] != "default"
}

func snapshotCgroups() ([]string, error) {
	mounts, err := cgroupMounts()
	if err != nil {
		return nil, err
	}
	var out []string
	for _, m := range mounts {
		dirs, err := cgroupDirs(m)
		if err != nil {
			return nil, err
		}
		out = append(out, dirs...)
	}
	return out, nil
}

func dirNames(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("localcluster: %w", err)
	}
	names := make([]string, 0, len(entries))
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names, nil
}

// walkNames returns dir and the paths below it; nothing if dir does not exist.
func walkNames(dir string) []string {
	var out []string
	_ = filepath.WalkDir(dir, func(path string, _ os.DirEntry, err error) error {
		if err == nil {
			out = append(out, path)
		}
		return nil
	})
	return out
}

// Diff lists what differs in after: sets that gained or lost entries ("+ " and "- " lines), changed
// sysctls and iptables tables. Processes are compared only for new ones that no process of the
// snapshot started (directly or through new processes): daemons and their children left behind,
// such as containerd shims, reparented to init; and only those a cluster runs (fromCluster), as
// are cgroups (clusterCgroup), so that what the machine starts meanwhile is not counted.
// Nil means nothing changed.
func (s HostSnapshot) Diff(after HostSnapshot) []string {
	var out []string
	out = append(out, diffSets("mount", s.Mounts, after.Mounts)...)
	out = append(out, diffSets("link", s.Links, after.Links)...)
	out = append(out, diffSets("nft table", s.NftTables, after.NftTables)...)
	out = append(out, diffSets("cgroup", filter(s.Cgroups, clusterCgroup), filter(after.Cgroups, clusterCgroup))...)
	out = append(out, diffSets("file", s.Files, after.Files)...)
	for _, key := range unionKeys(s.Iptables, after.Iptables) {
		out = append(out, diffSets(key, s.Iptables[key], after.Iptables[key])...)
	}
	for _, key := range sortedKeys(s.Sysctls) {
		if v, ok := after.Sysctls[key]; ok && v != s.Sysctls[key] {
			out = append(out, fmt.Sprintf("sysctl %s: %q -> %q", key, s.Sysctls[key], v))
		}
	}
	return append(out, s.orphans(after)...)
}

// DiffIn is Diff for the cluster (or clusters) of workDir: a new process counts only if its command
// line names workDir (the control plane, containerd and its shims) or it runs in a real node's
// cgroups (the containers); so processes that others start on the machine meanwhile, such as
// another test's apiserver, are not counted.
func (s HostSnapshot) DiffIn(after HostSnapshot, workDir string) []string {
	mine := HostSnapshot{Processes: map[string]HostProcess{}}
	for key, p := range after.Processes {
		if _, old := s.Processes[key]; old || strings.Contains(p.Cmdline, workDir) || strings.Contains(p.Cgroup, "/localcluster-") {
			mine.Processes[key] = p
		}
	}
	filtered := after
	filtered.Processes = mine.Processes
	return s.Diff(filtered)
}

// orphans are the new processes of after whose ancestry reaches init (or a process that is not in
// after) only through new processes.
func (s HostSnapshot) orphans(after HostSnapshot) []string {
	byPID := map[int]string{}
	for key := range after.Processes {
		pid, _ := strconv.Atoi(strings.SplitN(key, "/", 2)[0])
		byPID[pid] = key
	}
	var out []string
	for _, key := range sortedKeys(after.Processes) {
		if _, old := s.Processes[key]; old || !after.Processes[key].fromCluster() || !orphaned(s, after, byPID, key) {
			continue
		}
		out = append(out, fmt.Sprintf("+ process %s: %s", key, after.Processes[key].Cmdline))
	}
	return out
}

func orphaned(s, after HostSnapshot, byPID map[int]string, key string) bool {
	for range 100 {
		p := after.Processes[key]
		if p.PPID <= 2 {
			// Kernel threads (children of kthreadd, pid 2) have an empty command line.
			return p.PPID == 1 || p.Cmdline != ""
		}
		parent, ok := byPID[p.PPID]
		if !ok {
			return false
		}
		if _, old := s.Processes[parent]; old {
			return false
		}
		key = parent
	}
	return false
}

func diffSets(what string, before, after []string) []string {
	in := map[string]bool{}
	for _, b := range before {
		in[b] = true
	}
	out := map[string]bool{}
	for _, a := range after {
		out[a] = true
	}
	var lines []string
	for _, a := range after {
		if !in[a] {
			lines = append(lines, "+ "+what+" "+a)
		}
	}
	for _, b := range before {
		if !out[b] {
			lines = append(lines, "- "+what+" "+b)
		}
	}
	return lines
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func unionKeys(a, b map[string][]string) []string {
	m := map[string]bool{}
	for k := range a {
		m[k] = true
	}
	for k := range b {
		m[k] = true
	}
	return sortedKeys(m)
}

// filter returns the elements of list for which keep is true.
func filter(list []string, keep func(string) bool) []string {
	var out []string
	for _, e := range list {
		if keep(e) {
			out = append(out, e)
		}
	}
	return out
}
