package simulate

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/schedops/scheduler-profile-operator/scheduler/profile"
)

// Preview compares two revisions of a profile, the running one and a new one, on one snapshot
// and workload: the basis of the operator's preview of a change.
type Preview struct {
	// Pods counts the workload's pods that both revisions simulated.
	Pods int `json:"pods"`
	// Moved are the pods that the new revision places elsewhere than the running one, in the
	// workload's queue order; "" is unschedulable.
	Moved []Move `json:"moved,omitempty"`
	// Running is the running revision's outcome, nil for a profile that runs no revision yet.
	Running *RevisionOutcome `json:"running,omitempty"`
	// New is the new revision's outcome.
	New RevisionOutcome `json:"new"`
	// NewlyUnschedulable are the pods that the new revision leaves unschedulable and the running
	// one binds (all it leaves unschedulable when nothing runs), with the scheduler's reason.
	NewlyUnschedulable []PodResult `json:"newlyUnschedulable,omitempty"`
}

// RevisionOutcome is what one revision did with the workload.
type RevisionOutcome struct {
	// Profile names the revision.
	Profile string `json:"profile"`
	// Bound and Unschedulable count the pods it decided.
	Bound         int `json:"bound"`
	Unschedulable int `json:"unschedulable"`
	// NodesUsed counts the nodes it placed pods on.
	NodesUsed int `json:"nodesUsed"`
	// Stopped says that its simulation reached a limit: its counts cover the pods decided
	// until then.
	Stopped string `json:"stopped,omitempty"`
	// StoppedByCPU says that the limit was the CPU time limit the two simulations share.
	StoppedByCPU bool `json:"stoppedByCPU,omitempty"`
}

// PreviewChange simulates the running revision (nil for none) and then the new one on cluster
// with workload (both at once with opts.BothAtOnce), each in a scheduler of its own, and compares
// them. opts.Limit bounds each simulation; opts.CPULimit bounds the two together: one after the
// other, the new revision's simulation may use what the running one's left, and does not start
// when nothing is left; at once, both stop when together they have used it. A simulation that
// reaches a limit is not an error: its outcome says it stopped, and only the pods both decided
// are compared.
func PreviewChange(ctx context.Context, running *Profile, next Profile, cluster *Cluster, workload *Workload, opts Options) (*Preview, error) {
	return previewChange(ctx, running, next, cluster, workload, opts, false)
}

// previewChange is PreviewChange; with servedOnly, each revision schedules only the pods of the
// scheduler names it serves, and the others are unschedulable in it (splitUnserved): a
// scheduler's preview, where a pod of a name no profile serves waits. Without it, such a pod is
// scheduled by the revision's first profile, as `manager simulate` does.
func previewChange(ctx context.Context, running *Profile, next Profile, cluster *Cluster, workload *Workload, opts Options, servedOnly bool) (*Preview, error) {
	var before []PodResult
	var beforeStopped *LimitError
	var beforeErr error
	var wg sync.WaitGroup
	left := opts.CPULimit
	if running != nil {
		if opts.BothAtOnce {
			// Each simulation watches the process's CPU time, which counts both: together they
			// stop at the limit.
			wg.Go(func() {
				left := opts.CPULimit
				before, beforeStopped, beforeErr = runOrStop(ctx, *running, cluster, workload, opts, &left, servedOnly)
			})
		} else {
			before, beforeStopped, beforeErr = runOrStop(ctx, *running, cluster, workload, opts, &left, servedOnly)
			if beforeErr != nil {
				return nil, beforeErr
			}
		}
	}
	after, afterStopped, err := runOrStop(ctx, next, cluster, workload, opts, &left, servedOnly)
	wg.Wait()
	if err := cmp.Or(beforeErr, err); err != nil {
		return nil, err
	}
	p := comparePreview(running, before, next, after)
	if p.Running != nil {
		p.Running.setStopped(beforeStopped)
	}
	p.New.setStopped(afterStopped)
	return p, nil
}

