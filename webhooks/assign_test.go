package webhooks

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
)

const operatorNamespace = "operator-system"

// podWrapper builds test pods.
type podWrapper struct{ corev1.Pod }

func makePod(namespace string) *podWrapper {
	return &podWrapper{corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: namespace}}}
}

func (p *podWrapper) schedulerName(name string) *podWrapper { p.Spec.SchedulerName = name; return p }
func (p *podWrapper) nodeName(name string) *podWrapper      { p.Spec.NodeName = name; return p }
func (p *podWrapper) annotation(k, v string) *podWrapper {
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Annotations[k] = v
	return p
}
func (p *podWrapper) ownedBy(apiVersion, kind string) *podWrapper {
	p.OwnerReferences = append(p.OwnerReferences, metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: "owner", UID: "1"})
	return p
}
func (p *podWrapper) obj() *corev1.Pod { return &p.Pod }

// makeNamespace is a Namespace with labels as key, value pairs.
func makeNamespace(name string, kv ...string) *corev1.Namespace {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}}}
	for i := 0; i+1 < len(kv); i += 2 {
		ns.Labels[kv[i]] = kv[i+1]
	}
	return ns
}

// servedNames answers notServed from a set of served names.
func servedNames(names ...string) func(string) (string, error) {
	return func(name string) (string, error) {
		for _, n := range names {
			if n == name {
				return "", nil
			}
		}
		return "no SchedulerProfile has scheduler name " + name, nil
	}
}

const (
	labelName     = schedulingv1alpha1.LabelAssignSchedulerName
	labelMode     = schedulingv1alpha1.LabelAssignMode
	labelFallback = schedulingv1alpha1.LabelAssignFallback
	notServedMsg  = "no SchedulerProfile has scheduler name binpack"
)

