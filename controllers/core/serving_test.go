package core

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/controllers/deploy"
	"github.com/schedops/scheduler-profile-operator/controllers/plan"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
)

func TestNameOwner(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	aged := func(name, schedulerName string, age int) schedulingv1alpha1.SchedulerProfile {
		p := testutil.MakeProfile(name).SchedulerName(schedulerName).Obj()
		p.CreationTimestamp = metav1.NewTime(t0.Add(-time.Duration(age) * time.Hour))
		return *p
	}
	deleting := func(p schedulingv1alpha1.SchedulerProfile) schedulingv1alpha1.SchedulerProfile {
		p.DeletionTimestamp = ptr.To(metav1.NewTime(t0))
		return p
	}
	cases := []struct {
		name       string
		p          string
		all        []schedulingv1alpha1.SchedulerProfile
		served     plan.ServedNames
		wantOwner  string
		wantServed bool
	}{{
		name: "nobody serves it, p is the oldest to ask",
		p:    "old",
		all:  []schedulingv1alpha1.SchedulerProfile{aged("old", "n", 2), aged("young", "n", 1)},
	}, {
		name:      "nobody serves it, an older profile asks too",
		p:         "young",
		all:       []schedulingv1alpha1.SchedulerProfile{aged("old", "n", 2), aged("young", "n", 1)},
		wantOwner: "old",
	}, {
		name:       "an older profile renames onto a name a younger one serves",
		p:          "old",
		all:        []schedulingv1alpha1.SchedulerProfile{aged("old", "n", 2), aged("young", "n", 1)},
		served:     plan.ServedNames{"n": {"young"}},
		wantOwner:  "young",
		wantServed: true,
	}, {
		name:   "the younger profile that serves it keeps it",
		p:      "young",
		all:    []schedulingv1alpha1.SchedulerProfile{aged("old", "n", 2), aged("young", "n", 1)},
		served: plan.ServedNames{"n": {"young"}},
	}, {
		name:       "a profile renamed away still serves the name until its rollout is done",
		p:          "other",
		all:        []schedulingv1alpha1.SchedulerProfile{aged("renamed", "m", 2), aged("other", "n", 1)},
		served:     plan.ServedNames{"n": {"renamed"}, "m": {"renamed"}},
		wantOwner:  "renamed",
		wantServed: true,
	}, {
		name:       "a profile being deleted serves it until its pods are gone",
		p:          "young",
		all:        []schedulingv1alpha1.SchedulerProfile{deleting(aged("old", "n", 2)), aged("young", "n", 1)},
		served:     plan.ServedNames{"n": {"old"}},
		wantOwner:  "old",
		wantServed: true,
	}, {
		name:       "a deleted profile's pods still serve it",
		p:          "young",
		all:        []schedulingv1alpha1.SchedulerProfile{aged("young", "n", 1)},
		served:     plan.ServedNames{"n": {"gone"}},
		wantOwner:  "gone",
		wantServed: true,
	}, {
		name: "a profile being deleted that serves nothing does not claim",
		p:    "young",
		all:  []schedulingv1alpha1.SchedulerProfile{deleting(aged("old", "n", 2)), aged("young", "n", 1)},
	}, {
		name:       "two serve it (a cluster from before the rule): the younger yields",
		p:          "young",
		all:        []schedulingv1alpha1.SchedulerProfile{aged("old", "n", 2), aged("young", "n", 1)},
		served:     plan.ServedNames{"n": {"old", "young"}},
		wantOwner:  "old",
		wantServed: true,
	}, {
		name:   "two serve it: the older keeps it",
		p:      "old",
		all:    []schedulingv1alpha1.SchedulerProfile{aged("old", "n", 2), aged("young", "n", 1)},
		served: plan.ServedNames{"n": {"old", "young"}},
	}, {
		// Before a Scheduler held the names of its running revisions, a member that left freed
		// its name while the old leader still served it.
		name:       "a running revision of a Scheduler serves it for a member that left",
		p:          "young",
		all:        []schedulingv1alpha1.SchedulerProfile{aged("young", "n", 1)},
		served:     plan.ServedNames{"n": {plan.SchedulerHolder("shared")}},
		wantOwner:  plan.SchedulerHolder("shared"),
		wantServed: true,
	}, {
		name: "a member of that Scheduler may take it: one process, one leader",
		p:    "member",
		all: func() []schedulingv1alpha1.SchedulerProfile {
			m := aged("member", "n", 1)
			m.Spec.SchedulerRef.Name = "shared"
			return []schedulingv1alpha1.SchedulerProfile{m}
		}(),
		served: plan.ServedNames{"n": {plan.SchedulerHolder("shared")}},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var p *schedulingv1alpha1.SchedulerProfile
			for i := range tc.all {
				if tc.all[i].Name == tc.p {
					p = &tc.all[i]
				}
			}
			owner, served := plan.NameOwner(p, tc.all, "n", tc.served)
			if owner != tc.wantOwner || served != tc.wantServed {
				t.Errorf("nameOwner = %q, %v; want %q, %v", owner, served, tc.wantOwner, tc.wantServed)
			}
		})
	}
}

