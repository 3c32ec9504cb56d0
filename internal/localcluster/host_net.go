package localcluster

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// nodeSubnets is where the real node's bridge takes its /24 from.
const nodeSubnets = "10.250.0.0/16"

// freeSubnet returns a /24 of nodeSubnets that no address or route of the host overlaps, starting
// at one derived from id so that clusters in different WorkDirs tend to pick different ones.
func freeSubnet(id string) (*net.IPNet, error) {
	used, err := hostNetworks()
	if err != nil {
		return nil, err
	}
	_, base, _ := net.ParseCIDR(nodeSubnets)
	seed, _ := hex.DecodeString(id)
	start := int(seed[0])
	for i := range 256 {
		ip := append(net.IP(nil), base.IP.To4()...)
		ip[2] = byte((start + i) % 256)
		candidate := &net.IPNet{IP: ip, Mask: net.CIDRMask(24, 32)}
		if !overlapsAny(candidate, used) {
			return candidate, nil
		}
	}
	return nil, fmt.Errorf("localcluster: no free /24 in %s for the real node's bridge", nodeSubnets)
}

// hostNetworks returns the networks of the host's IPv4 addresses and of its main routing table
// (except the default route).
func hostNetworks() ([]*net.IPNet, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, fmt.Errorf("localcluster: listing addresses: %w", err)
	}
	var nets []*net.IPNet
	for _, a := range addrs {
		if ipn, ok := a.(*net.IPNet); ok && ipn.IP.To4() != nil {
			nets = append(nets, ipn)
		}
	}
	routes, err := mainRoutes()
	return append(nets, routes...), err
}

// mainRoutes parses /proc/net/route: destination and mask are little-endian hex.
func mainRoutes() ([]*net.IPNet, error) {
	f, err := os.Open("/proc/net/route")
	if err != nil {
		return nil, fmt.Errorf("localcluster: reading routes: %w", err)
	}
	defer func() { _ = f.Close() }()
	var nets []*net.IPNet
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 8 || fields[0] == "Iface" {
			continue
		}
		dst, err1 := hex.DecodeString(fields[1])
		mask, err2 := hex.DecodeString(fields[7])
		if err1 != nil || err2 != nil || len(dst) != 4 || len(mask) != 4 || binary.LittleEndian.Uint32(mask) == 0 {
			continue
		}
		nets = append(nets, &net.IPNet{IP: reverse(dst), Mask: net.IPMask(reverse(mask))})
	}
	return nets, sc.Err()
}

func reverse(b []byte) []byte {
	out := make([]byte, len(b))
	for i := range b {
		out[len(b)-1-i] = b[i]
	}
	return out
}

func overlapsAny(n *net.IPNet, others []*net.IPNet) bool {
	for _, o := range others {
		if n.Contains(o.IP.Mask(o.Mask)) || o.Contains(n.IP) {
			return true
		}
	}
	return false
}

// execHost runs a host program and returns its combined output; errors include the output.
func execHost(bin string, args ...string) (string, error) {
	return execInput("", bin, args...)
}

// execContext is execHost, killed when ctx ends.
func execContext(ctx context.Context, bin string, args ...string) (string, error) {
	return execInputContext(ctx, "", bin, args...)
}

// execInput is execHost with stdin.
func execInput(stdin, bin string, args ...string) (string, error) {
	return execInputContext(context.Background(), stdin, bin, args...)
}

func execInputContext(ctx context.Context, stdin, bin string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, bin, args...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s %s: %w: %s", filepath.Base(bin), strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// createBridge creates the bridge with the gateway address of its subnet, sets it up, and routes
// the Service range to it with the gateway as source: the host's own connections to Service IPs
// (the apiserver calling a webhook, a test scraping metrics) are DNATed by kube-proxy to pods on
// the bridge, and without this route their source would be the address of the host's default
// route, its external interface. The route goes with the bridge. The bridge's alias is the
// cluster's WorkDir, so that a node whose processes were killed can be found and undone.
func (n *nodeSetup) createBridge(gatewayCIDR string) error {
	ip := n.bins["ip"]
	gateway, _, _ := strings.Cut(gatewayCIDR, "/")
	for _, args := range [][]string{
		{"link", "add", n.bridgeName(), "type", "bridge"},
		{"addr", "add", gatewayCIDR, "dev", n.bridgeName()},
		{"link", "set", n.bridgeName(), "alias", n.workDir},
		{"link", "set", n.bridgeName(), "up"},
		{"route", "add", serviceCIDR, "dev", n.bridgeName(), "src", gateway},
	} {
		if _, err := execHost(ip, args...); err != nil {
			return fmt.Errorf("localcluster: creating the bridge: %w", err)
		}
	}
	return nil
}

// addForwardDrop adds our chain to the mangle table's FORWARD, for IPv4 and IPv6, dropping every
// packet forwarded from the bridge to another interface, so that no pod traffic leaves the machine.
// mangle's FORWARD runs before filter's, where kube-proxy and kubelet insert their ACCEPT rules.
func (n *nodeSetup) addForwardDrop() error {
	for _, bin := range []string{n.bins["iptables"], n.bins["ip6tables"]} {
		for _, args := range [][]string{
			{"-t", "mangle", "-N", n.chainName()},
			{"-t", "mangle", "-A", n.chainName(), "-i", n.bridgeName(), "!", "-o", n.bridgeName(), "-j", "DROP"},
			{"-t", "mangle", "-I", "FORWARD", "1", "-j", n.chainName()},
		} {
			if _, err := execHost(bin, args...); err != nil {
				return fmt.Errorf("localcluster: adding the forward drop rule: %w", err)
			}
		}
	}
	return nil
}

// deleteLinks deletes the interfaces attached to bridge (the host ends of the pods' veths), then
// the bridge. Links already gone are not an error.
func deleteLinks(ipBin, bridge string) error {
	if _, err := os.Stat(filepath.Join("/sys/class/net", bridge)); os.IsNotExist(err) {
		return nil
	}
	ports, _ := os.ReadDir(filepath.Join("/sys/class/net", bridge, "brif"))
	var errs []string
	for _, link := range append(names(ports), bridge) {
		if err := deleteLink(ipBin, link); err != nil {
			errs = append(errs, err.Error())
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("localcluster: deleting links: %s", strings.Join(errs, "; "))
	}
	return nil
}

// deleteLink deletes a link unless it is gone: a veth goes with its network namespace, so that it
// can vanish between the listing and the delete ("Cannot find device", or "RTNETLINK answers: No
// such device" when it goes during the delete).
func deleteLink(ipBin, name string) error {
	_, err := execHost(ipBin, "link", "del", name)
	if err == nil {
		return nil
	}
	if _, statErr := os.Stat(filepath.Join("/sys/class/net", name)); os.IsNotExist(statErr) {
		return nil
	}
	return err
}

// names returns the names of directory entries.
func names(entries []os.DirEntry) []string {
	out := make([]string, 0, len(entries))
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}
