package core

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/controllers/deploy"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
)

func TestPlanUpgrade(t *testing.T) {
	const v1, v2 = "example.com/spo:v1", "example.com/spo:v2"
	// legacy is a scheduler of an operator version before the lease prefix: its template has no
	// lease annotation.
	legacy := func(name, image string, available bool) waveMember {
		return waveMember{name: name, image: image, available: available, moves: true}
	}
	on := func(name, image string, available bool) waveMember {
		return waveMember{name: name, image: image, leased: true, available: available, moves: true}
	}
	cases := []struct {
		name        string
		self        string
		members     []waveMember
		maxInFlight int
		wantImage   string
		// wantHeld is a part of the held message; empty when not held.
		wantHeld    string
		wantStopped bool
		// wantLegacy keeps the template on the lease of an operator before the prefix.
		wantLegacy bool
	}{{
		name:      "already on the operator's image",
		self:      "a",
		members:   []waveMember{on("a", v2, false), on("b", v1, true)},
		wantImage: v2,
	}, {
		name:      "a new scheduler starts on the operator's image",
		self:      "new",
		members:   []waveMember{on("a", v1, true)},
		wantImage: v2,
	}, {
		name:      "the first in name order goes first",
		self:      "a",
		members:   []waveMember{on("b", v1, true), on("a", v1, true), on("c", v1, true)},
		wantImage: v2,
	}, {
		name:      "the second waits while the first has not moved",
		self:      "b",
		members:   []waveMember{on("a", v1, true), on("b", v1, true)},
		wantImage: v1,
		wantHeld:  "waiting for its turn to move from example.com/spo:v1 to the operator's scheduler image example.com/spo:v2: 1 scheduler(s) at a time, 0 rolling out now, 2 waiting; before it: Deployment a",
	}, {
		name:      "the second waits while the first rolls out",
		self:      "b",
		members:   []waveMember{on("a", v2, false), on("b", v1, true)},
		wantImage: v1,
		wantHeld:  "1 rolling out now (Deployment a), 1 waiting",
	}, {
		name:      "the second goes once the first is available",
		self:      "b",
		members:   []waveMember{on("a", v2, true), on("b", v1, true), on("c", v1, true)},
		wantImage: v2,
	}, {
		name:        "two at a time",
		self:        "b",
		members:     []waveMember{on("a", v1, true), on("b", v1, true), on("c", v1, true)},
		maxInFlight: 2,
		wantImage:   v2,
	}, {
		name:        "the third waits while two roll out",
		self:        "c",
		members:     []waveMember{on("a", v1, true), on("b", v1, true), on("c", v1, true)},
		maxInFlight: 2,
		wantImage:   v1,
		wantHeld:    "2 scheduler(s) at a time",
	}, {
		name:      "a scheduler whose owner does not move holds no turn",
		self:      "b",
		members:   []waveMember{{name: "a", image: v1, leased: true, available: true}, on("b", v1, true)},
		wantImage: v2,
	}, {
		name:      "a scheduler whose owner does not move counts in no flight",
		self:      "b",
		members:   []waveMember{{name: "a", image: v2, leased: true}, on("b", v1, true)},
		wantImage: v2,
	}, {
		// On main before held changes left the wave, a profile whose change Guard refused
		// counted as moving, took the first turn and never used it: b waited for good.
		name:      "a scheduler whose change is held holds no turn",
		self:      "b",
		members:   []waveMember{{name: "a", image: v1, leased: true, available: true, heldChange: true}, on("b", v1, true)},
		wantImage: v2,
	}, {
		name:      "a scheduler whose change is held takes its own turn",
		self:      "a",
		members:   []waveMember{{name: "a", image: v1, leased: true, available: true, heldChange: true}, on("b", v1, true)},
		wantImage: v2,
	}, {
		name:      "a held scheduler's running template counts in flight while it moves",
		self:      "b",
		members:   []waveMember{{name: "a", image: v2, leased: true, heldChange: true}, on("b", v1, true)},
		wantImage: v1,
		wantHeld:  "1 rolling out now (Deployment a), 1 waiting",
	}, {
		name:        "a rollback from the operator's image stops the wave",
		self:        "b",
		members:     []waveMember{{name: "a", image: v1, leased: true, available: true, moves: true, rolledBack: v2}, on("b", v1, true)},
		wantImage:   v1,
		wantHeld:    "the operator's scheduler image example.com/spo:v2 was rolled back on Deployment a, so the upgrade stopped: this scheduler stays on example.com/spo:v1",
		wantStopped: true,
	}, {
		name:      "a scheduler already moved stays when the wave stops",
		self:      "b",
		members:   []waveMember{{name: "a", image: v1, leased: true, moves: true, rolledBack: v2}, on("b", v2, true)},
		wantImage: v2,
	}, {
		name:      "a rollback from another image does not stop this wave",
		self:      "a",
		members:   []waveMember{{name: "a", image: v1, leased: true, available: true, moves: true, rolledBack: "example.com/spo:v3"}},
		wantImage: v2,
	}, {
		name:       "a scheduler of an operator before the lease prefix waits on its lease",
		self:       "b",
		members:    []waveMember{legacy("a", v1, true), legacy("b", v1, true)},
		wantImage:  v1,
		wantLegacy: true,
		wantHeld:   "waiting for its turn to move from example.com/spo:v1 and the lease of an operator version before the lease prefix to the operator's scheduler image example.com/spo:v2 and its schedops- lease: 1 scheduler(s) at a time, 0 rolling out now, 2 waiting; before it: Deployment a",
	}, {
		name:      "its turn moves the image and the lease together",
		self:      "a",
		members:   []waveMember{legacy("a", v1, true), legacy("b", v1, true)},
		wantImage: v2,
	}, {
		name:       "the next waits while one moves off the legacy lease",
		self:       "b",
		members:    []waveMember{on("a", v2, false), legacy("b", v1, true)},
		wantImage:  v1,
		wantLegacy: true,
		wantHeld:   "1 rolling out now (Deployment a), 1 waiting",
	}, {
		name:       "the lease alone is paced too, with the image unchanged",
		self:       "b",
		members:    []waveMember{legacy("a", v2, true), legacy("b", v2, true)},
		wantImage:  v2,
		wantLegacy: true,
		wantHeld:   "1 scheduler(s) at a time, 0 rolling out now, 2 waiting; before it: Deployment a",
	}, {
		name:      "on the operator's image but the legacy lease: its turn",
		self:      "a",
		members:   []waveMember{legacy("a", v2, true), on("b", v2, true)},
		wantImage: v2,
	}, {
		name:        "a rollback to the legacy lease stops the wave",
		self:        "b",
		members:     []waveMember{{name: "a", image: v1, available: true, moves: true, rolledBack: v2}, legacy("b", v1, true)},
		wantImage:   v1,
		wantLegacy:  true,
		wantHeld:    "so the upgrade stopped",
		wantStopped: true,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := planUpgrade(tc.self, v2, tc.members, tc.maxInFlight)
			if got.image != tc.wantImage || got.stopped != tc.wantStopped || got.legacyLease != tc.wantLegacy || (tc.wantHeld == "") != (got.held == "") || !strings.Contains(got.held, tc.wantHeld) {
				t.Errorf("planUpgrade = %+v; want image %s, stopped %v, legacy lease %v, held containing %q", got, tc.wantImage, tc.wantStopped, tc.wantLegacy, tc.wantHeld)
			}
		})
	}
}

