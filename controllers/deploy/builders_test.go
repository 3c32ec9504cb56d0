package deploy

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/pod-security-admission/api"
	"k8s.io/pod-security-admission/policy"
	"k8s.io/utils/ptr"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/controllers/internal/ctltest"
	"github.com/schedops/scheduler-profile-operator/controllers/plan"
	"github.com/schedops/scheduler-profile-operator/internal/testutil"
)

// surgeOne is the strategy of every scheduler Deployment: a new pod first, no old one stopped
// before it is ready.
var surgeOne = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{
	MaxUnavailable: ptr.To(intstr.FromInt32(0)), MaxSurge: ptr.To(intstr.FromInt32(1)),
}}

var testSettings = ctltest.Settings

// dedicated and testConfig are ctltest's, by their short names.
var (
	dedicated  = ctltest.Dedicated
	testConfig = ctltest.Config
)

func TestBuildDeployment(t *testing.T) {
	tolerations := []corev1.Toleration{{Key: "node-role.kubernetes.io/control-plane", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
	aff := &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}}}},
	}}}
	tests := []struct {
		name         string
		profile      *schedulingv1alpha1.SchedulerProfile
		wantReplicas int32
		wantStrategy appsv1.DeploymentStrategy
		wantRes      corev1.ResourceRequirements
		wantArgs     []string
		check        func(t *testing.T, spec *corev1.PodSpec)
	}{
		{
			name:         "defaults: one replica rolled new-first, default requests, -v=2",
			profile:      testutil.MakeProfile("binpack").Obj(),
			wantReplicas: 1,
			wantStrategy: surgeOne,
			wantRes:      corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")}},
			wantArgs:     []string{"--config=/etc/kubernetes/scheduler/config.yaml", "--secure-port=10259", "--cert-dir=/tmp", "--v=2"},
		},
		{
			name:         "three replicas roll with maxUnavailable 0",
			profile:      testutil.MakeProfile("ha").Replicas(3).Obj(),
			wantReplicas: 3,
			wantStrategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{
				MaxUnavailable: ptr.To(intstr.FromInt32(0)), MaxSurge: ptr.To(intstr.FromInt32(1)),
			}},
			wantRes:  corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")}},
			wantArgs: []string{"--config=/etc/kubernetes/scheduler/config.yaml", "--secure-port=10259", "--cert-dir=/tmp", "--v=2"},
		},
		{
			name: "placement, resources and verbosity from the spec",
			profile: testutil.MakeProfile("placed").SchedulerSettings(schedulingv1alpha1.SchedulerSettings{
				Resources:         corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}},
				NodeSelector:      map[string]string{"node-role.kubernetes.io/control-plane": ""},
				Tolerations:       tolerations,
				Affinity:          aff,
				PriorityClassName: ptr.To("system-cluster-critical"),
				LogVerbosity:      ptr.To[int32](5),
			}).Obj(),
			wantReplicas: 1,
			wantStrategy: surgeOne,
			wantRes:      corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}},
			wantArgs:     []string{"--config=/etc/kubernetes/scheduler/config.yaml", "--secure-port=10259", "--cert-dir=/tmp", "--v=5"},
			check: func(t *testing.T, spec *corev1.PodSpec) {
				if diff := cmp.Diff(map[string]string{"node-role.kubernetes.io/control-plane": ""}, spec.NodeSelector); diff != "" {
					t.Errorf("nodeSelector (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(tolerations, spec.Tolerations); diff != "" {
					t.Errorf("tolerations (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(aff, spec.Affinity); diff != "" {
					t.Errorf("affinity (-want +got):\n%s", diff)
				}
				if spec.PriorityClassName != "system-cluster-critical" {
					t.Errorf("priorityClassName = %q", spec.PriorityClassName)
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(t, tc.profile)
			d := testutil.Typed[appsv1.Deployment](t, Deployment(dedicated(tc.profile), testSettings, cfg))
			if d.Name != tc.profile.Name+"-scheduler" || d.Namespace != "ops" {
				t.Errorf("deployment %s/%s", d.Namespace, d.Name)
			}
			if got := ptr.Deref(d.Spec.Replicas, 0); got != tc.wantReplicas {
				t.Errorf("replicas = %d, want %d", got, tc.wantReplicas)
			}
			if diff := cmp.Diff(tc.wantStrategy, d.Spec.Strategy); diff != "" {
				t.Errorf("strategy (-want +got):\n%s", diff)
			}
			if got := d.Spec.Template.Annotations[schedulingv1alpha1.AnnotationConfigHash]; got != cfg.Hash {
				t.Errorf("pod template hash annotation = %q, want %q", got, cfg.Hash)
			}
			if got := d.Spec.Template.Spec.Volumes[0].ConfigMap.Name; got != tc.profile.Name+"-config-"+cfg.Hash {
				t.Errorf("mounted ConfigMap = %q", got)
			}
			c := d.Spec.Template.Spec.Containers[0]
			if c.Image != testSettings.Image {
				t.Errorf("image = %q", c.Image)
			}
			if diff := cmp.Diff(tc.wantArgs, c.Args); diff != "" {
				t.Errorf("args (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantRes, c.Resources); diff != "" {
				t.Errorf("resources (-want +got):\n%s", diff)
			}
			for _, probe := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe} {
				if probe.HTTPGet.Scheme != corev1.URISchemeHTTPS || probe.HTTPGet.Port.StrVal != "https" {
					t.Errorf("probe %+v is not on the secure port", probe.HTTPGet)
				}
			}
			if c.LivenessProbe.HTTPGet.Path != "/livez" || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
				t.Errorf("probe paths %q, %q", c.LivenessProbe.HTTPGet.Path, c.ReadinessProbe.HTTPGet.Path)
			}
			if !selectorMatchesTemplate(d) {
				t.Errorf("selector %v does not select the template labels %v", d.Spec.Selector.MatchLabels, d.Spec.Template.Labels)
			}
			if tc.check != nil {
				tc.check(t, &d.Spec.Template.Spec)
			}
		})
	}
}

