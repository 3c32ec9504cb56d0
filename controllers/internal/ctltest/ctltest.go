// Package ctltest holds what the tests of the rooms under controllers/ share: the settings of a
// test operator, a dedicated profile's process and its rendered configuration. Only tests import it.
package ctltest

import (
	"testing"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/controllers/plan"
	"github.com/schedops/scheduler-profile-operator/scheduler/profile"
)

// Settings are a test operator's: its namespace and scheduler image.
var Settings = plan.Settings{Namespace: "ops", Image: "example.com/spo:v1"}

// Dedicated is the scheduler process of a profile that runs its own scheduler.
func Dedicated(p *schedulingv1alpha1.SchedulerProfile) *plan.Process {
	return plan.DedicatedProcess(p, profile.SchedulerName(p))
}

// Config is p's configuration rendered for Settings' namespace.
func Config(t testing.TB, p *schedulingv1alpha1.SchedulerProfile) *profile.Config {
	t.Helper()
	cfg, err := profile.Render(p, profile.Settings{Namespace: Settings.Namespace})
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}