// TestPlanUpgradeDowngrade: going back to the older image is the same wave.
func TestPlanUpgradeDowngrade(t *testing.T) {
	const v1, v2 = "example.com/spo:v1", "example.com/spo:v2"
	members := []waveMember{
		{name: "a", image: v2, leased: true, available: true, moves: true},
		{name: "b", image: v2, leased: true, available: true, moves: true},
	}
	if got := planUpgrade("a", v1, members, 1); got.image != v1 {
		t.Errorf("the first scheduler of a downgrade: %+v", got)
	}
	if got := planUpgrade("b", v1, members, 1); got.image != v2 || got.held == "" {
		t.Errorf("the second scheduler of a downgrade: %+v", got)
	}
}

// TestOwnerMoves: which owners take a turn in the upgrade wave. On main before held changes left
// the wave, a dedicated profile whose change its preview held (PreviewRefused, PreviewRunning)
// moved, and held the turn of every scheduler after it.
func TestOwnerMoves(t *testing.T) {
	progressing := func(reason string) []metav1.Condition {
		return []metav1.Condition{{Type: schedulingv1alpha1.ConditionProgressing, Status: metav1.ConditionFalse, Reason: reason}}
	}
	withConditions := func(p *schedulingv1alpha1.SchedulerProfile, conds []metav1.Condition) *schedulingv1alpha1.SchedulerProfile {
		p.Status.Conditions = conds
		return p
	}
	cases := []struct {
		name string
		obj  client.Object
		want bool
	}{
		{name: "a dedicated profile", obj: testutil.MakeProfile("p").Obj(), want: true},
		{name: "a member", obj: testutil.MakeProfile("p").SchedulerRef("s").Obj()},
		{name: "an invalid profile", obj: withConditions(testutil.MakeProfile("p").Obj(), []metav1.Condition{{Type: schedulingv1alpha1.ConditionConfigValid, Status: metav1.ConditionFalse, Reason: schedulingv1alpha1.ReasonInvalidConfig}})},
		{name: "a change refused by its preview", obj: withConditions(testutil.MakeProfile("p").Obj(), progressing(schedulingv1alpha1.ReasonPreviewRefused))},
		{name: "a change waiting for its preview", obj: withConditions(testutil.MakeProfile("p").Obj(), progressing(schedulingv1alpha1.ReasonPreviewRunning))},
		{name: "a change rolling out", obj: withConditions(testutil.MakeProfile("p").Obj(), progressing(schedulingv1alpha1.ReasonUpgradeWaiting)), want: true},
		{name: "a Scheduler", obj: testutil.MakeScheduler("s").Obj(), want: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := ownerMoves(tc.obj); got != tc.want {
				t.Errorf("ownerMoves = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestKeepLease: a scheduler the upgrade wave holds on the lease of an operator before the prefix
// keeps a template with no lease annotation and a configuration on that lease; its turn, or a
// scheduler already on the prefix, builds the template as always.
func TestKeepLease(t *testing.T) {
	p := testutil.MakeProfile("binpack").Obj()
	proc, cfg := dedicated(p), testConfig(t, p)
	held, legacy, err := upgradeStep{image: "v1", legacyLease: true}.keepLease(proc, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if proc.OnLegacyLease {
		t.Error("keepLease changed the process it was given")
	}
	if !strings.Contains(string(legacy.YAML), "resourceName: binpack\n") {
		t.Errorf("the held configuration is not on the legacy lease:\n%s", legacy.YAML)
	}
	tmpl := testutil.Typed[appsv1.Deployment](t, deploy.Deployment(held, testSettings, legacy)).Spec.Template
	if lease, ok := tmpl.Annotations[schedulingv1alpha1.AnnotationLease]; ok {
		t.Errorf("the held template names the lease %q", lease)
	}
	if got := held.LeaseOf(tmpl.Annotations); got != "binpack" {
		t.Errorf("the held template runs on %q", got)
	}
	if tmpl.Annotations[schedulingv1alpha1.AnnotationConfigHash] != legacy.Hash {
		t.Errorf("the held template mounts the configuration %s, want %s", tmpl.Annotations[schedulingv1alpha1.AnnotationConfigHash], legacy.Hash)
	}

	same, sameCfg, err := upgradeStep{image: "v2"}.keepLease(proc, cfg)
	if err != nil || same != proc || sameCfg != cfg {
		t.Errorf("a step that keeps no lease changed the pass: %v", err)
	}
	tmpl = testutil.Typed[appsv1.Deployment](t, deploy.Deployment(proc, testSettings, cfg)).Spec.Template
	if got := tmpl.Annotations[schedulingv1alpha1.AnnotationLease]; got != "schedops-binpack" {
		t.Errorf("the template names the lease %q", got)
	}
}

// TestRollbackToTheLegacyLeaseStopsTheWave: a rollback that returns to a template of an operator
// before the prefix is marked even with the same image, as one that returns to another image.
func TestRollbackToTheLegacyLeaseStopsTheWave(t *testing.T) {
	p := testutil.MakeProfile("binpack").Obj()
	const image = "example.com/spo:v2"
	for _, tc := range []struct {
		name     string
		legacy   bool
		image    string
		wantMark bool
	}{
		{name: "same image, prefixed lease", image: image},
		{name: "same image, legacy lease", legacy: true, image: image, wantMark: true},
		{name: "older image", image: "example.com/spo:v1", wantMark: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			proc, cfg := dedicated(p), testConfig(t, p)
			ss := testSettings
			ss.Image = tc.image
			if tc.legacy {
				var err error
				if proc, cfg, err = (upgradeStep{legacyLease: true}).keepLease(proc, cfg); err != nil {
					t.Fatal(err)
				}
			}
			rollback := deploy.Deployment(proc, ss, cfg)
			markImageRollback(rollback, image)
			if got := rollback.Annotations[schedulingv1alpha1.AnnotationImageRolledBack] == image; got != tc.wantMark {
				t.Errorf("marked %v, want %v (annotations %v)", got, tc.wantMark, rollback.Annotations)
			}
		})
	}
}
