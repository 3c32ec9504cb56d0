package plan

import (
	"cmp"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
)

// ByAge orders profiles oldest first, by name when created in the same second.
func ByAge(a, b *schedulingv1alpha1.SchedulerProfile) int {
	if c := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); c != 0 {
		return c
	}
	return cmp.Compare(a.Name, b.Name)
}
