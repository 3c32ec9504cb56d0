// Package schedrunner runs, as local processes, the schedulers that the operator's Deployments
// describe. kwok only pretends that pods run, so on the local simulated cluster nothing would
// schedule the pods of a profile; the runner does what the Deployment controller and the kubelets
// would do for the scheduler Deployments: it runs spec.replicas bin/kube-scheduler processes with
// the config of the ConfigMap that the pod template mounts, the files of the Secrets it mounts and
// the container's args, each authenticated with a token of the Deployment's ServiceAccount, and
// rolls them to a new pod template the way the Deployment's strategy does (a new process first, an
// old one stopped once the new one is ready).
//
// It is test and demo code, not part of the product.
package schedrunner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Options configure a Runner.
type Options struct {
	// Client reads Deployments, ConfigMaps and ServiceAccounts and requests ServiceAccount tokens.
	Client client.Client
	// Namespace is the operator's namespace.
	Namespace string
	// SchedulerBinary is bin/kube-scheduler.
	SchedulerBinary string
	// SchedulerBinaries run the pods of other images, by the scheduler container's image (the
	// scheduler of a previous release, for an upgrade); every other image runs SchedulerBinary.
	SchedulerBinaries map[string]string
	// Kubeconfig is the cluster's admin kubeconfig. The schedulers take only its server and CA from
	// it: they authenticate as their Deployment's ServiceAccount, as in a pod.
	Kubeconfig string
	// WorkDir holds the config files, kubeconfigs and logs of the schedulers.
	WorkDir string
	// Interval between two looks at the Deployments; 500ms when zero.
	Interval time.Duration
}

// Runner keeps, for each scheduler Deployment, processes that run its pod template as its
// ReplicaSets would run pods.
type Runner struct {
	opts Options

	mu sync.Mutex
	// replicas are the processes of each Deployment, by the Deployment's name.
	replicas map[string][]*Replica
	// started counts the processes started; it numbers their directories and logs.
	started int
}

// New returns a Runner; Run starts it.
func New(opts Options) *Runner {
	if opts.Interval == 0 {
		opts.Interval = 500 * time.Millisecond
	}
	return &Runner{opts: opts, replicas: map[string][]*Replica{}}
}

// Run syncs the schedulers with the Deployments until ctx ends, then stops them all.
func (r *Runner) Run(ctx context.Context) error {
	defer r.stopAll()
	ticker := time.NewTicker(r.opts.Interval)
	defer ticker.Stop()
	for {
		if err := r.sync(ctx); err != nil && ctx.Err() == nil {
			fmt.Fprintf(os.Stderr, "schedrunner: %v\n", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
	}
}

// Hash returns the config hash that the scheduler of a Deployment runs once a rollout is over: every
// process runs it and one is ready. It returns "" while none runs or two configurations run.
func (r *Runner) Hash(deployment string) string {
	reps := r.Replicas(deployment)
	if len(reps) == 0 || !slices.ContainsFunc(reps, func(rep Replica) bool { return rep.Ready }) {
		return ""
	}
	for _, rep := range reps {
		if rep.Hash != reps[0].Hash {
			return ""
		}
	}
	return reps[0].Hash
}

// Replicas returns the live scheduler processes of a Deployment, oldest first.
func (r *Runner) Replicas(deployment string) []Replica {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Replica
	for _, rep := range r.replicas[deployment] {
		if rep.Process.Alive() {
			out = append(out, *rep)
		}
	}
	return out
}

func (r *Runner) sync(ctx context.Context) error {
	var list appsv1.DeploymentList
	if err := r.opts.Client.List(ctx, &list, client.InNamespace(r.opts.Namespace),
		client.MatchingLabels{"app.kubernetes.io/managed-by": schedulingv1alpha1.FieldManager}); err != nil {
		return fmt.Errorf("listing scheduler Deployments: %w", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	seen := map[string]bool{}
	var errs []error
	for i := range list.Items {
		d := &list.Items[i]
		seen[d.Name] = true
		if err := r.step(ctx, d); err != nil {
			errs = append(errs, fmt.Errorf("the scheduler of %s: %w", d.Name, err))
		}
	}
	for name, reps := range r.replicas {
		if !seen[name] {
			stopReplicas(reps)
			delete(r.replicas, name)
		}
	}
	return errors.Join(errs...)
}

func (r *Runner) stopAll() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for name, reps := range r.replicas {
		stopReplicas(reps)
		delete(r.replicas, name)
	}
}

func stopReplicas(reps []*Replica) {
	for _, rep := range reps {
		_ = rep.Process.Stop(stopGrace)
	}
}
