package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/schedops/scheduler-profile-operator/internal/localcluster"
)

// probeApp is the app label of the probe pods, one per scheduler name and configuration.
const probeApp = "bench-probe"

// stopGrace is how long a scheduler has to exit after SIGTERM.
const stopGrace = 10 * time.Second

// bench measures configurations on one cluster.
type bench struct {
	opts options
	*cluster
}

// memory is what /proc/<pid>/status says of the resident memory of a process, in bytes.
type memory struct {
	// rss is VmRSS, resident now; hwm is VmHWM, the peak of rss.
	rss, hwm int64
}

// sample is the memory of one configuration in one round, summed over its processes.
type sample struct {
	memory
	// ready is the time from the start of the processes until every probe pod was bound.
	ready time.Duration
}

// measure starts the processes of c, waits until each of its profiles has bound a probe pod,
// lets the processes settle, reads their memory and stops them. The probe pods are deleted
// afterwards, so that every configuration starts on the same cluster.
func (b *bench) measure(ctx context.Context, c configuration) (sample, error) {
	var s sample
	begin := time.Now()
	defer b.deleteProbes(ctx)
	procs, err := b.start(c)
	defer stopAll(procs)
	if err != nil {
		return s, err
	}
	if err := b.probe(ctx, c, procs); err != nil {
		return s, err
	}
	s.ready = time.Since(begin)
	select {
	case <-ctx.Done():
		return s, ctx.Err()
	case <-time.After(b.opts.settle):
	}
	for _, p := range procs {
		m, err := readMemory(p.PID)
		if err != nil {
			return s, fmt.Errorf("%s: %w; see %s", p.Name, err, p.Log)
		}
		s.rss += m.rss
		s.hwm += m.hwm
	}
	return s, nil
}

// start starts one kube-scheduler per process of c, each on a port of its own, with the log
// verbosity of the operator's Deployments. The rendered configuration has no clientConnection
// (in a pod the scheduler uses its in-cluster config), so a top-level key appended to it points
// the scheduler at the test apiserver.
func (b *bench) start(c configuration) ([]*localcluster.Process, error) {
	ports, err := localcluster.FreePorts(len(c.processes))
	if err != nil {
		return nil, err
	}
	var procs []*localcluster.Process
	for i, p := range c.processes {
		config := filepath.Join(b.opts.dir, p.name+".yaml")
		data := fmt.Sprintf("%sclientConnection:\n  kubeconfig: %q\n", p.config, b.kubeconfig)
		if err := os.WriteFile(config, []byte(data), 0o600); err != nil {
			return procs, err
		}
		args := []string{"--config=" + config, "--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(ports[i]), "--v=2"}
		proc, err := localcluster.StartProcess(p.name, b.opts.scheduler, args, nil, filepath.Join(b.opts.dir, p.name+".log"), false)
		if err != nil {
			return procs, err
		}
		procs = append(procs, proc)
	}
	return procs, nil
}

// probe creates one pending pod for each scheduler name of c and waits until all are bound. A
// scheduler binds only once its informers have synced, so this proves both that every profile
// schedules and that every cache holds the cluster.
func (b *bench) probe(ctx context.Context, c configuration, procs []*localcluster.Process) error {
	var names []string
	for _, p := range c.processes {
		names = append(names, p.schedulerNames...)
	}
	for _, name := range names {
		pod := benchPod("probe-"+name, probeApp)
		pod.Spec.SchedulerName = name
		if _, err := b.client.CoreV1().Pods(namespace).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("creating the probe pod of %s: %w", name, err)
		}
	}
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, b.opts.bindTimeout, true, func(ctx context.Context) (bool, error) {
		for _, p := range procs {
			if !p.Alive() {
				return false, fmt.Errorf("%s exited; see %s", p.Name, p.Log)
			}
		}
		list, err := b.client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: "app=" + probeApp})
		if err != nil {
			return false, err
		}
		bound := 0
		for _, pod := range list.Items {
			if pod.Spec.NodeName != "" {
				bound++
			}
		}
		return bound == len(names), nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %d probe pods to be bound (scheduler logs in %s): %w", len(names), b.opts.dir, err)
	}
	return nil
}

// deleteProbes deletes the probe pods at once: no kubelet runs to confirm a graceful deletion.
func (b *bench) deleteProbes(ctx context.Context) {
	err := b.client.CoreV1().Pods(namespace).DeleteCollection(ctx, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)},
		metav1.ListOptions{LabelSelector: "app=" + probeApp})
	if err != nil && ctx.Err() == nil {
		fmt.Fprintln(os.Stderr, "bench-memory: deleting the probe pods:", err)
	}
}

func stopAll(procs []*localcluster.Process) {
	for _, p := range procs {
		if err := p.Stop(stopGrace); err != nil {
			fmt.Fprintln(os.Stderr, "bench-memory:", err)
		}
	}
}

// readMemory reads VmRSS and VmHWM of pid from /proc/<pid>/status, where they are in kB.
func readMemory(pid int) (memory, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return memory{}, err
	}
	var m memory
	fields := map[string]*int64{"VmRSS:": &m.rss, "VmHWM:": &m.hwm}
	for line := range strings.Lines(string(data)) {
		f := strings.Fields(line)
		if len(f) != 3 || fields[f[0]] == nil || f[2] != "kB" {
			continue
		}
		kb, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			return memory{}, fmt.Errorf("parsing %q of /proc/%d/status: %w", line, pid, err)
		}
		*fields[f[0]] = kb << 10
	}
	if m.rss == 0 || m.hwm == 0 {
		return memory{}, fmt.Errorf("no VmRSS or VmHWM in /proc/%d/status", pid)
	}
	return m, nil
}
