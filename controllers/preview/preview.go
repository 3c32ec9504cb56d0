// Package preview runs the previews of profiles' changes (spec.rollout.preview): one at a time, in a
// worker process of its own with CPU, memory, object and time budgets, outside the reconcilers'
// passes; it keeps the latest outcome of each profile and decides whether a Guard holds
// a change. The reconcilers ask (Ask) and read outcomes (Status); the operator's binary runs the
// worker (RunWorker) when started as WorkerCommand.
package preview

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/source"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/controllers/internal/bound"
	"github.com/schedops/scheduler-profile-operator/internal/simulate"
)

// A preview reads what scheduling reads of the whole cluster, page by page, from the apiserver:
// the operator's cache holds only the objects it manages.
// +kubebuilder:rbac:groups="",resources=nodes;pods;namespaces;services;persistentvolumes;persistentvolumeclaims,verbs=list
// +kubebuilder:rbac:groups=apps,resources=replicasets;statefulsets,verbs=list
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=list
// +kubebuilder:rbac:groups=scheduling.k8s.io,resources=priorityclasses;podgroups,verbs=list
// +kubebuilder:rbac:groups=storage.k8s.io,resources=storageclasses;csinodes,verbs=list

// Defaults of the bounds of a preview (Options), which the operator's flags can change.
const (
	// DefaultMaxPods is how many of a profile's pods a preview simulates: the first in
	// queue order. 2,000 pods on 1,000 nodes take seconds of one core per configuration.
	DefaultMaxPods = 2000
	// DefaultCPULimit is the CPU time that the two simulations of one preview may use
	// together, counted on the preview's worker process (preview_worker.go). Both
	// configurations of a preview of DefaultMaxPods pods on 1,000 nodes running 3,000
	// other pods took 8 to 13 s of CPU time (plain Deployments, or with spread constraints and
	// anti-affinity): a minute leaves five times that for bigger clusters and costlier plugins.
	DefaultCPULimit = time.Minute
	// DefaultTimeout is how long one preview, the read of the cluster and both
	// simulations, may take before it is given up. It is a safety bound, for a simulation that
	// waits on what never comes and so uses no CPU time: a simulation runs on about one core,
	// so a preview that spends its whole CPU time budget reaches this first only when its
	// worker gets less than a fifth of a core.
	DefaultTimeout = 5 * time.Minute
	// DefaultMemoryLimit is the memory budget of a preview's worker process: the
	// resident memory past which the operator kills it. A preview of DefaultMaxPods pods
	// on 1,000 nodes peaked at about 310 MiB in its worker; with 8,000 more pods of other
	// schedulers bound to the nodes, at 490 to 510 MiB (hack/bench --run preview).
	DefaultMemoryLimit = 512 << 20
	// DefaultMaxObjects is how many objects of the kinds scheduling reads a preview sends
	// its worker before it gives up: the worker holds each object several times (the snapshot,
	// the fake apiserver, the scheduler's informers and cache), so that a cluster of more
	// objects than the 11,000 of the measure above would not fit DefaultMemoryLimit.
	// Past it the preview ends at once, where the memory budget would end it only after reading
	// the whole cluster; a cluster of 5,000 nodes and 50,000 pods (a worker of 3.1 GiB) ends here.
	DefaultMaxObjects = 10000
)

// Beginnings of status.preview.incomplete of a preview that ran out of a budget.
const (
	outOfTime = "the preview ran out of its time budget"
	outOfCPU  = "the preview ran out of its CPU time budget"
	// outOfMemory and outOfObjects are the budgets of the preview's worker process.
	outOfMemory  = "the preview ran out of its memory budget"
	outOfObjects = "the preview ran out of its object budget"
)

// Flags of the budgets of a preview, which a refusal for want of either names.
const (
	timeoutFlag  = "--preview-timeout"
	cpuLimitFlag = "--preview-cpu-limit"
	// memoryLimitFlag and maxObjectsFlag bound the preview's worker process.
	memoryLimitFlag = "--preview-memory-limit"
	maxObjectsFlag  = "--preview-max-objects"
)

// maxPreviewPods is how many newly unschedulable pods status.preview and a refusal name.
const maxPreviewPods = 3

