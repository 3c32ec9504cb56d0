package localcluster

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// nodeBridge is a real node's bridge on the host and the WorkDir its alias names ("" for none).
type nodeBridge struct {
	name, workDir string
}

// nodeBridges lists the real nodes' bridges on the host.
func nodeBridges() ([]nodeBridge, error) {
	links, err := os.ReadDir("/sys/class/net")
	if err != nil {
		return nil, fmt.Errorf("localcluster: listing links: %w", err)
	}
	var out []nodeBridge
	for _, l := range links {
		if !strings.HasPrefix(l.Name(), bridgePrefix) {
			continue
		}
		alias, _ := os.ReadFile(filepath.Join("/sys/class/net", l.Name(), "ifalias"))
		out = append(out, nodeBridge{name: l.Name(), workDir: strings.TrimSpace(string(alias))})
	}
	return out, nil
}

// RecoverStaleNodes undoes the real nodes whose cluster no longer runs: a process that started one
// was killed before it could stop it (a test binary past its timeout, a session that ended), which
// leaves the node's bridge, iptables rules, mounts, cgroups and its containers' processes on the
// host, and refuses the next real node. A node is stale when its bridge's alias names a WorkDir
// whose state file records processes none of which runs; it is stopped from that state file, as
// Attach and Stop do, which leaves the host as the node's start found it. It returns the WorkDirs
// recovered. A node whose cluster still runs is left alone; a bridge that names no WorkDir with a
// state file is an error naming it, since what its start changed is unknown.
func RecoverStaleNodes() ([]string, error) {
	bridges, err := nodeBridges()
	if err != nil {
		return nil, err
	}
	var recovered []string
	var errs []error
	for _, b := range bridges {
		if b.workDir == "" {
			errs = append(errs, fmt.Errorf("localcluster: bridge %s names no WorkDir; delete it by hand (ip link del %s)", b.name, b.name))
			continue
		}
		c, err := Attach(b.workDir)
		if err != nil {
			errs = append(errs, fmt.Errorf("localcluster: bridge %s: %w", b.name, err))
			continue
		}
		if c.node == nil || c.node.Bridge != b.name {
			errs = append(errs, fmt.Errorf("localcluster: bridge %s: the state file in %s records no such node", b.name, b.workDir))
			continue
		}
		if running := c.running(); len(running) > 0 {
			continue
		}
		if err := c.Stop(); err != nil {
			errs = append(errs, err)
			continue
		}
		recovered = append(recovered, b.workDir)
	}
	return recovered, errors.Join(errs...)
}

// running returns the names of the cluster's recorded processes that still run.
func (c *Cluster) running() []string {
	var out []string
	for _, p := range c.procs {
		if p.Alive() {
			out = append(out, p.Name)
		}
	}
	return out
}