func TestDecide(t *testing.T) {
	assigned := decision{schedulerName: "binpack", annotation: "assigned"}
	fallback := decision{annotation: "fallback: " + notServedMsg, warning: "the pod stays on default-scheduler, not scheduler binpack: " + notServedMsg}
	cases := map[string]struct {
		pod    *corev1.Pod
		ns     *corev1.Namespace
		served []string
		want   decision
	}{
		"a pod without a scheduler name is assigned": {
			pod: makePod("team").obj(), ns: makeNamespace("team", labelName, "binpack"), served: []string{"binpack"}, want: assigned,
		},
		"a pod on default-scheduler is assigned": {
			pod: makePod("team").schedulerName("default-scheduler").obj(), ns: makeNamespace("team", labelName, "binpack"), served: []string{"binpack"}, want: assigned,
		},
		"mode enforce assigns": {
			pod: makePod("team").obj(), ns: makeNamespace("team", labelName, "binpack", labelMode, "enforce"), served: []string{"binpack"}, want: assigned,
		},
		"a pod naming another scheduler is left alone": {
			pod: makePod("team").schedulerName("spread").obj(), ns: makeNamespace("team", labelName, "binpack"), served: []string{"binpack", "spread"},
			want: decision{annotation: "skipped: the pod names scheduler spread"},
		},
		"a namespace without the label": {
			pod: makePod("team").obj(), ns: makeNamespace("team", labelMode, "enforce"), served: []string{"binpack"}, want: decision{},
		},
		"a namespace the cache does not hold": {
			pod: makePod("team").obj(), ns: nil, served: []string{"binpack"}, want: decision{},
		},
		"a pod bound to a node": {
			pod: makePod("team").nodeName("node-1").obj(), ns: makeNamespace("team", labelName, "binpack"), served: []string{"binpack"}, want: decision{},
		},
		"a DaemonSet's pod": {
			pod: makePod("team").ownedBy("apps/v1", "DaemonSet").obj(), ns: makeNamespace("team", labelName, "binpack"), served: []string{"binpack"}, want: decision{},
		},
		"a ReplicaSet's pod is assigned": {
			pod: makePod("team").ownedBy("apps/v1", "ReplicaSet").obj(), ns: makeNamespace("team", labelName, "binpack"), served: []string{"binpack"}, want: assigned,
		},
		"a mirror pod": {
			pod: makePod("team").annotation(mirrorPodAnnotation, "abc").obj(), ns: makeNamespace("team", labelName, "binpack"), served: []string{"binpack"}, want: decision{},
		},
		"kube-system": {
			pod: makePod("kube-system").obj(), ns: makeNamespace("kube-system", labelName, "binpack"), served: []string{"binpack"}, want: decision{},
		},
		"kube-public": {
			pod: makePod("kube-public").obj(), ns: makeNamespace("kube-public", labelName, "binpack"), served: []string{"binpack"}, want: decision{},
		},
		"kube-node-lease": {
			pod: makePod("kube-node-lease").obj(), ns: makeNamespace("kube-node-lease", labelName, "binpack"), served: []string{"binpack"}, want: decision{},
		},
		"the operator's namespace": {
			pod: makePod(operatorNamespace).obj(), ns: makeNamespace(operatorNamespace, labelName, "binpack"), served: []string{"binpack"}, want: decision{},
		},
		"not served: the pod stays on default-scheduler with a warning": {
			pod: makePod("team").obj(), ns: makeNamespace("team", labelName, "binpack"), want: fallback,
		},
		"not served, fallback default-scheduler": {
			pod: makePod("team").obj(), ns: makeNamespace("team", labelName, "binpack", labelFallback, "default-scheduler"), want: fallback,
		},
		"not served, an unknown fallback is default-scheduler": {
			pod: makePod("team").obj(), ns: makeNamespace("team", labelName, "binpack", labelFallback, "nowhere"), want: fallback,
		},
		"not served, fallback none assigns anyway": {
			pod: makePod("team").obj(), ns: makeNamespace("team", labelName, "binpack", labelFallback, "none"),
			want: decision{schedulerName: "binpack", annotation: "assigned although " + notServedMsg,
				warning: "the pod is assigned to scheduler binpack (fallback none) although " + notServedMsg + ": it stays Pending until the scheduler serves"},
		},
		"served, fallback none assigns": {
			pod: makePod("team").obj(), ns: makeNamespace("team", labelName, "binpack", labelFallback, "none"), served: []string{"binpack"}, want: assigned,
		},
		"dry-run, served": {
			pod: makePod("team").obj(), ns: makeNamespace("team", labelName, "binpack", labelMode, "dry-run"), served: []string{"binpack"},
			want: decision{annotation: "dry-run: would assign binpack"},
		},
		"dry-run, not served": {
			pod: makePod("team").obj(), ns: makeNamespace("team", labelName, "binpack", labelMode, "dry-run"),
			want: decision{annotation: "dry-run: would fall back: " + notServedMsg},
		},
		"dry-run, not served, fallback none": {
			pod: makePod("team").obj(), ns: makeNamespace("team", labelName, "binpack", labelMode, "dry-run", labelFallback, "none"),
			want: decision{annotation: "dry-run: would assign binpack although " + notServedMsg},
		},
		"an unknown mode skips with a warning": {
			pod: makePod("team").obj(), ns: makeNamespace("team", labelName, "binpack", labelMode, "audit"), served: []string{"binpack"},
			want: decision{annotation: `skipped: unknown scheduling.schedops.io/scheduler-name-mode "audit", want enforce or dry-run`,
				warning: `scheduler assignment skipped: unknown scheduling.schedops.io/scheduler-name-mode "audit", want enforce or dry-run`},
		},
		"a namespace the profile's access admits": {
			pod: makePod("team").obj(), ns: makeNamespace("team", labelName, "gpu", "team", "ml"), served: []string{"gpu"}, want: decision{schedulerName: "gpu", annotation: "assigned"},
		},
		"a namespace the profile's access does not admit": {
			pod: makePod("team").obj(), ns: makeNamespace("team", labelName, "gpu", "team", "web"), served: []string{"gpu"},
			want: decision{annotation: "skipped: SchedulerProfile gpu admits only the namespaces of its spec.access.namespaceSelector"},
		},
		"an empty name": {
			pod: makePod("team").obj(), ns: makeNamespace("team", labelName, ""), served: []string{""},
			want: decision{annotation: `skipped: the namespace assigns "", which is no scheduler of the operator`},
		},
		"the name default-scheduler": {
			pod: makePod("team").obj(), ns: makeNamespace("team", labelName, "default-scheduler"), served: []string{"default-scheduler"},
			want: decision{annotation: `skipped: the namespace assigns "default-scheduler", which is no scheduler of the operator`},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := decide(tc.pod, tc.ns, operatorNamespace, servedNames(tc.served...), gpuAccess)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(decision{})); diff != "" {
				t.Errorf("decide (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDecideAsksOnlyWhenItMatters: a pod that is left alone costs no look-up of the served names.
func TestDecideAsksOnlyWhenItMatters(t *testing.T) {
	asked := 0
	notServed := func(string) (string, error) { asked++; return "", nil }
	ns := makeNamespace("team", labelName, "binpack")
	for _, pod := range []*corev1.Pod{makePod("team").schedulerName("spread").obj(), makePod("team").nodeName("n").obj(), makePod("kube-system").obj()} {
		if _, err := decide(pod, ns, operatorNamespace, notServed, nil); err != nil {
			t.Fatal(err)
		}
	}
	if asked != 0 {
		t.Errorf("decide asked for the served names %d times, want 0", asked)
	}
}

func TestDecideError(t *testing.T) {
	boom := errors.New("boom")
	_, err := decide(makePod("team").obj(), makeNamespace("team", labelName, "binpack"), operatorNamespace, func(string) (string, error) { return "", boom }, nil)
	if !errors.Is(err, boom) {
		t.Errorf("decide: %v, want %v", err, boom)
	}
}

// gpuAccess is the access of a profile gpu that admits the namespaces labelled team=ml.
var gpuAccess = AccessDenied([]*schedulingv1alpha1.SchedulerProfile{{
	ObjectMeta: metav1.ObjectMeta{Name: "gpu"},
	Spec:       schedulingv1alpha1.SchedulerProfileSpec{Access: schedulingv1alpha1.ProfileAccess{NamespaceSelector: &schedulingv1alpha1.NamespaceSelector{MatchLabels: map[string]string{"team": "ml"}}}},
}}, func(p *schedulingv1alpha1.SchedulerProfile) string { return p.Name })
