package core

import (
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
)

func TestUnusedConfigMaps(t *testing.T) {
	p := testutil.MakeProfile("bp").UID("uid-bp").Obj()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	// cm is a ConfigMap rendered age generations (and minutes) ago.
	cm := func(hash string, age int, owner *schedulingv1alpha1.SchedulerProfile) corev1.ConfigMap {
		c := corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
			Name:              "bp-config-" + hash,
			CreationTimestamp: metav1.NewTime(base.Add(-time.Duration(age) * time.Minute)),
			Labels:            map[string]string{schedulingv1alpha1.LabelGeneration: strconv.Itoa(100 - age)},
		}}
		if owner != nil {
			c.OwnerReferences = []metav1.OwnerReference{{UID: owner.UID, Controller: ptr.To(true), Name: owner.Name}}
		}
		return c
	}
	rs := func(hash string) appsv1.ReplicaSet {
		r := appsv1.ReplicaSet{}
		r.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "bp-config-" + hash}}}}}
		return r
	}
	other := testutil.MakeProfile("other").UID("uid-other").Obj()

	tests := []struct {
		name string
		cms  []corev1.ConfigMap
		rss  []appsv1.ReplicaSet
		want []string
	}{
		{name: "nothing to prune", cms: []corev1.ConfigMap{cm("cur", 0, p)}},
		{name: "three unused are kept",
			cms: []corev1.ConfigMap{cm("cur", 0, p), cm("a", 1, p), cm("b", 2, p), cm("c", 3, p)}},
		{name: "the oldest unused beyond three go",
			cms:  []corev1.ConfigMap{cm("cur", 0, p), cm("a", 1, p), cm("b", 2, p), cm("c", 3, p), cm("d", 4, p), cm("e", 5, p)},
			want: []string{"bp-config-d", "bp-config-e"}},
		{name: "a ConfigMap a ReplicaSet mounts is kept whatever its age",
			cms:  []corev1.ConfigMap{cm("cur", 0, p), cm("a", 1, p), cm("b", 2, p), cm("c", 3, p), cm("d", 4, p), cm("old", 50, p)},
			rss:  []appsv1.ReplicaSet{rs("old")},
			want: []string{"bp-config-d"}},
		{name: "created in the same second, the generation tells the newest",
			cms: func() []corev1.ConfigMap {
				var out []corev1.ConfigMap
				for i, hash := range []string{"z5", "y4", "x3", "w2", "v1"} {
					c := cm(hash, i+1, p)
					c.CreationTimestamp = metav1.NewTime(base)
					out = append(out, c)
				}
				return out
			}(),
			want: []string{"bp-config-w2", "bp-config-v1"}},
		{name: "ConfigMaps another owner controls are never pruned",
			cms: []corev1.ConfigMap{cm("cur", 0, p), cm("a", 1, p), cm("b", 2, p), cm("c", 3, p), cm("x", 9, other), cm("y", 9, nil)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, c := range unusedConfigMaps(dedicated(p), tc.cms, tc.rss, "cur") {
				got = append(got, c.Name)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("pruned (-want +got):\n%s", diff)
			}
		})
	}
}
