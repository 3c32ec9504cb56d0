package testutil

import (
	"encoding/json"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
)

// ProfileWrapper builds a SchedulerProfile.
type ProfileWrapper struct {
	schedulingv1alpha1.SchedulerProfile
}

// MakeProfile starts a SchedulerProfile named name with an empty spec: every default applies.
func MakeProfile(name string) *ProfileWrapper {
	return &ProfileWrapper{schedulingv1alpha1.SchedulerProfile{ObjectMeta: metav1.ObjectMeta{Name: name}}}
}

// UID sets metadata.uid, which the owner references of the profile's objects carry. The
// apiserver assigns its own on creation; unit tests that match owners set one.
func (w *ProfileWrapper) UID(uid types.UID) *ProfileWrapper {
	w.SchedulerProfile.UID = uid
	return w
}

// SchedulerName sets spec.schedulerName.
func (w *ProfileWrapper) SchedulerName(name string) *ProfileWrapper {
	w.Spec.SchedulerName = name
	return w
}

// Replicas sets spec.scheduler.replicas.
func (w *ProfileWrapper) Replicas(n int32) *ProfileWrapper {
	w.Spec.Scheduler.Replicas = ptr.To(n)
	return w
}

// SchedulerSettings replaces spec.scheduler, how the profile's scheduler runs.
func (w *ProfileWrapper) SchedulerSettings(s schedulingv1alpha1.SchedulerSettings) *ProfileWrapper {
	w.Spec.Scheduler = s
	return w
}

// PluginConfig appends a spec.pluginConfig entry for plugin with args given as JSON; empty args
// leave the entry without args.
func (w *ProfileWrapper) PluginConfig(plugin, args string) *ProfileWrapper {
	pc := schedulingv1alpha1.PluginConfig{Name: plugin}
	if args != "" {
		pc.Args = runtime.RawExtension{Raw: []byte(args)}
	}
	w.Spec.PluginConfig = append(w.Spec.PluginConfig, pc)
	return w
}

// SchedulerRef sets spec.schedulerRef: the profile joins the named Scheduler's process.
func (w *ProfileWrapper) SchedulerRef(scheduler string) *ProfileWrapper {
	w.Spec.SchedulerRef = schedulingv1alpha1.SchedulerReference{Name: scheduler}
	return w
}

// Obj returns a copy of the profile.
func (w *ProfileWrapper) Obj() *schedulingv1alpha1.SchedulerProfile {
	return w.DeepCopy()
}

// Access sets spec.access.namespaceSelector to select the namespaces with the labels: the
// namespaces that may use the profile.
func (w *ProfileWrapper) Access(labels map[string]string) *ProfileWrapper {
	w.Spec.Access.NamespaceSelector = &schedulingv1alpha1.NamespaceSelector{MatchLabels: labels}
	return w
}

// Enable appends plugins to spec.plugins.multiPoint.enabled.
func (w *ProfileWrapper) Enable(plugins ...string) *ProfileWrapper {
	if w.Spec.Plugins == nil {
		w.Spec.Plugins = &schedulingv1alpha1.Plugins{}
	}
	for _, name := range plugins {
		w.Spec.Plugins.MultiPoint.Enabled = append(w.Spec.Plugins.MultiPoint.Enabled, schedulingv1alpha1.Plugin{Name: name})
	}
	return w
}

// NodePool enables the NodePool plugin with a selector of the nodes with the labels.
func (w *ProfileWrapper) NodePool(labels map[string]string) *ProfileWrapper {
	args, err := json.Marshal(map[string]any{"nodeSelector": map[string]any{"matchLabels": labels}})
	if err != nil {
		panic(err)
	}
	return w.Enable("NodePool").PluginConfig("NodePool", string(args))
}