// Options bound the previews of changes; zero fields take the defaults.
type Options struct {
	// MaxPods caps the pods a preview simulates (DefaultMaxPods).
	MaxPods int
	// Timeout is a preview's time budget (DefaultTimeout).
	Timeout time.Duration
	// CPULimit is the CPU time budget of a preview's two simulations together
	// (DefaultCPULimit), counted on the preview's worker process.
	CPULimit time.Duration
	// RefreshInterval is how soon a preview that holds a change is run again after the cluster
	// changed (DefaultRefreshInterval); without a change seen, after ten intervals.
	RefreshInterval time.Duration
	// MemoryLimit is the memory budget of a preview's worker process, in bytes
	// (DefaultMemoryLimit).
	MemoryLimit int64
	// MaxObjects caps the objects a preview reads of the cluster and sends its worker
	// (DefaultMaxObjects).
	MaxObjects int
}

func (o Options) withDefaults() Options {
	if o.MaxPods <= 0 {
		o.MaxPods = DefaultMaxPods
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.CPULimit <= 0 {
		o.CPULimit = DefaultCPULimit
	}
	if o.RefreshInterval <= 0 {
		o.RefreshInterval = DefaultRefreshInterval
	}
	if o.MemoryLimit <= 0 {
		o.MemoryLimit = DefaultMemoryLimit
	}
	if o.MaxObjects <= 0 {
		o.MaxObjects = DefaultMaxObjects
	}
	return o
}

// Key names a preview: a profile's change from one configuration to another. from is ""
// for a profile that runs none. The feature gates of each side are part of it (GatesKey): a
// change of gates alone changes what the scheduler does, and is previewed.
type Key struct {
	UID                types.UID
	From, To           string
	FromGates, ToGates string
}

// GatesKey is the feature gates of a scheduler as a key: name=value, sorted, "" for none.
func GatesKey(gates map[string]bool) string {
	out := make([]string, 0, len(gates))
	for _, name := range slices.Sorted(maps.Keys(gates)) {
		out = append(out, name+"="+strconv.FormatBool(gates[name]))
	}
	return strings.Join(out, ",")
}

// Changes tells whether the key's two sides differ: in configuration or in feature gates.
func (k Key) Changes() bool {
	return k.From != k.To || k.FromGates != k.ToGates
}

// Request is a preview to run for the profile name.
type Request struct {
	Key  Key
	Name string
	// Scheduler is the Scheduler of a member, "" for a profile with a Scheduler of its own: the
	// Scheduler's reconciler plans with the outcome too.
	Scheduler string
	// SchedulerNames choose the pods: every name the running configuration serves and the one
	// the new configuration serves, so that a rename counts the pods of the name it leaves.
	// running is the configuration that runs, nil for none.
	SchedulerNames []string
	Running        *simulate.Profile
	Next           simulate.Profile
	// cluster is the Previewer's cluster generation when the preview started.
	cluster uint64
}

// outcome is a finished preview: its status, and how many more pods the new
// configuration leaves unschedulable. decided is false when no comparison came out of it (a
// budget ran out, or it failed).
type outcome struct {
	status  schedulingv1alpha1.PreviewStatus
	added   int
	decided bool
	// spent is the flag of the budget that ran out, when one did.
	spent string
	// retryAt is when a failed preview is run again; zero for one that did not fail.
	retryAt time.Time
	// finished is when the preview ended, and cluster the generation of what previews read when
	// it started (Previewer.cluster): an outcome that holds a change is previewed again once the
	// cluster changed (refreshDue). wakeScheduled is set once a change of the cluster has the
	// profile passed again. scheduler is the member's Scheduler, "" for a dedicated profile.
	finished      time.Time
	cluster       uint64
	wakeScheduled bool
	scheduler     string
}

// retryDue tells whether a failed preview should run again at now.
func (o *outcome) retryDue(now time.Time) bool {
	return !o.retryAt.IsZero() && !now.Before(o.retryAt)
}

// previewRetry is how long after a failed preview (the apiserver unreachable, a list refused)
// the same change is previewed again.
const previewRetry = time.Minute

// Previewer runs the previews of changes, one at a time, outside the reconcilers' passes, and
// keeps the latest outcome of each profile. A profile's newer change cancels its older
// preview. When a preview ends, the profile is enqueued through events, and a member's
// Scheduler through schedulerEvents.
type Previewer struct {
	client          kubernetes.Interface
	opts            Options
	events          chan event.GenericEvent
	schedulerEvents chan event.GenericEvent
	wake            chan struct{}
	// generation counts the outcomes recorded and the retries that fell due: the plans of
	// Schedulers, which read the outcomes of their members, are remembered by it.
	generation atomic.Uint64
	// cluster counts the changes of what previews read that the operator watches (nodes,
	// PriorityClasses): an outcome that holds a change is previewed again after one.
	cluster atomic.Uint64

	mu      sync.Mutex
	latest  map[string]*outcome
	keys    map[string]Key
	queue   []Request
	running *Request
	cancel  context.CancelCauseFunc
	// now is the clock of retries.
	now func() time.Time
}

// maxFailure bounds status.preview.failure, as the CRD does.
const maxFailure = 4096

// errSuperseded cancels a preview for a newer change of the same profile.
var errSuperseded = errors.New("a newer change of the profile is previewed")

// New returns a previewer that reads the cluster through c, with opts (zero fields take the
// defaults). Setup adds one to a manager; the tests that only ask for previews pass a nil c.
func New(c kubernetes.Interface, opts Options) *Previewer {
	return &Previewer{
		client: c, opts: opts.withDefaults(),
		events: make(chan event.GenericEvent, 16), schedulerEvents: make(chan event.GenericEvent, 16), wake: make(chan struct{}, 1),
		latest: map[string]*outcome{}, keys: map[string]Key{},
		now: time.Now,
	}
}

// Source enqueues the profile of each finished preview; without a Previewer, nothing.
func (pv *Previewer) Source() source.Source {
	events := make(chan event.GenericEvent)
	if pv != nil {
		events = pv.events
	}
	return source.Channel(events, &handler.EnqueueRequestForObject{})
}

// SchedulerSource enqueues the Scheduler of each member whose preview finished; without a
// Previewer, nothing.
func (pv *Previewer) SchedulerSource() source.Source {
	events := make(chan event.GenericEvent)
	if pv != nil {
		events = pv.schedulerEvents
	}
	return source.Channel(events, &handler.EnqueueRequestForObject{})
}

// PlanKey is what the plans of Schedulers read of the Previewer: "" without one.
func (pv *Previewer) PlanKey() string {
	if pv == nil {
		return ""
	}
	return "previews " + strconv.FormatUint(pv.generation.Load(), 10)
}

// Ask returns what the preview of req says of its change under the settings s, and asks for
// the preview when it has not finished, or failed long enough ago to be run again.
func (pv *Previewer) Ask(req Request, s schedulingv1alpha1.PreviewSettings) Gate {
	o := pv.outcome(req.Key, req.Name)
	pv.mu.Lock()
	due := pv.dueLocked(o)
	pv.mu.Unlock()
	if due {
		pv.request(req)
	}
	return decide(s, o)
}

// outcome is the profile's outcome of the preview key, nil when there is none (yet).
func (pv *Previewer) outcome(key Key, name string) *outcome {
	pv.mu.Lock()
	defer pv.mu.Unlock()
	if pv.keys[name] != key {
		return nil
	}
	return pv.latest[name]
}

// Status is the Status of the profile's latest finished preview, nil when none finished since
// the operator started.
func (pv *Previewer) Status(name string) *schedulingv1alpha1.PreviewStatus {
	if pv == nil {
		return nil
	}
	pv.mu.Lock()
	defer pv.mu.Unlock()
	if o := pv.latest[name]; o != nil {
		return &o.status
	}
	return nil
}

// Forget drops what is known of a deleted profile, and cancels its preview.
func (pv *Previewer) Forget(name string) {
	if pv == nil {
		return
	}
	pv.mu.Lock()
	defer pv.mu.Unlock()
	delete(pv.latest, name)
	delete(pv.keys, name)
	pv.queue = slices.DeleteFunc(pv.queue, func(r Request) bool { return r.Name == name })
	if pv.running != nil && pv.running.Name == name {
		pv.cancel(errSuperseded)
	}
}

// request asks for a preview unless it finished, runs or waits already. It replaces the
// profile's waiting request, and cancels its running preview, of another change.
func (pv *Previewer) request(req Request) {
	pv.mu.Lock()
	defer pv.mu.Unlock()
	if o := pv.latest[req.Name]; pv.keys[req.Name] == req.Key && !pv.dueLocked(o) {
		return
	}
	if pv.running != nil && pv.running.Name == req.Name {
		if pv.running.Key == req.Key {
			return
		}
		pv.cancel(errSuperseded)
	}
	i := slices.IndexFunc(pv.queue, func(r Request) bool { return r.Name == req.Name })
	switch {
	case i < 0:
		pv.queue = append(pv.queue, req)
	case pv.queue[i].Key != req.Key:
		pv.queue[i] = req
	}
	select {
	case pv.wake <- struct{}{}:
	default:
	}
}

// Start runs the previews one at a time until ctx ends: the manager runs it on its leader.
func (pv *Previewer) Start(ctx context.Context) error {
	for {
		req, pctx, ok := pv.next(ctx)
		if !ok {
			select {
			case <-ctx.Done():
				return nil
			case <-pv.wake:
				continue
			}
		}
		o, keep := pv.run(pctx, req)
		pv.finish(req, o, keep)
		if keep && !pv.notify(ctx, req) {
			return nil
		}
	}
}

// notify enqueues the profile of a finished preview, and a member's Scheduler; false when ctx
// ended first.
func (pv *Previewer) notify(ctx context.Context, req Request) bool {
	select {
	case pv.events <- profileEvent(req.Name):
	case <-ctx.Done():
		return false
	}
	if req.Scheduler == "" {
		return true
	}
	select {
	case pv.schedulerEvents <- schedulerEvent(req.Scheduler):
	case <-ctx.Done():
		return false
	}
	return true
}

// next takes the oldest waiting request and marks it running.
func (pv *Previewer) next(ctx context.Context) (Request, context.Context, bool) {
	pv.mu.Lock()
	defer pv.mu.Unlock()
	if len(pv.queue) == 0 || ctx.Err() != nil {
		return Request{}, nil, false
	}
	req := pv.queue[0]
	pv.queue = pv.queue[1:]
	req.cluster = pv.cluster.Load()
	pctx, cancel := context.WithCancelCause(ctx)
	pv.running, pv.cancel = &req, cancel
	return req, pctx, true
}

// finish records a preview's outcome, unless it was cancelled.
func (pv *Previewer) finish(req Request, o *outcome, keep bool) {
	pv.mu.Lock()
	defer pv.mu.Unlock()
	pv.cancel(nil)
	pv.running, pv.cancel = nil, nil
	if !keep {
		return
	}
	pv.latest[req.Name], pv.keys[req.Name] = o, req.Key
	o.finished, o.cluster, o.scheduler = pv.now(), req.cluster, req.Scheduler
	pv.generation.Add(1)
	switch {
	case o.status.Failure != "":
		// The profile's pass after the retry delay asks for the preview again.
		o.retryAt = pv.now().Add(previewRetry)
		pv.wakeAfter(previewRetry, req.Name, req.Scheduler)
	case o.holds():
		// Without a change of the cluster seen, the timer previews it again.
		pv.wakeAfter(previewRefreshTimer*pv.opts.RefreshInterval, req.Name, req.Scheduler)
		if o.cluster != pv.cluster.Load() {
			// The cluster changed while it ran.
			o.wakeScheduled = true
			pv.wakeAfter(pv.opts.RefreshInterval, req.Name, req.Scheduler)
		}
	}
}

// profileEvent enqueues the profile name.
func profileEvent(name string) event.GenericEvent {
	return event.GenericEvent{Object: &schedulingv1alpha1.SchedulerProfile{ObjectMeta: metav1.ObjectMeta{Name: name}}}
}

// schedulerEvent enqueues the Scheduler name.
func schedulerEvent(name string) event.GenericEvent {
	return event.GenericEvent{Object: &schedulingv1alpha1.Scheduler{ObjectMeta: metav1.ObjectMeta{Name: name}}}
}

// run previews the change in a worker process (runWorker), which reads the cluster and
// simulates within the time budget, its simulations within the CPU time budget, and within the
// memory and object budgets. keep is false when a newer change, or the operator's stop,
// cancelled it.
func (pv *Previewer) run(ctx context.Context, req Request) (*outcome, bool) {
	start := time.Now()
	budget, cancel := context.WithTimeoutCause(ctx, pv.opts.Timeout, context.DeadlineExceeded)
	defer cancel()
	res, err := pv.simulate(budget, req)
	if ctx.Err() != nil {
		return nil, false
	}
	o := newOutcome(req.Key, res, err, budget.Err() != nil, pv.opts, start, time.Since(start))
	log.FromContext(ctx).V(1).Info("Previewed a change", "SchedulerProfile", req.Name, "from", req.Key.From, "to", req.Key.To, "pods", o.status.Pods, "added", o.added)
	return o, true
}

// simulate previews req in a worker process (runWorker), unless the cluster has no pod of its
// scheduler names: then there is nothing to simulate, and no worker is started. A new profile
// whose pods are not there yet, the common case, costs one list of pods instead of a process that
// reads the whole cluster and builds two schedulers. When the pods cannot be listed, the worker,
// which lists them too, says why.
func (pv *Previewer) simulate(ctx context.Context, req Request) (*simulate.ProfilePreview, error) {
	if has, err := simulate.HasProfilePods(ctx, pv.client, req.SchedulerNames); err == nil && !has {
		return simulate.EmptyProfilePreview(req.Running, req.Next), nil
	}
	return pv.runWorker(ctx, req)
}

// newOutcome turns a preview that started at start and took took, with its result or its
// error, or timedOut past opts.Timeout, into its outcome.
func newOutcome(key Key, res *simulate.ProfilePreview, err error, timedOut bool, opts Options, start time.Time, took time.Duration) *outcome {
	o := &outcome{status: schedulingv1alpha1.PreviewStatus{
		From: schedulingv1alpha1.PreviewRun{ConfigHash: key.From},
		To:   schedulingv1alpha1.PreviewRun{ConfigHash: key.To},
		// In seconds, as the apiserver keeps it: a finer time would differ from the written
		// status on every pass, and have it written again.
		StartTime:            metav1.NewTime(start.Truncate(time.Second)),
		DurationMilliseconds: took.Milliseconds(),
	}}
	var spent *previewBudgetError
	switch {
	case timedOut:
		o.status.Incomplete = fmt.Sprintf("%s of %s (%s); nothing was decided", outOfTime, opts.Timeout, timeoutFlag)
		o.spent = timeoutFlag
		return o
	case errors.As(err, &spent):
		o.status.Incomplete, o.spent = bound.String(spent.incomplete, 1024), spent.flag
		return o
	case err != nil:
		o.status.Failure = bound.String(err.Error(), maxFailure)
		return o
	}
	o.decided, o.added = true, res.AddedUnschedulable()
	st := &o.status
	st.Pods, st.Moved = int32(res.Pods), int32(len(res.Moved))
	st.To.Unschedulable, st.To.NodesUsed = int32(res.New.Unschedulable), int32(res.New.NodesUsed)
	stopped := res.New
	if res.Running != nil {
		st.From.Unschedulable, st.From.NodesUsed = int32(res.Running.Unschedulable), int32(res.Running.NodesUsed)
		if res.Running.Stopped != "" {
			stopped = *res.Running
		}
	}
	for _, p := range res.NewlyUnschedulable[:min(len(res.NewlyUnschedulable), maxPreviewPods)] {
		st.NewlyUnschedulable = append(st.NewlyUnschedulable, schedulingv1alpha1.PreviewPod{Pod: p.Pod, Reason: bound.String(p.Reason, 1024)})
	}
	switch {
	case stopped.Stopped != "":
		// Counts of the pods decided until the limit compare nothing: Guard refuses.
		o.decided = false
		st.Incomplete, o.spent = budgetSpent(stopped, opts)
	case res.Total > res.Pods:
		st.Incomplete = fmt.Sprintf("the first %d of the profile's %d pods in queue order were simulated (--preview-max-pods %d)", res.Pods, res.Total, opts.MaxPods)
	}
	return o
}

// budgetSpent is status.preview.incomplete of a preview whose simulation of a configuration
// stopped at a limit, and the flag of the budget that ran out.
func budgetSpent(stopped simulate.RevisionOutcome, opts Options) (incomplete, flag string) {
	if stopped.StoppedByCPU {
		return bound.String(fmt.Sprintf("%s of %s (%s) for its simulations; nothing was decided: %s", outOfCPU, opts.CPULimit, cpuLimitFlag, stopped.Stopped), 1024), cpuLimitFlag
	}
	return bound.String(fmt.Sprintf("%s (%s); nothing was decided: %s", outOfTime, timeoutFlag, stopped.Stopped), 1024), timeoutFlag
}

// RanOut tells whether a preview's status.preview.incomplete says that a budget ran out.
func RanOut(incomplete string) bool {
	for _, prefix := range []string{outOfTime, outOfCPU, outOfMemory, outOfObjects} {
		if strings.HasPrefix(incomplete, prefix) {
			return true
		}
	}
	return false
}

// Gate is what the preview of a change says of its rollout: held when Reason is set.
type Gate struct {
	Reason, Message string
}

// Held tells whether the change waits, or is refused.
func (g Gate) Held() bool { return g.Reason != "" }

// decide is the rule of spec.rollout.preview: in Guard mode, a change rolls out once its
// preview leaves at most maxNewlyUnschedulable more pods unschedulable than the running
// configuration; a preview that decided nothing (a budget ran out, it failed) refuses it. Other
// modes never hold a change.
func decide(s schedulingv1alpha1.PreviewSettings, o *outcome) Gate {
	if Mode(s) != schedulingv1alpha1.PreviewGuard {
		return Gate{}
	}
	const keeps = "; it is not rolled out and the running scheduler keeps its configuration"
	switch {
	case o == nil:
		return Gate{schedulingv1alpha1.ReasonPreviewRunning, "Guard: the change waits for its preview; the running scheduler keeps its configuration meanwhile"}
	case !o.decided:
		why := o.status.Incomplete
		if why == "" {
			why = "the preview failed: " + o.status.Failure
		}
		fix := "; set spec.rollout.preview.mode to Report to roll it out"
		if o.spent != "" {
			fix += ", or have the operator's " + o.spent + " raised"
		}
		return Gate{schedulingv1alpha1.ReasonPreviewRefused, "Guard: " + why + keeps + fix}
	}
	maxAdded := 0
	if s.MaxNewlyUnschedulable != nil {
		maxAdded = int(*s.MaxNewlyUnschedulable)
	}
	if o.added <= maxAdded {
		return Gate{}
	}
	var pods []string
	for _, p := range o.status.NewlyUnschedulable {
		pods = append(pods, p.Pod+" ("+p.Reason+")")
	}
	than := "than the running configuration"
	if o.status.From.ConfigHash == "" {
		than = "while no scheduler runs them"
	}
	return Gate{schedulingv1alpha1.ReasonPreviewRefused, fmt.Sprintf(
		"Guard: the preview leaves %d more of the profile's %d pods unschedulable %s, more than maxNewlyUnschedulable %d%s: %s",
		o.added, o.status.Pods, than, maxAdded, keeps, strings.Join(pods, "; "))}
}

// Mode is the mode of s, Report when unset.
func Mode(s schedulingv1alpha1.PreviewSettings) schedulingv1alpha1.PreviewMode {
	if s.Mode == "" {
		return schedulingv1alpha1.PreviewReport
	}
	return s.Mode
}

// Summary is a preview in one sentence.
func Summary(s schedulingv1alpha1.PreviewStatus) string {
	if s.Failure != "" {
		return "The preview of configuration " + s.To.ConfigHash + " failed: " + s.Failure
	}
	if RanOut(s.Incomplete) {
		return "The preview of configuration " + s.To.ConfigHash + " is incomplete: " + s.Incomplete
	}
	from := "no running configuration"
	if s.From.ConfigHash != "" {
		from = fmt.Sprintf("configuration %s: %d unschedulable on %d nodes", s.From.ConfigHash, s.From.Unschedulable, s.From.NodesUsed)
	}
	msg := fmt.Sprintf("Previewed %d pods: configuration %s: %d unschedulable on %d nodes, against %s; %d move",
		s.Pods, s.To.ConfigHash, s.To.Unschedulable, s.To.NodesUsed, from, s.Moved)
	if s.Incomplete != "" {
		msg += "; " + s.Incomplete
	}
	return msg
}

// Setup adds the Previewer to mgr, with a client of its own that reads the cluster page
// by page.
func Setup(mgr ctrl.Manager, o Options) (*Previewer, error) {
	c, err := kubernetes.NewForConfig(mgr.GetConfig())
	if err != nil {
		return nil, fmt.Errorf("creating the client of previews: %w", err)
	}
	pv := New(c, o)
	if err := mgr.Add(pv); err != nil {
		return nil, fmt.Errorf("adding the Previewer: %w", err)
	}
	return pv, nil
}
