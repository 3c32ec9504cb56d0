package manager

import (
	"flag"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/schedops/scheduler-profile-operator/controllers/plan"
)

// capFlags defines on fs the flags of the cluster admin's caps on scheduler pods, of the manager
// and of `manager render`, which checks profiles as the manager with those flags does. caps
// starts with the defaults.
func capFlags(fs *flag.FlagSet, caps *plan.SchedulerPodCaps) {
	caps.MaxCPU, caps.MaxMemory = plan.DefaultMaxSchedulerCPU.DeepCopy(), plan.DefaultMaxSchedulerMemory.DeepCopy()
	fs.Var((*quantityValue)(&caps.MaxCPU), "max-scheduler-cpu", "The largest CPU request or limit, a `quantity`, that profiles and Schedulers may give their scheduler pods (spec.scheduler.resources); more is refused.")
	fs.Var((*quantityValue)(&caps.MaxMemory), "max-scheduler-memory", "The largest memory request or limit, a `quantity`, that profiles and Schedulers may give their scheduler pods (spec.scheduler.resources); more is refused.")
	fs.Func("allowed-scheduler-resources", "A comma-separated list of the resources besides cpu and memory, for example nvidia.com/gpu or ephemeral-storage, that profiles and Schedulers may give their scheduler pods requests or limits of (spec.scheduler.resources); by default none: the scheduler pods run in the operator's namespace, outside every team's quota.", func(v string) error {
		for _, name := range commaList(v) {
			caps.AllowedResources = append(caps.AllowedResources, corev1.ResourceName(name))
		}
		return nil
	})
	fs.BoolVar(&caps.AllowTolerateAllTaints, "allow-tolerate-all-taints", false, "Let profiles and Schedulers give their scheduler pods a toleration without a key and with operator Exists (spec.scheduler.tolerations), which tolerates every taint and puts the pods on any node, control-plane and reserved nodes included; refused by default.")
}

// quantityValue is a flag of a resource quantity: 4, 500m, 8Gi.
type quantityValue resource.Quantity

func (q *quantityValue) String() string { return (*resource.Quantity)(q).String() }

func (q *quantityValue) Set(v string) error {
	parsed, err := resource.ParseQuantity(v)
	if err != nil {
		return err
	}
	*q = quantityValue(parsed)
	return nil
}
