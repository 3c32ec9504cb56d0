package localcluster

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// nodeState is what Stop needs to leave the host as the real node found it; it is in the state
// file, so that Stop after Attach can do it too. It is recorded before the host is changed.
type nodeState struct {
	Name    string `json:"name"`
	Bridge  string `json:"bridge"`
	Subnet  string `json:"subnet"`
	Gateway string `json:"gateway"`
	// CgroupRoot is the kubelet's cgroupRoot, created in each hierarchy of CgroupMounts.
	CgroupRoot   string   `json:"cgroupRoot"`
	CgroupMounts []string `json:"cgroupMounts"`
	// ContainerdSocket identifies our shims: they run with `-address <socket>`.
	ContainerdSocket string `json:"containerdSocket"`
	ContainerdState  string `json:"containerdState"`
	PodLogsDir       string `json:"podLogsDir"`
	NetworkName      string `json:"networkName"`
	// Bins are the host programs used (ip, iptables-restore...).
	Bins map[string]string `json:"bins"`
	// Iptables maps "iptables/filter" (program/table) to that table's iptables-save output before
	// the start; an empty string means the table did not exist.
	Iptables map[string]string `json:"iptables"`
	// Sysctls maps a path under /proc/sys to its value before the start.
	Sysctls map[string]string `json:"sysctls"`
	// CreatedPaths are the hostPaths that did not exist before the start, in hostPaths' order.
	CreatedPaths []string `json:"createdPaths"`
}

// iptablesTables are the tables recorded and restored, for both iptables and ip6tables.
var iptablesTables = []string{"filter", "nat", "mangle", "raw", "security"}

// restoredSysctls are the settings that kubelet (vm, kernel), the bridge CNI plugin (forwarding)
// and kube-proxy (route_localnet, conntrack) may change. Missing ones are skipped.
var restoredSysctls = []string{
	"net/ipv4/ip_forward", // first: writing it also resets conf/*/forwarding and conf/all/accept_redirects
	"net/ipv4/conf/all/accept_redirects",
	"net/ipv4/conf/all/forwarding", "net/ipv4/conf/default/forwarding",
	"net/ipv6/conf/all/forwarding", "net/ipv6/conf/default/forwarding",
	"net/ipv4/conf/all/route_localnet",
	"vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic", "kernel/panic_on_oops",
	"kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes",
	"net/bridge/bridge-nf-call-iptables", "net/bridge/bridge-nf-call-ip6tables", "net/bridge/bridge-nf-call-arptables",
	"net/netfilter/nf_conntrack_max", "net/netfilter/nf_conntrack_tcp_timeout_established",
	"net/netfilter/nf_conntrack_tcp_timeout_close_wait", "net/netfilter/nf_conntrack_tcp_be_liberal",
	"net/netfilter/nf_conntrack_udp_timeout", "net/netfilter/nf_conntrack_udp_timeout_stream",
}

// hostPaths are directories (each after its parent) and files outside WorkDir that kubelet,
// containerd's shims and libcni create and leave behind. Kubelet's device manager serves its socket
// in /var/lib/kubelet/device-plugins whatever --root-dir says (the path is a constant of the device
// plugin API).
var hostPaths = []string{
	"/var/log/containers", "/var/lib/cni", "/var/lib/cni/results", "/run/containerd", "/run/containerd/s", "/run/containerd/runc", "/run/containerd/runc/k8s.io",
	"/var/lib/kubelet", "/var/lib/kubelet/device-plugins", "/var/lib/kubelet/device-plugins/kubelet.sock",
}

// recordHost reads what Stop will restore.
func recordHost(st *nodeState) error {
	st.Iptables = map[string]string{}
	tables := nftTables()
	for _, prog := range []string{"iptables", "ip6tables"} {
		for _, table := range iptablesTables {
			if tables != nil && !tables[nftFamily[prog]+" "+table] {
				st.Iptables[prog+"/"+table] = ""
				continue
			}
			out, err := iptablesSave(st.Bins[prog+"-save"], table)
			if err != nil {
				return err
			}
			st.Iptables[prog+"/"+table] = out
		}
	}
	st.Sysctls = map[string]string{}
	for _, key := range restoredSysctls {
		if v, err := os.ReadFile(filepath.Join("/proc/sys", key)); err == nil {
			st.Sysctls[key] = strings.TrimSpace(string(v))
		}
	}
	for _, path := range hostPaths {
		if _, err := os.Lstat(path); os.IsNotExist(err) {
			st.CreatedPaths = append(st.CreatedPaths, path)
		}
	}
	return nil
}

// nftFamily is the nftables family of the tables of iptables-nft and ip6tables-nft.
var nftFamily = map[string]string{"iptables": "ip", "ip6tables": "ip6"}

