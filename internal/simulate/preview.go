package simulate

import (
	"context"
	"errors"
	"fmt"
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
	// Stopped says that its simulation reached its time limit: its counts cover the pods
	// decided until then.
	Stopped string `json:"stopped,omitempty"`
}

// PreviewChange simulates the running revision (nil for none) and the new one on cluster with
// workload, each in a scheduler of its own, and compares them. A simulation that reaches its
// limit is not an error: its outcome says it stopped, and only the pods both decided are compared.
func PreviewChange(ctx context.Context, running *Profile, next Profile, cluster *Cluster, workload *Workload, opts Options) (*Preview, error) {
	var before []PodResult
	var beforeStopped string
	if running != nil {
		var err error
		if before, beforeStopped, err = runOrStop(ctx, *running, cluster, workload, opts); err != nil {
			return nil, err
		}
	}
	after, afterStopped, err := runOrStop(ctx, next, cluster, workload, opts)
	if err != nil {
		return nil, err
	}
	p := comparePreview(running, before, next, after)
	if p.Running != nil {
		p.Running.Stopped = beforeStopped
	}
	p.New.Stopped = afterStopped
	return p, nil
}

// runOrStop runs one simulation; at its limit it returns the results until then and why it
// stopped.
func runOrStop(ctx context.Context, p Profile, cluster *Cluster, workload *Workload, opts Options) ([]PodResult, string, error) {
	results, err := Run(ctx, p, cluster, workload, opts)
	var limit *LimitError
	if errors.As(err, &limit) {
		return results, limit.Error(), nil
	}
	if err != nil {
		return nil, "", fmt.Errorf("previewing %s: %w", p.Name, err)
	}
	return results, "", nil
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