// runOrStop runs one simulation with the CPU time left of opts.CPULimit, and takes from left
// what the process used meanwhile; with servedOnly, of the pods of the names p serves. At a limit it returns the results until then and the limit;
// a CPU time limit is reported as the whole of opts.CPULimit, which the simulations share.
func runOrStop(ctx context.Context, p Profile, cluster *Cluster, workload *Workload, opts Options, left *time.Duration, servedOnly bool) ([]PodResult, *LimitError, error) {
	budget := opts.CPULimit
	if budget > 0 && *left <= 0 {
		return nil, &LimitError{Limit: budget, CPU: true, Pods: len(workload.Pods)}, nil
	}
	opts.CPULimit = *left
	served, unserved, err := workload, []PodResult(nil), error(nil)
	if servedOnly {
		if served, unserved, err = splitUnserved(p, workload); err != nil {
			return nil, nil, fmt.Errorf("previewing %s: %w", p.Name, err)
		}
	}
	var results []PodResult
	used, cpuErr := cpuUsed(budget > 0, func() { results, err = Run(ctx, p, cluster, served, opts) })
	if cpuErr != nil {
		return nil, nil, cpuErr
	}
	*left -= used
	var limit *LimitError
	if errors.As(err, &limit) {
		if limit.CPU {
			limit.Limit = budget
		}
		return append(results, unserved...), limit, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("previewing %s: %w", p.Name, err)
	}
	return append(results, unserved...), nil, nil
}

// splitUnserved splits the workload into the pods that a profile of p's configuration serves,
// which its simulation schedules, and the results of the others: unschedulable, for no scheduler
// of that revision takes them (the pods of the name a rename leaves wait for good).
func splitUnserved(p Profile, workload *Workload) (*Workload, []PodResult, error) {
	cfg, err := profile.DecodeConfig(p.Config)
	if err != nil {
		return nil, nil, err
	}
	names := make([]string, 0, len(cfg.Profiles))
	for _, prof := range cfg.Profiles {
		names = append(names, prof.SchedulerName)
	}
	served := &Workload{Controllers: workload.Controllers}
	var unserved []PodResult
	for _, pod := range workload.Pods {
		if slices.Contains(names, pod.Spec.SchedulerName) {
			served.Pods = append(served.Pods, pod)
			continue
		}
		unserved = append(unserved, PodResult{Pod: podKey(pod), SchedulerName: pod.Spec.SchedulerName,
			Reason: fmt.Sprintf("no profile of this configuration serves scheduler name %q (it serves %s): the pod would wait for a scheduler", pod.Spec.SchedulerName, strings.Join(names, ", "))})
	}
	return served, unserved, nil
}

// cpuUsed runs f and returns the CPU time the process used meanwhile when measure is set, or
// nothing.
func cpuUsed(measure bool, f func()) (time.Duration, error) {
	if !measure {
		f()
		return 0, nil
	}
	start, err := processCPU()
	if err != nil {
		return 0, err
	}
	f()
	end, err := processCPU()
	return end - start, err
}

// setStopped records the limit that stopped the revision's simulation, if one did.
func (o *RevisionOutcome) setStopped(limit *LimitError) {
	if limit != nil {
		o.Stopped, o.StoppedByCPU = limit.Error(), limit.CPU
	}
}

// comparePreview compares the results of the running revision (nil profile: none) with the new
// one's, in the new revision's order: a pure function of the results.
func comparePreview(running *Profile, before []PodResult, next Profile, after []PodResult) *Preview {
	p := &Preview{New: outcome(next.Name, after)}
	if running == nil {
		p.Pods = len(after)
		for _, r := range after {
			if r.Node == "" {
				p.NewlyUnschedulable = append(p.NewlyUnschedulable, r)
			}
		}
		return p
	}
	o := outcome(running.Name, before)
	p.Running = &o
	nodeOf := make(map[string]string, len(before))
	for _, r := range before {
		nodeOf[r.Pod] = r.Node
	}
	for _, r := range after {
		from, ok := nodeOf[r.Pod]
		if !ok {
			continue
		}
		p.Pods++
		if from != r.Node {
			p.Moved = append(p.Moved, Move{Pod: r.Pod, From: from, To: r.Node})
		}
		if r.Node == "" && from != "" {
			p.NewlyUnschedulable = append(p.NewlyUnschedulable, r)
		}
	}
	return p
}

// outcome counts one revision's results.
func outcome(name string, results []PodResult) RevisionOutcome {
	o := RevisionOutcome{Profile: name}
	nodes := map[string]bool{}
	for _, r := range results {
		if r.Node == "" {
			o.Unschedulable++
			continue
		}
		o.Bound++
		nodes[r.Node] = true
	}
	o.NodesUsed = len(nodes)
	return o
}