// nftTables returns the nftables tables as "family name", or nil without nft (iptables-legacy
// tables always exist).
func nftTables() map[string]bool {
	nft, err := exec.LookPath("nft")
	if err != nil {
		return nil
	}
	out, err := exec.Command(nft, "list", "tables").Output()
	if err != nil {
		return nil
	}
	tables := map[string]bool{}
	for _, l := range strings.Split(string(out), "\n") {
		if rest, ok := strings.CutPrefix(strings.TrimSpace(l), "table "); ok {
			tables[rest] = true
		}
	}
	return tables
}

// iptablesSave returns one table's rules.
func iptablesSave(bin, table string) (string, error) {
	out, err := exec.Command(bin, "-t", table).Output()
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			// iptables-nft fails on a table it has not created yet.
			return "", nil
		}
		return "", fmt.Errorf("localcluster: %s -t %s: %w", bin, table, err)
	}
	return string(out), nil
}

var chainCounters = regexp.MustCompile(`\s*\[\d+:\d+\]$`)

// normalizeIptables drops comments and counters, so that two saves of the same rules compare equal,
// and treats a table of empty built-in chains with policy ACCEPT as no table.
func normalizeIptables(save string) []string {
	var lines []string
	onlyDefaults := true
	for _, l := range strings.Split(save, "\n") {
		l = strings.TrimSpace(l)
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		l = chainCounters.ReplaceAllString(l, "")
		switch {
		case strings.HasPrefix(l, "*"), l == "COMMIT":
		case strings.HasPrefix(l, ":") && strings.HasSuffix(l, " ACCEPT"):
		default:
			onlyDefaults = false
		}
		lines = append(lines, l)
	}
	if onlyDefaults {
		return nil
	}
	return lines
}

// restoreIptables puts back every table that differs from its recorded content: iptables-restore
// of the recorded rules replaces the whole table; a table that did not exist is deleted.
func restoreIptables(st *nodeState) error {
	var errs []error
	keys := make([]string, 0, len(st.Iptables))
	for k := range st.Iptables {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	tables := nftTables()
	for _, key := range keys {
		prog, table, _ := strings.Cut(key, "/")
		before := st.Iptables[key]
		if tables != nil && !tables[nftFamily[prog]+" "+table] && before == "" {
			continue
		}
		now, err := iptablesSave(st.Bins[prog+"-save"], table)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		errs = append(errs, restoreTable(st, prog, table, before, now))
	}
	return errors.Join(errs...)
}

// restoreTable replaces one table with its recorded content if it differs.
func restoreTable(st *nodeState, prog, table, before, now string) error {
	switch {
	case before == "":
		return deleteTable(st, prog, table, now)
	case strings.Join(normalizeIptables(now), "\n") == strings.Join(normalizeIptables(before), "\n"):
		return nil
	}
	if _, err := execInput(before, st.Bins[prog+"-restore"]); err != nil {
		return fmt.Errorf("localcluster: restoring %s table %s: %w", prog, table, err)
	}
	return nil
}

// deleteTable removes a table that the cluster's start created: with nftables, the table itself;
// else its rules and chains, with the built-in chains' policies ACCEPT.
func deleteTable(st *nodeState, prog, table, now string) error {
	family := nftFamily[prog]
	if nft, err := exec.LookPath("nft"); err == nil {
		if _, err := execHost(nft, "delete", "table", family, table); err == nil {
			return nil
		}
	}
	empty := "*" + table + "\n"
	for _, l := range strings.Split(now, "\n") {
		if f := strings.Fields(l); len(f) >= 2 && strings.HasPrefix(l, ":") && f[1] != "-" {
			empty += f[0] + " ACCEPT [0:0]\n"
		}
	}
	if _, err := execInput(empty+"COMMIT\n", st.Bins[prog+"-restore"]); err != nil {
		return fmt.Errorf("localcluster: emptying %s table %s: %w", prog, table, err)
	}
	return nil
}

// restoreSysctls writes back each recorded value that changed, in the recorded order.
func restoreSysctls(st *nodeState) error {
	var errs []error
	for _, key := range restoredSysctls {
		before, ok := st.Sysctls[key]
		if !ok {
			continue
		}
		path := filepath.Join("/proc/sys", key)
		now, err := os.ReadFile(path)
		if err != nil || strings.TrimSpace(string(now)) == before {
			continue
		}
		if err := os.WriteFile(path, []byte(before+"\n"), 0o644); err != nil {
			errs = append(errs, fmt.Errorf("localcluster: restoring sysctl %s: %w", key, err))
		}
	}
	return errors.Join(errs...)
}
