package controllers

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

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/source"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/internal/simulate"
	"github.com/schedops/scheduler-profile-operator/scheduler/profile"
)

// A preview reads what scheduling reads of the whole cluster, page by page, from the apiserver:
// the operator's cache holds only the objects it manages.
// +kubebuilder:rbac:groups="",resources=nodes;pods;namespaces;services;persistentvolumes;persistentvolumeclaims,verbs=list
// +kubebuilder:rbac:groups=apps,resources=replicasets;statefulsets,verbs=list
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=list
// +kubebuilder:rbac:groups=scheduling.k8s.io,resources=priorityclasses;podgroups,verbs=list
// +kubebuilder:rbac:groups=storage.k8s.io,resources=storageclasses;csinodes,verbs=list

// Defaults of the bounds of a preview (PreviewOptions), which the operator's flags can change.
const (
	// DefaultPreviewMaxPods is how many of a profile's pods a preview simulates: the first in
	// queue order. 2,000 pods on 1,000 nodes take seconds of one core per configuration.
	DefaultPreviewMaxPods = 2000
	// DefaultPreviewCPULimit is the CPU time that the two simulations of one preview may use
	// together, counted on the preview's worker process (preview_worker.go). Both
	// configurations of a preview of DefaultPreviewMaxPods pods on 1,000 nodes running 3,000
	// other pods took 8 to 13 s of CPU time (plain Deployments, or with spread constraints and
	// anti-affinity): a minute leaves five times that for bigger clusters and costlier plugins.
	DefaultPreviewCPULimit = time.Minute
	// DefaultPreviewTimeout is how long one preview, the read of the cluster and both
	// simulations, may take before it is given up. It is a safety bound, for a simulation that
	// waits on what never comes and so uses no CPU time: a simulation runs on about one core,
	// so a preview that spends its whole CPU time budget reaches this first only when its
	// worker gets less than a fifth of a core.
	DefaultPreviewTimeout = 5 * time.Minute
	// DefaultPreviewMemoryLimit is the memory budget of a preview's worker process: the
	// resident memory past which the operator kills it. A preview of DefaultPreviewMaxPods pods
	// on 1,000 nodes peaked at about 310 MiB in its worker; with 8,000 more pods of other
	// schedulers bound to the nodes, at 490 to 510 MiB (hack/bench --run preview).
	DefaultPreviewMemoryLimit = 512 << 20
	// DefaultPreviewMaxObjects is how many objects of the kinds scheduling reads a preview sends
	// its worker before it gives up: the worker holds each object several times (the snapshot,
	// the fake apiserver, the scheduler's informers and cache), so that a cluster of more
	// objects than the 11,000 of the measure above would not fit DefaultPreviewMemoryLimit.
	// Past it the preview ends at once, where the memory budget would end it only after reading
	// the whole cluster; a cluster of 5,000 nodes and 50,000 pods (a worker of 3.1 GiB) ends here.
	DefaultPreviewMaxObjects = 10000
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

// eventReasonPreview is the reason of the event that sums a preview up.
const eventReasonPreview = "Preview"

// PreviewOptions bound the previews of changes; zero fields take the defaults.
type PreviewOptions struct {
	// MaxPods caps the pods a preview simulates (DefaultPreviewMaxPods).
	MaxPods int
	// Timeout is a preview's time budget (DefaultPreviewTimeout).
	Timeout time.Duration
	// CPULimit is the CPU time budget of a preview's two simulations together
	// (DefaultPreviewCPULimit), counted on the preview's worker process.
	CPULimit time.Duration
	// RefreshInterval is how soon a preview that holds a change is run again after the cluster
	// changed (DefaultPreviewRefreshInterval); without a change seen, after ten intervals.
	RefreshInterval time.Duration
	// MemoryLimit is the memory budget of a preview's worker process, in bytes
	// (DefaultPreviewMemoryLimit).
	MemoryLimit int64
	// MaxObjects caps the objects a preview reads of the cluster and sends its worker
	// (DefaultPreviewMaxObjects).
	MaxObjects int
}

func (o PreviewOptions) withDefaults() PreviewOptions {
	if o.MaxPods <= 0 {
		o.MaxPods = DefaultPreviewMaxPods
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultPreviewTimeout
	}
	if o.CPULimit <= 0 {
		o.CPULimit = DefaultPreviewCPULimit
	}
	if o.RefreshInterval <= 0 {
		o.RefreshInterval = DefaultPreviewRefreshInterval
	}
	if o.MemoryLimit <= 0 {
		o.MemoryLimit = DefaultPreviewMemoryLimit
	}
	if o.MaxObjects <= 0 {
		o.MaxObjects = DefaultPreviewMaxObjects
	}
	return o
}

// previewKey names a preview: a profile's change from one configuration to another. from is ""
// for a profile that runs none. The feature gates of each side are part of it (gatesKey): a
// change of gates alone changes what the scheduler does, and is previewed.
type previewKey struct {
	uid                types.UID
	from, to           string
	fromGates, toGates string
}

// gatesKey is the feature gates of a scheduler as a key: name=value, sorted, "" for none.
func gatesKey(gates map[string]bool) string {
	out := make([]string, 0, len(gates))
	for _, name := range slices.Sorted(maps.Keys(gates)) {
		out = append(out, name+"="+strconv.FormatBool(gates[name]))
	}
	return strings.Join(out, ",")
}

// changes tells whether the key's two sides differ: in configuration or in feature gates.
func (k previewKey) changes() bool {
	return k.from != k.to || k.fromGates != k.toGates
}

// previewRequest is a preview to run for the profile name.
type previewRequest struct {
	key  previewKey
	name string
	// scheduler is the Scheduler of a member, "" for a profile with a scheduler of its own: the
	// Scheduler's reconciler plans with the outcome too.
	scheduler string
	// schedulerNames choose the pods: every name the running configuration serves and the one
	// the new configuration serves, so that a rename counts the pods of the name it leaves.
	// running is the configuration that runs, nil for none.
	schedulerNames []string
	running        *simulate.Profile
	next           simulate.Profile
	// cluster is the previewer's cluster generation when the preview started.
	cluster uint64
}

// previewOutcome is a finished preview: its status, and how many more pods the new
// configuration leaves unschedulable. decided is false when no comparison came out of it (a
// budget ran out, or it failed).
type previewOutcome struct {
	status  schedulingv1alpha1.PreviewStatus
	added   int
	decided bool
	// spent is the flag of the budget that ran out, when one did.
	spent string
	// retryAt is when a failed preview is run again; zero for one that did not fail.
	retryAt time.Time
	// finished is when the preview ended, and cluster the generation of what previews read when
	// it started (previewer.cluster): an outcome that holds a change is previewed again once the
	// cluster changed (refreshDue). wakeScheduled is set once a change of the cluster has the
	// profile passed again. scheduler is the member's Scheduler, "" for a dedicated profile.
	finished      time.Time
	cluster       uint64
	wakeScheduled bool
	scheduler     string
}

// retryDue tells whether a failed preview should run again at now.
func (o *previewOutcome) retryDue(now time.Time) bool {
	return !o.retryAt.IsZero() && !now.Before(o.retryAt)
}

// previewRetry is how long after a failed preview (the apiserver unreachable, a list refused)
// the same change is previewed again.
const previewRetry = time.Minute

// previewer runs the previews of changes, one at a time, outside the reconcilers' passes, and
// keeps the latest outcome of each profile. A profile's newer change cancels its older
// preview. When a preview ends, the profile is enqueued through events, and a member's
// Scheduler through schedulerEvents.
type previewer struct {
	client          kubernetes.Interface
	opts            PreviewOptions
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
	latest  map[string]*previewOutcome
	keys    map[string]previewKey
	queue   []previewRequest
	running *previewRequest
	cancel  context.CancelCauseFunc
	// now is the clock of retries.
	now func() time.Time
}

// errSuperseded cancels a preview for a newer change of the same profile.
var errSuperseded = errors.New("a newer change of the profile is previewed")

func newPreviewer(c kubernetes.Interface, opts PreviewOptions) *previewer {
	return &previewer{
		client: c, opts: opts.withDefaults(),
		events: make(chan event.GenericEvent, 16), schedulerEvents: make(chan event.GenericEvent, 16), wake: make(chan struct{}, 1),
		latest: map[string]*previewOutcome{}, keys: map[string]previewKey{},
		now: time.Now,
	}
}

// source enqueues the profile of each finished preview; without a previewer, nothing.
func (pv *previewer) source() source.Source {
	events := make(chan event.GenericEvent)
	if pv != nil {
		events = pv.events
	}
	return source.Channel(events, &handler.EnqueueRequestForObject{})
}

// schedulerSource enqueues the Scheduler of each member whose preview finished; without a
// previewer, nothing.
func (pv *previewer) schedulerSource() source.Source {
	events := make(chan event.GenericEvent)
	if pv != nil {
		events = pv.schedulerEvents
	}
	return source.Channel(events, &handler.EnqueueRequestForObject{})
}

// planKey is what the plans of Schedulers read of the previewer: "" without one.
func (pv *previewer) planKey() string {
	if pv == nil {
		return ""
	}
	return "previews " + strconv.FormatUint(pv.generation.Load(), 10)
}

// ask returns what the preview of req says of its change under the settings s, and asks for
// the preview when it has not finished, or failed long enough ago to be run again.
func (pv *previewer) ask(req previewRequest, s schedulingv1alpha1.PreviewSettings) previewGate {
	o := pv.outcome(req.key, req.name)
	pv.mu.Lock()
	due := pv.dueLocked(o)
	pv.mu.Unlock()
	if due {
		pv.request(req)
	}
	return decidePreview(s, o)
}

// outcome is the profile's outcome of the preview key, nil when there is none (yet).
func (pv *previewer) outcome(key previewKey, name string) *previewOutcome {
	pv.mu.Lock()
	defer pv.mu.Unlock()
	if pv.keys[name] != key {
		return nil
	}
	return pv.latest[name]
}

// status is the status of the profile's latest finished preview, nil when none finished since
// the operator started.
func (pv *previewer) status(name string) *schedulingv1alpha1.PreviewStatus {
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

// forget drops what is known of a deleted profile, and cancels its preview.
func (pv *previewer) forget(name string) {
	if pv == nil {
		return
	}
	pv.mu.Lock()
	defer pv.mu.Unlock()
	delete(pv.latest, name)
	delete(pv.keys, name)
	pv.queue = slices.DeleteFunc(pv.queue, func(r previewRequest) bool { return r.name == name })
	if pv.running != nil && pv.running.name == name {
		pv.cancel(errSuperseded)
	}
}

// request asks for a preview unless it finished, runs or waits already. It replaces the
// profile's waiting request, and cancels its running preview, of another change.
func (pv *previewer) request(req previewRequest) {
	pv.mu.Lock()
	defer pv.mu.Unlock()
	if o := pv.latest[req.name]; pv.keys[req.name] == req.key && !pv.dueLocked(o) {
		return
	}
	if pv.running != nil && pv.running.name == req.name {
		if pv.running.key == req.key {
			return
		}
		pv.cancel(errSuperseded)
	}
	i := slices.IndexFunc(pv.queue, func(r previewRequest) bool { return r.name == req.name })
	switch {
	case i < 0:
		pv.queue = append(pv.queue, req)
	case pv.queue[i].key != req.key:
		pv.queue[i] = req
	}
	select {
	case pv.wake <- struct{}{}:
	default:
	}
}

// Start runs the previews one at a time until ctx ends: the manager runs it on its leader.
func (pv *previewer) Start(ctx context.Context) error {
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
func (pv *previewer) notify(ctx context.Context, req previewRequest) bool {
	select {
	case pv.events <- profileEvent(req.name):
	case <-ctx.Done():
		return false
	}
	if req.scheduler == "" {
		return true
	}
	select {
	case pv.schedulerEvents <- schedulerEvent(req.scheduler):
	case <-ctx.Done():
		return false
	}
	return true
}

// next takes the oldest waiting request and marks it running.
func (pv *previewer) next(ctx context.Context) (previewRequest, context.Context, bool) {
	pv.mu.Lock()
	defer pv.mu.Unlock()
	if len(pv.queue) == 0 || ctx.Err() != nil {
		return previewRequest{}, nil, false
	}
	req := pv.queue[0]
	pv.queue = pv.queue[1:]
	req.cluster = pv.cluster.Load()
	pctx, cancel := context.WithCancelCause(ctx)
	pv.running, pv.cancel = &req, cancel
	return req, pctx, true
}

// finish records a preview's outcome, unless it was cancelled.
func (pv *previewer) finish(req previewRequest, o *previewOutcome, keep bool) {
	pv.mu.Lock()
	defer pv.mu.Unlock()
	pv.cancel(nil)
	pv.running, pv.cancel = nil, nil
	if !keep {
		return
	}
	pv.latest[req.name], pv.keys[req.name] = o, req.key
	o.finished, o.cluster, o.scheduler = pv.now(), req.cluster, req.scheduler
	pv.generation.Add(1)
	switch {
	case o.status.Failure != "":
		// The profile's pass after the retry delay asks for the preview again.
		o.retryAt = pv.now().Add(previewRetry)
		pv.wakeAfter(previewRetry, req.name, req.scheduler)
	case o.holds():
		// Without a change of the cluster seen, the timer previews it again.
		pv.wakeAfter(previewRefreshTimer*pv.opts.RefreshInterval, req.name, req.scheduler)
		if o.cluster != pv.cluster.Load() {
			// The cluster changed while it ran.
			o.wakeScheduled = true
			pv.wakeAfter(pv.opts.RefreshInterval, req.name, req.scheduler)
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
func (pv *previewer) run(ctx context.Context, req previewRequest) (*previewOutcome, bool) {
	start := time.Now()
	budget, cancel := context.WithTimeoutCause(ctx, pv.opts.Timeout, context.DeadlineExceeded)
	defer cancel()
	res, err := pv.runWorker(budget, req)
	if ctx.Err() != nil {
		return nil, false
	}
	o := newPreviewOutcome(req.key, res, err, budget.Err() != nil, pv.opts, start, time.Since(start))
	log.FromContext(ctx).V(1).Info("Previewed a change", "SchedulerProfile", req.name, "from", req.key.from, "to", req.key.to, "pods", o.status.Pods, "added", o.added)
	return o, true
}

// newPreviewOutcome turns a preview that started at start and took took, with its result or its
// error, or timedOut past opts.Timeout, into its outcome.
func newPreviewOutcome(key previewKey, res *simulate.ProfilePreview, err error, timedOut bool, opts PreviewOptions, start time.Time, took time.Duration) *previewOutcome {
	o := &previewOutcome{status: schedulingv1alpha1.PreviewStatus{
		From: schedulingv1alpha1.PreviewRun{ConfigHash: key.from},
		To:   schedulingv1alpha1.PreviewRun{ConfigHash: key.to},
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
		o.status.Incomplete, o.spent = bounded(spent.incomplete, 1024), spent.flag
		return o
	case err != nil:
		o.status.Failure = bounded(err.Error(), maxRolloutFailure)
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
		st.NewlyUnschedulable = append(st.NewlyUnschedulable, schedulingv1alpha1.PreviewPod{Pod: p.Pod, Reason: bounded(p.Reason, 1024)})
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
func budgetSpent(stopped simulate.RevisionOutcome, opts PreviewOptions) (incomplete, flag string) {
	if stopped.StoppedByCPU {
		return bounded(fmt.Sprintf("%s of %s (%s) for its simulations; nothing was decided: %s", outOfCPU, opts.CPULimit, cpuLimitFlag, stopped.Stopped), 1024), cpuLimitFlag
	}
	return bounded(fmt.Sprintf("%s (%s); nothing was decided: %s", outOfTime, timeoutFlag, stopped.Stopped), 1024), timeoutFlag
}

// ranOut tells whether a preview's status.preview.incomplete says that a budget ran out.
func ranOut(incomplete string) bool {
	for _, prefix := range []string{outOfTime, outOfCPU, outOfMemory, outOfObjects} {
		if strings.HasPrefix(incomplete, prefix) {
			return true
		}
	}
	return false
}

// previewGate is what the preview of a change says of its rollout: held when reason is set.
type previewGate struct {
	reason, message string
}

// held tells whether the change waits, or is refused.
func (g previewGate) held() bool { return g.reason != "" }

// decidePreview is the rule of spec.rollout.preview: in Guard mode, a change rolls out once its
// preview leaves at most maxNewlyUnschedulable more pods unschedulable than the running
// configuration; a preview that decided nothing (a budget ran out, it failed) refuses it. Other
// modes never hold a change.
func decidePreview(s schedulingv1alpha1.PreviewSettings, o *previewOutcome) previewGate {
	if previewMode(s) != schedulingv1alpha1.PreviewGuard {
		return previewGate{}
	}
	const keeps = "; it is not rolled out and the running scheduler keeps its configuration"
	switch {
	case o == nil:
		return previewGate{schedulingv1alpha1.ReasonPreviewRunning, "Guard: the change waits for its preview; the running scheduler keeps its configuration meanwhile"}
	case !o.decided:
		why := o.status.Incomplete
		if why == "" {
			why = "the preview failed: " + o.status.Failure
		}
		fix := "; set spec.rollout.preview.mode to Report to roll it out"
		if o.spent != "" {
			fix += ", or have the operator's " + o.spent + " raised"
		}
		return previewGate{schedulingv1alpha1.ReasonPreviewRefused, "Guard: " + why + keeps + fix}
	}
	maxAdded := 0
	if s.MaxNewlyUnschedulable != nil {
		maxAdded = int(*s.MaxNewlyUnschedulable)
	}
	if o.added <= maxAdded {
		return previewGate{}
	}
	var pods []string
	for _, p := range o.status.NewlyUnschedulable {
		pods = append(pods, p.Pod+" ("+p.Reason+")")
	}
	than := "than the running configuration"
	if o.status.From.ConfigHash == "" {
		than = "while no scheduler runs them"
	}
	return previewGate{schedulingv1alpha1.ReasonPreviewRefused, fmt.Sprintf(
		"Guard: the preview leaves %d more of the profile's %d pods unschedulable %s, more than maxNewlyUnschedulable %d%s: %s",
		o.added, o.status.Pods, than, maxAdded, keeps, strings.Join(pods, "; "))}
}

// previewMode is the mode of s, Report when unset.
func previewMode(s schedulingv1alpha1.PreviewSettings) schedulingv1alpha1.PreviewMode {
	if s.Mode == "" {
		return schedulingv1alpha1.PreviewReport
	}
	return s.Mode
}

// preview asks for the preview of a dedicated profile's change from the configuration its
// Deployment d runs to cfg, and says whether the rollout waits for it.
func (r *SchedulerProfileReconciler) preview(ctx context.Context, p *schedulingv1alpha1.SchedulerProfile, proc *process, cfg *profile.Config, d *appsv1.Deployment) (previewGate, error) {
	s := p.Spec.Rollout.Preview
	if r.previews == nil || previewMode(s) == schedulingv1alpha1.PreviewOff {
		return previewGate{}, nil
	}
	running, err := r.runningConfig(ctx, proc, d)
	if err != nil {
		return previewGate{}, err
	}
	req := previewRequest{
		name: p.Name, key: previewKey{uid: p.UID, to: cfg.Hash, toGates: gatesKey(proc.run.FeatureGates)}, schedulerNames: []string{cfg.SchedulerName},
		next: simulate.Profile{Name: cfg.Hash, Config: cfg.YAML, FeatureGates: proc.run.FeatureGates},
	}
	if running != nil {
		gates := runningGates(d)
		req.key.from, req.key.fromGates = d.Spec.Template.Annotations[schedulingv1alpha1.AnnotationConfigHash], gatesKey(gates)
		if !req.key.changes() {
			return previewGate{}, nil
		}
		data := []byte(running.Data[configFileKey])
		req.running = &simulate.Profile{Name: req.key.from, Config: data, FeatureGates: gates}
		req.schedulerNames = servedNamesOfConfig(data, req.schedulerNames)
	}
	return r.previews.ask(req, s), nil
}

// servedNamesOfConfig adds to names the scheduler names that the configuration data serves, once
// each: the pods of a name the running configuration serves are part of a preview's workload.
// A configuration that does not decode (not expected of one that runs) adds none.
func servedNamesOfConfig(data []byte, names []string) []string {
	cfg, err := profile.DecodeConfig(data)
	if err != nil {
		return names
	}
	for _, prof := range cfg.Profiles {
		if !slices.Contains(names, prof.SchedulerName) {
			names = append(names, prof.SchedulerName)
		}
	}
	return names
}

// runningGates are the feature gates of the scheduler container of d, from its --feature-gates.
func runningGates(d *appsv1.Deployment) map[string]bool {
	for _, c := range d.Spec.Template.Spec.Containers {
		for _, a := range c.Args {
			v, ok := strings.CutPrefix(a, "--feature-gates=")
			if !ok {
				continue
			}
			gates := map[string]bool{}
			for _, kv := range strings.Split(v, ",") {
				name, val, _ := strings.Cut(kv, "=")
				if b, err := strconv.ParseBool(val); err == nil {
					gates[name] = b
				}
			}
			return gates
		}
	}
	return nil
}

// setPreviewStatus writes the latest preview of the profile, if one finished since the operator
// started; otherwise the status keeps the one it has.
func setPreviewStatus(p *schedulingv1alpha1.SchedulerProfile, obs *observation) {
	if obs.previewed != nil {
		p.Status.Preview = *obs.previewed
	}
}

// previewProgress is the Progressing condition of a change that its preview holds.
func previewProgress(g previewGate, status metav1.ConditionStatus, reason, message string) (metav1.ConditionStatus, string, string) {
	if !g.held() {
		return status, reason, message
	}
	return metav1.ConditionFalse, g.reason, g.message
}

// recordPreviewEvent sums up a new preview in an event: a warning when the new configuration
// leaves more pods unschedulable, or the preview decided nothing.
func (r *SchedulerProfileReconciler) recordPreviewEvent(before, after *schedulingv1alpha1.SchedulerProfile) {
	b, a := before.Status.Preview, after.Status.Preview
	if a.StartTime.IsZero() || (a.StartTime.Equal(&b.StartTime) && a.To.ConfigHash == b.To.ConfigHash) {
		return
	}
	eventType := "Normal"
	if a.Failure != "" || ranOut(a.Incomplete) || a.To.Unschedulable > a.From.Unschedulable {
		eventType = "Warning"
	}
	r.recorder.Eventf(after, nil, eventType, eventReasonPreview, actionRollout, "%s", previewSummary(a))
}

// previewSummary is a preview in one sentence.
func previewSummary(s schedulingv1alpha1.PreviewStatus) string {
	if s.Failure != "" {
		return "The preview of configuration " + s.To.ConfigHash + " failed: " + s.Failure
	}
	if ranOut(s.Incomplete) {
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

// setupPreviews adds the previewer to mgr, with a client of its own that reads the cluster page
// by page.
func setupPreviews(mgr ctrl.Manager, o PreviewOptions) (*previewer, error) {
	c, err := kubernetes.NewForConfig(mgr.GetConfig())
	if err != nil {
		return nil, fmt.Errorf("creating the client of previews: %w", err)
	}
	pv := newPreviewer(c, o)
	if err := mgr.Add(pv); err != nil {
		return nil, fmt.Errorf("adding the previewer: %w", err)
	}
	return pv, nil
}