func TestServedNamesIndex(t *testing.T) {
	config, mounting := configWithNames, mountingConfig
	managed := func(ownerLabel, owner string) map[string]string {
		return map[string]string{plan.LabelName: "kube-scheduler", plan.LabelManagedBy: schedulingv1alpha1.FieldManager, ownerLabel: owner}
	}
	deployment := func(name string, labels map[string]string, n int32, cm string) *appsv1.Deployment {
		return &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Namespace: testSettings.Namespace, Name: name, Labels: labels},
			Spec:       appsv1.DeploymentSpec{Replicas: ptr.To(n), Template: corev1.PodTemplateSpec{Spec: mounting(cm)}},
		}
	}
	pod := func(name string, labels map[string]string, cm string, phase corev1.PodPhase) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: testSettings.Namespace, Name: name, Labels: labels},
			Spec: mounting(cm), Status: corev1.PodStatus{Phase: phase}}
	}
	shared := testutil.MakeScheduler("shared").Obj()
	shared.Status.Profiles = []schedulingv1alpha1.SchedulerMember{{Name: "px", SchedulerName: "sx"}, {Name: "py", SchedulerName: "sy"}}
	objs := []client.Object{
		config("a-config-1", "a"), config("a-config-0", "a-old"), config("b-config-1", "b"), config("shared.config-1", "sx", "sy"),
		// a's rollout from a-old to a is under way: the old pod still runs.
		deployment("a-scheduler", managed(schedulingv1alpha1.LabelProfile, "a"), 1, "a-config-1"),
		pod("a-old-pod", managed(schedulingv1alpha1.LabelProfile, "a"), "a-config-0", corev1.PodRunning),
		// b is scaled down and its last pod has finished: it serves nothing.
		deployment("b-scheduler", managed(schedulingv1alpha1.LabelProfile, "b"), 0, "b-config-1"),
		pod("b-pod", managed(schedulingv1alpha1.LabelProfile, "b"), "b-config-1", corev1.PodSucceeded),
		// a deleted profile's pod, not yet collected, mounting a ConfigMap already gone.
		pod("c-pod", managed(schedulingv1alpha1.LabelProfile, "c"), "c-config-1", corev1.PodRunning),
		deployment("shared.scheduler", managed(schedulingv1alpha1.LabelScheduler, "shared"), 2, "shared.config-1"),
		// An old pod of the Scheduler still serves sz, of a member its status no longer lists.
		config("shared.config-0", "sx", "sz"),
		pod("shared-old-pod", managed(schedulingv1alpha1.LabelScheduler, "shared"), "shared.config-0", corev1.PodRunning),
		shared,
	}
	r := fakeObjects(objs...)
	got, err := r.ServedNamesIndex(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := plan.ServedNames{"a": {"a"}, "a-old": {"a"}, "sx": {"px"}, "sy": {"py"}, "sz": {plan.SchedulerHolder("shared")}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("served names (-want +got):\n%s", diff)
	}
	// Asked for one name, the index reads only what concerns it, and says the same of it.
	for _, name := range []string{"a", "a-old", "b", "c", "sx", "sy", "sz", "nobody"} {
		got, err := r.ServedNamesOf(context.Background(), []string{name})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want[name], got[name]); diff != "" {
			t.Errorf("servers of %q (-want +got):\n%s", name, diff)
		}
	}
}

// TestServedNamesOfReadsOnlyItsName: the objects that servedNamesOf reads for one scheduler name
// are the same with 5 other dedicated schedulers or with 50: a pass's cost does not grow with
// the number of profiles.
func TestServedNamesOfReadsOnlyItsName(t *testing.T) {
	read := func(others int) int {
		objs := []client.Object{}
		for i := range others + 1 {
			name := fmt.Sprintf("p%d", i)
			p := testutil.MakeProfile(name).Obj()
			proc := dedicated(p)
			cfg := testConfig(t, p)
			cm := testutil.Typed[corev1.ConfigMap](t, deploy.ConfigMap(proc, testSettings, cfg))
			d := testutil.Typed[appsv1.Deployment](t, deploy.Deployment(proc, testSettings, cfg))
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: d.Namespace, Name: name + "-pod", Labels: d.Spec.Template.Labels},
				Spec: d.Spec.Template.Spec}
			objs = append(objs, p, cm, d, pod)
		}
		r := fakeObjects(objs...)
		counting := &countingReads{Client: r.client}
		r.client, r.Reader = counting, counting
		got, err := r.ServedNamesOf(context.Background(), []string{"p0"})
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{"p0"}; !slices.Equal(got["p0"], want) {
			t.Errorf("With %d others: servers of p0 %v, want %v", others, got["p0"], want)
		}
		return counting.objects
	}
	few, many := read(5), read(50)
	if few != many || few == 0 {
		t.Errorf("Objects read for one scheduler name: %d with 5 other schedulers, %d with 50; want the same, and some", few, many)
	}
}

// countingReads counts the objects that the lists of a client return.
type countingReads struct {
	client.Client
	objects int
}

func (c *countingReads) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if err := c.Client.List(ctx, list, opts...); err != nil {
		return err
	}
	c.objects += meta.LenList(list)
	return nil
}

// configWithNames is a ConfigMap of the operator's namespace with a configuration whose profiles
// have the scheduler names.
func configWithNames(name string, schedulerNames ...string) *corev1.ConfigMap {
	data := "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n"
	for _, n := range schedulerNames {
		data += "- schedulerName: " + n + "\n"
	}
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: testSettings.Namespace, Name: name}, Data: map[string]string{plan.ConfigFileKey: data}}
}

// mountingConfig is a pod spec that mounts the configuration of a ConfigMap.
func mountingConfig(cm string) corev1.PodSpec {
	return corev1.PodSpec{Volumes: []corev1.Volume{{Name: plan.ConfigVolume, VolumeSource: corev1.VolumeSource{
		ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: cm}}}}}}
}
