package profile

import (
	"context"
	"encoding/json"
	"fmt"

	configv1 "k8s.io/kube-scheduler/config/v1"
	"k8s.io/kubernetes/pkg/scheduler/framework/plugins/names"
)

// CanonicalQueueSort returns p with its queue sort written the one way the operator writes it for
// the plugin that really sorts p's queue, so that two entries that sort their queues alike render
// alike. Upstream requires every profile of one process to have the same queueSort plugin set
// after defaulting, compared field by field: `{disabled: [{name: "*"}], enabled: [{name:
// PrioritySort}]}` differs from nothing written although both sort by PrioritySort. The one way
// is nothing written for PrioritySort, the default, and `{enabled: [{name: X}], disabled:
// [{name: "*"}]}` for another plugin X ("*" keeps a multiPoint plugin out of the queue sort). The
// rewrite is kept only when the scheduler built from it sorts by the same plugin as the one built
// from p; an entry that does not build, or whose queue sort only p's spelling gives, is returned
// as it is, and validation reports it. An entry that writes neither queueSort nor multiPoint
// sorts by the default and is returned without building anything.
func CanonicalQueueSort(p Profile, gates map[string]bool) Profile {
	if p.entry.Plugins == nil || (p.entry.Plugins.QueueSort == nil && p.entry.Plugins.MultiPoint == nil) {
		return p
	}
	out := p
	_ = withGates(gates, func() { out = canonicalQueueSort(p) }) // refused gates fail validation
	return out
}

func canonicalQueueSort(p Profile) Profile {
	sorter, ok := queueSortPlugin(p)
	if !ok {
		return p
	}
	c := p.withQueueSort(canonicalQueueSortSet(sorter))
	if c.Fingerprint() == p.Fingerprint() {
		return p
	}
	if got, ok := queueSortPlugin(c); !ok || got != sorter {
		return p
	}
	return c
}

// canonicalQueueSortSet is the one spelling of a queue sort by plugin name.
func canonicalQueueSortSet(name string) *configv1.PluginSet {
	if name == names.PrioritySort {
		return nil
	}
	return &configv1.PluginSet{Enabled: []configv1.Plugin{{Name: name}}, Disabled: []configv1.Plugin{{Name: "*"}}}
}

// queueSortPlugin builds the scheduler of p alone and returns the plugin that sorts its queue.
func queueSortPlugin(p Profile) (string, bool) {
	cfg, err := RenderProcess(Process{Namespace: "queue-sort", LeaseName: "queue-sort"}, []Profile{p})
	if err != nil {
		return "", false
	}
	decoded, err := DecodeConfig(cfg.YAML)
	if err != nil {
		return "", false
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	fs, err := NewFakeScheduler(ctx, decoded, nil)
	if err != nil {
		return "", false
	}
	fw, ok := fs.Profiles[p.SchedulerName]
	if !ok {
		return "", false
	}
	sorters := fw.ListPlugins().QueueSort.Enabled
	if len(sorters) != 1 {
		return "", false
	}
	return sorters[0].Name, true
}

// withQueueSort returns a copy of p whose queueSort plugin set is set (nil: not written).
func (p Profile) withQueueSort(set *configv1.PluginSet) Profile {
	var plugins renderedPlugins
	if p.entry.Plugins != nil {
		plugins = *p.entry.Plugins
	}
	plugins.QueueSort = set
	p.entry.Plugins = &plugins
	if plugins == (renderedPlugins{}) {
		p.entry.Plugins = nil
	}
	return p
}

// QueueSortSpelling is the entry's queueSort as written in its configuration, for a message
// ("the default (PrioritySort)" when it writes none).
func (p Profile) QueueSortSpelling() string {
	if p.entry.Plugins == nil || p.entry.Plugins.QueueSort == nil {
		return "the default (" + names.PrioritySort + ")"
	}
	data, err := json.Marshal(p.entry.Plugins.QueueSort)
	if err != nil {
		return fmt.Sprintf("%v", *p.entry.Plugins.QueueSort)
	}
	return string(data)
}