func selectorMatchesTemplate(d *appsv1.Deployment) bool {
	for k, v := range d.Spec.Selector.MatchLabels {
		if d.Spec.Template.Labels[k] != v {
			return false
		}
	}
	return true
}

// TestDeploymentIsRestricted checks the scheduler pod against the Pod Security Standard
// "restricted" with the same evaluator the PodSecurity admission plugin runs.
func TestDeploymentIsRestricted(t *testing.T) {
	evaluator, err := policy.NewEvaluator(policy.DefaultChecks(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []*schedulingv1alpha1.SchedulerProfile{testutil.MakeProfile("one").Obj(), testutil.MakeProfile("ha").Replicas(2).Obj()} {
		d := testutil.Typed[appsv1.Deployment](t, Deployment(dedicated(p), testSettings, testConfig(t, p)))
		results := evaluator.EvaluatePod(api.LevelVersion{Level: api.LevelRestricted, Version: api.LatestVersion()}, &d.Spec.Template.ObjectMeta, &d.Spec.Template.Spec)
		for _, r := range results {
			if !r.Allowed {
				t.Errorf("%s: the scheduler pod is not restricted: %s: %s", p.Name, r.ForbiddenReason, r.ForbiddenDetail)
			}
		}
		// The same pod with escalation allowed must fail: the evaluator does check.
		d.Spec.Template.Spec.Containers[0].SecurityContext.AllowPrivilegeEscalation = ptr.To(true)
		if allowed(evaluator.EvaluatePod(api.LevelVersion{Level: api.LevelRestricted, Version: api.LatestVersion()}, &d.Spec.Template.ObjectMeta, &d.Spec.Template.Spec)) {
			t.Errorf("%s: a pod allowing privilege escalation passed the restricted checks", p.Name)
		}
	}
}

func allowed(results []policy.CheckResult) bool {
	for _, r := range results {
		if !r.Allowed {
			return false
		}
	}
	return true
}

// TestBuildRBAC checks that the bindings name the bootstrap roles (never copies of their rules)
// and that the lease Role grants exactly the lease the configuration uses.
func TestBuildRBAC(t *testing.T) {
	p := testutil.MakeProfile("binpack").SchedulerName("team-a").Obj()
	cfg := testConfig(t, p)
	for _, role := range []string{KubeSchedulerClusterRole, VolumeSchedulerClusterRole} {
		crb := ClusterRoleBinding(dedicated(p), testSettings, role)
		if *crb.RoleRef.Kind != "ClusterRole" || *crb.RoleRef.Name != role {
			t.Errorf("ClusterRoleBinding %s binds %s %s", *crb.Name, *crb.RoleRef.Kind, *crb.RoleRef.Name)
		}
		if s := crb.Subjects[0]; *s.Name != "binpack-scheduler" || *s.Namespace != "ops" {
			t.Errorf("subject %s/%s", *s.Namespace, *s.Name)
		}
	}
	if got := *ClusterRoleBinding(dedicated(p), testSettings, KubeSchedulerClusterRole).Name; got != "scheduler-profile-operator:binpack:kube-scheduler" {
		t.Errorf("ClusterRoleBinding name %q", got)
	}
	rb := AuthReaderRoleBinding(dedicated(p), testSettings)
	if *rb.Namespace != "kube-system" || *rb.RoleRef.Name != "extension-apiserver-authentication-reader" {
		t.Errorf("auth reader binding %s/%s -> %s", *rb.Namespace, *rb.Name, *rb.RoleRef.Name)
	}
	role := LeaseRole(dedicated(p), testSettings)
	rule := role.Rules[0]
	if diff := cmp.Diff([]string{"schedops-team-a"}, rule.ResourceNames); diff != "" {
		t.Errorf("lease Role resourceNames (-want +got):\n%s", diff)
	}
	migrating := dedicated(p)
	migrating.GrantLegacy = true
	if diff := cmp.Diff([]string{"schedops-team-a", "team-a"}, LeaseRole(migrating, testSettings).Rules[0].ResourceNames); diff != "" {
		t.Errorf("lease Role resourceNames while the legacy lease may run (-want +got):\n%s", diff)
	}
	if !strings.Contains(string(cfg.YAML), "resourceName: schedops-team-a\n") {
		t.Errorf("the config does not use the lease the Role grants:\n%s", cfg.YAML)
	}
}

func TestBuildConfigMap(t *testing.T) {
	p := testutil.MakeProfile("binpack").Obj()
	cfg := testConfig(t, p)
	cm := testutil.Typed[corev1.ConfigMap](t, ConfigMap(dedicated(p), testSettings, cfg))
	if cm.Name != "binpack-config-"+cfg.Hash || !ptr.Deref(cm.Immutable, false) {
		t.Errorf("ConfigMap %s immutable=%v", cm.Name, cm.Immutable)
	}
	if cm.Data["config.yaml"] != string(cfg.YAML) {
		t.Errorf("config.yaml is not the rendered config")
	}
	if len(cm.Name) > 63 || len(testutil.MakeProfile(strings.Repeat("a", schedulingv1alpha1.MaxProfileNameLength)).Obj().Name+"-config-"+cfg.Hash) > 63 {
		t.Errorf("a profile name of %d characters gives a ConfigMap name longer than 63", schedulingv1alpha1.MaxProfileNameLength)
	}
}

func TestBuildPodDisruptionBudget(t *testing.T) {
	p := testutil.MakeProfile("ha").Replicas(2).Obj()
	pdb := testutil.Typed[policyv1.PodDisruptionBudget](t, PodDisruptionBudget(dedicated(p), testSettings))
	if pdb.Spec.MinAvailable.IntValue() != 1 {
		t.Errorf("minAvailable = %v", pdb.Spec.MinAvailable)
	}
	if diff := cmp.Diff(dedicated(p).SelectorLabels(), pdb.Spec.Selector.MatchLabels); diff != "" {
		t.Errorf("selector (-want +got):\n%s", diff)
	}
}

// TestFeatureGatesArg: the gates reach the scheduler as one sorted --feature-gates argument, so
// the same gates always give the same pod template.
func TestFeatureGatesArg(t *testing.T) {
	p := testutil.MakeProfile("g").SchedulerSettings(schedulingv1alpha1.SchedulerSettings{FeatureGates: map[string]bool{"GenericWorkload": true, "CompositePodGroup": false}}).Obj()
	args := schedulerArgs(dedicated(p))
	if got := args[len(args)-1]; got != "--feature-gates=CompositePodGroup=false,GenericWorkload=true" {
		t.Errorf("last arg %q", got)
	}
	for _, a := range schedulerArgs(dedicated(testutil.MakeProfile("none").Obj())) {
		if strings.HasPrefix(a, "--feature-gates") {
			t.Errorf("a profile without gates got %q", a)
		}
	}
}

func TestBuildService(t *testing.T) {
	https := []corev1.ServicePort{{Name: "https", Port: 10259, TargetPort: intstr.FromString("https"), Protocol: corev1.ProtocolTCP}}
	tests := []struct {
		name       string
		proc       *plan.Process
		wantName   string
		wantLabels map[string]string
		wantPorts  []corev1.ServicePort
	}{
		{
			name:     "a profile's own scheduler",
			proc:     dedicated(testutil.MakeProfile("binpack").Obj()),
			wantName: "metrics-binpack-scheduler",
			wantLabels: map[string]string{
				"app.kubernetes.io/name": "kube-scheduler", "app.kubernetes.io/instance": "binpack",
				"app.kubernetes.io/managed-by": "scheduler-profile-operator", "app.kubernetes.io/component": "scheduler",
				"scheduling.schedops.io/profile": "binpack",
			},
			wantPorts: https,
		},
		{
			name:     "a shared Scheduler, named without the dot its Deployment has",
			proc:     plan.SharedProcess(testutil.MakeScheduler("batch").Replicas(2).Obj()),
			wantName: "metrics-batch--scheduler",
			wantLabels: map[string]string{
				"app.kubernetes.io/name": "kube-scheduler", "app.kubernetes.io/instance": "batch",
				"app.kubernetes.io/managed-by": "scheduler-profile-operator", "app.kubernetes.io/component": "scheduler",
				"scheduling.schedops.io/scheduler": "batch",
			},
			wantPorts: https,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			svc := testutil.Typed[corev1.Service](t, Service(tc.proc, testSettings))
			if svc.Name != tc.wantName || svc.Namespace != testSettings.Namespace {
				t.Errorf("Service %s/%s, want %s/%s", svc.Namespace, svc.Name, testSettings.Namespace, tc.wantName)
			}
			if errs := validation.IsDNS1123Label(svc.Name); len(errs) > 0 {
				t.Errorf("Service name %q is not a DNS-1123 label: %v", svc.Name, errs)
			}
			if diff := cmp.Diff(tc.wantLabels, svc.Labels); diff != "" {
				t.Errorf("labels (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantPorts, svc.Spec.Ports); diff != "" {
				t.Errorf("ports (-want +got):\n%s", diff)
			}
			if svc.Spec.ClusterIP != corev1.ClusterIPNone {
				t.Errorf("clusterIP %q, want a headless Service", svc.Spec.ClusterIP)
			}
			// The Service selects exactly the scheduler pods, and its target port is a port
			// their container declares.
			d := testutil.Typed[appsv1.Deployment](t, Deployment(tc.proc, testSettings, testConfig(t, testutil.MakeProfile("p").Obj())))
			if diff := cmp.Diff(d.Spec.Selector.MatchLabels, svc.Spec.Selector); diff != "" {
				t.Errorf("selector (-Deployment's +Service's):\n%s", diff)
			}
			for k, v := range svc.Spec.Selector {
				if d.Spec.Template.Labels[k] != v {
					t.Errorf("the selector %s=%s does not select the scheduler pods %v", k, v, d.Spec.Template.Labels)
				}
			}
			var declared []string
			for _, p := range d.Spec.Template.Spec.Containers[0].Ports {
				if p.Name == svc.Spec.Ports[0].TargetPort.StrVal && p.ContainerPort == svc.Spec.Ports[0].Port {
					declared = append(declared, p.Name)
				}
			}
			if len(declared) != 1 {
				t.Errorf("target port %v is not the container's port %+v", svc.Spec.Ports[0].TargetPort, d.Spec.Template.Spec.Containers[0].Ports)
			}
		})
	}
}
