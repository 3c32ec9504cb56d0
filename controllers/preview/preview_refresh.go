package preview

import (
	"time"

	"sigs.k8s.io/controller-runtime/pkg/event"
)

// DefaultRefreshInterval is how soon after a preview that holds a change (refused, or
// incomplete) the same change may be previewed again when the cluster changes
// (--preview-refresh-interval).
const DefaultRefreshInterval = time.Minute

// previewRefreshTimer is how many refresh intervals after it finished an outcome that holds a
// change is previewed again though no change of the cluster was seen: the workload's pods, which
// the operator does not watch, may have changed, and so may what an incomplete preview ran out of.
const previewRefreshTimer = 10

// holds tells whether an outcome may hold a change back: the preview decided nothing, or the new
// configuration leaves more pods unschedulable. Such an outcome is previewed again as the
// cluster changes; a failure has its own retry (retryDue).
func (o *outcome) holds() bool {
	return o.status.Failure == "" && (!o.decided || o.added > 0)
}

// refreshDue tells whether an outcome that holds a change is previewed again at now, with the
// cluster at generation cluster: what previews read changed since the preview started and the
// interval has passed since it finished, or the timer's period has.
func (o *outcome) refreshDue(now time.Time, cluster uint64, interval time.Duration) bool {
	if !o.holds() {
		return false
	}
	since := now.Sub(o.finished)
	return (cluster != o.cluster && since >= interval) || since >= previewRefreshTimer*interval
}

// due tells whether the outcome o (nil for none) of the request's key is previewed (again) now.
// Called with mu held.
func (pv *Previewer) dueLocked(o *outcome) bool {
	now := pv.now()
	return o == nil || o.retryDue(now) || o.refreshDue(now, pv.cluster.Load(), pv.opts.RefreshInterval)
}

// ClusterChanged records a change of what a preview reads that can change its outcome (a node
// added, removed or relabelled, a PriorityClass), and has each profile whose latest outcome holds
// a change passed again once its refresh interval has passed: that pass previews the change
// again. Safe on a nil Previewer.
func (pv *Previewer) ClusterChanged() {
	if pv == nil {
		return
	}
	pv.cluster.Add(1)
	pv.mu.Lock()
	defer pv.mu.Unlock()
	for name, o := range pv.latest {
		if !o.holds() || o.wakeScheduled {
			continue
		}
		o.wakeScheduled = true
		pv.wakeAfter(max(o.finished.Add(pv.opts.RefreshInterval).Sub(pv.now()), 0), name, o.scheduler)
	}
}

// wakeSend bounds how long a wake waits for the controller to take its event: a wake of many
// profiles at once fills the channel's buffer, and a stopped operator reads no more.
const wakeSend = time.Minute

// wakeAfter passes the profile name, and its Scheduler when it is a member, after d: its pass
// asks for its preview again. The plans of Schedulers, which read the outcomes, are worked out
// anew.
func (pv *Previewer) wakeAfter(d time.Duration, name, scheduler string) {
	time.AfterFunc(d, func() {
		pv.generation.Add(1)
		send(pv.events, profileEvent(name))
		if scheduler != "" {
			send(pv.schedulerEvents, schedulerEvent(scheduler))
		}
	})
}

// send puts ev on events, or gives up after wakeSend.
func send(events chan<- event.GenericEvent, ev event.GenericEvent) {
	timer := time.NewTimer(wakeSend)
	defer timer.Stop()
	select {
	case events <- ev:
	case <-timer.C:
	}
}
