package preview

import "time"

// Finished records that the preview of key for the profile name ended just now, on the cluster as
// it is, and decided that the change leaves added more pods unschedulable: what a preview's run
// records. The reconcilers' tests use it to give a change an outcome without running one.
func (pv *Previewer) Finished(name string, key Key, added int) {
	pv.mu.Lock()
	defer pv.mu.Unlock()
	pv.latest[name], pv.keys[name] = &outcome{decided: true, added: added, finished: time.Now(), cluster: pv.cluster.Load()}, key
}

// Queued returns the previews asked for that have not started.
func (pv *Previewer) Queued() []Request {
	pv.mu.Lock()
	defer pv.mu.Unlock()
	return append([]Request(nil), pv.queue...)
}
