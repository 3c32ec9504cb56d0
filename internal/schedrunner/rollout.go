package schedrunner

import (
	"context"
	"slices"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/utils/ptr"
)

// maxSurge is how many processes a rollout may run beyond spec.replicas; like the operator's
// Deployments, a rollout never stops a ready process before its replacement is ready (maxUnavailable 0).
const maxSurge = 1

// step takes one step towards the Deployment's spec, as its controller and the kubelets would:
// a process that exited is replaced, a new pod template revision rolls one process at a time
// (start one with the new template; once it is ready, stop one old one, which releases its lease
// on SIGTERM), and a change of replicas scales up or down. One start or stop per step keeps every stage observable.
func (r *Runner) step(ctx context.Context, d *appsv1.Deployment) error {
	want := int(ptr.Deref(d.Spec.Replicas, 1))
	hash := d.Spec.Template.Annotations[schedulingv1alpha1.AnnotationConfigHash]
	revision := d.Spec.Template.Annotations[schedulingv1alpha1.AnnotationRevision]
	reps := r.live(d.Name)
	for _, rep := range reps {
		rep.probe(ctx)
	}
	current, old := split(reps, revision)
	available := countReady(reps)
	switch {
	case len(current) < want && len(reps) < want+maxSurge:
		rep, err := r.startReplica(ctx, d, hash, revision)
		if err != nil {
			return err
		}
		r.replicas[d.Name] = append(reps, rep)
	case len(old) > 0 && (!old[0].Ready || available > want):
		r.stop(d.Name, old[0])
	case len(old) == 0 && len(current) > want:
		r.stop(d.Name, current[len(current)-1])
	}
	return nil
}

// live drops the processes of a Deployment that exited, as a ReplicaSet replaces a pod whose
// scheduler died, and returns the others.
func (r *Runner) live(deployment string) []*Replica {
	reps := slices.DeleteFunc(r.replicas[deployment], func(rep *Replica) bool { return !rep.Process.Alive() })
	r.replicas[deployment] = reps
	return reps
}

// split returns the processes that run revision and the others; the others come not ready
// first, since stopping those costs no availability.
func split(reps []*Replica, revision string) (current, old []*Replica) {
	for _, rep := range reps {
		if rep.Revision == revision {
			current = append(current, rep)
		} else {
			old = append(old, rep)
		}
	}
	slices.SortStableFunc(old, func(a, b *Replica) int {
		switch {
		case a.Ready == b.Ready:
			return 0
		case !a.Ready:
			return -1
		default:
			return 1
		}
	})
	return current, old
}

func countReady(reps []*Replica) int {
	n := 0
	for _, rep := range reps {
		if rep.Ready {
			n++
		}
	}
	return n
}

// stop stops one process gracefully: SIGTERM, so that kube-scheduler releases its lease and a
// standby takes over at its next retry instead of after the lease expires.
func (r *Runner) stop(deployment string, rep *Replica) {
	_ = rep.Process.Stop(stopGrace)
	r.replicas[deployment] = slices.DeleteFunc(r.replicas[deployment], func(x *Replica) bool { return x == rep })
}
