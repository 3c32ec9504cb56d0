package profile

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/schedops/scheduler-profile-operator/api/v1alpha1"
)

// profileWrapper builds test profiles fluently: makeProfile("binpack").withReplicas(2).obj().
type profileWrapper struct{ p v1alpha1.SchedulerProfile }

func makeProfile(name string) *profileWrapper {
	w := &profileWrapper{}
	w.p.Name = name
	return w
}

func (w *profileWrapper) withSchedulerName(n string) *profileWrapper {
	w.p.Spec.SchedulerName = n
	return w
}

func (w *profileWrapper) withReplicas(n int32) *profileWrapper {
	w.p.Spec.Scheduler.Replicas = ptr.To(n)
	return w
}

// withArgs adds a pluginConfig entry with args given as JSON.
func (w *profileWrapper) withArgs(plugin, args string) *profileWrapper {
	pc := v1alpha1.PluginConfig{Name: plugin}
	if args != "" {
		pc.Args = runtime.RawExtension{Raw: []byte(args)}
	}
	w.p.Spec.PluginConfig = append(w.p.Spec.PluginConfig, pc)
	return w
}

func (w *profileWrapper) obj() *v1alpha1.SchedulerProfile {
	return w.p.DeepCopy()
}
