package manager

import (
	"bytes"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/yaml"

	"github.com/schedops/scheduler-profile-operator/controllers"
	"github.com/schedops/scheduler-profile-operator/controllers/plan"
)

func TestManagerOptions(t *testing.T) {
	env := map[string]string{"OPERATOR_NAMESPACE": "ops", "RELATED_IMAGE_SCHEDULER": "example.com/spo:v1"}
	rotating := &controllers.WebhookOptions{
		Port: 9443, CertRotation: true, SecretName: "scheduler-profile-operator-webhook-server-cert",
		ConfigName:  "scheduler-profile-operator-validating-webhook-configuration",
		ServiceName: "scheduler-profile-operator-webhook-service",
	}
	provided := &controllers.WebhookOptions{
		Port: 8443, CertDir: "/certs", SecretName: "scheduler-profile-operator-webhook-server-cert",
		ConfigName:  "scheduler-profile-operator-validating-webhook-configuration",
		ServiceName: "scheduler-profile-operator-webhook-service",
	}
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		want    controllers.ManagerOptions
		wantErr string
	}{
		{
			name: "defaults",
			env:  env,
			want: controllers.ManagerOptions{Namespace: "ops", SchedulerImage: "example.com/spo:v1", MetricsBindAddress: ":8443", MetricsSecure: true, HealthProbeBindAddress: ":8081", Webhook: rotating},
		},
		{
			name: "flags",
			args: []string{"--leader-elect", "--metrics-bind-address=:8080", "--metrics-secure=false", "--metrics-cert-dir=/certs", "--health-probe-bind-address=:9090", "--zap-devel"},
			env:  env,
			want: controllers.ManagerOptions{
				Namespace: "ops", SchedulerImage: "example.com/spo:v1", MetricsBindAddress: ":8080", MetricsCertDir: "/certs",
				HealthProbeBindAddress: ":9090", LeaderElection: true, Webhook: rotating,
			},
		},
		{
			name: "webhook off",
			args: []string{"--enable-webhook=false"},
			env:  env,
			want: controllers.ManagerOptions{Namespace: "ops", SchedulerImage: "example.com/spo:v1", MetricsBindAddress: ":8443", MetricsSecure: true, HealthProbeBindAddress: ":8081"},
		},
		{
			name: "certificate provided (OLM)",
			args: []string{"--disable-cert-rotation", "--webhook-port=8443", "--webhook-cert-dir=/certs"},
			env:  env,
			want: controllers.ManagerOptions{Namespace: "ops", SchedulerImage: "example.com/spo:v1", MetricsBindAddress: ":8443", MetricsSecure: true, HealthProbeBindAddress: ":8081", Webhook: provided},
		},
		{
			name: "rollout thresholds",
			args: []string{"--rollout-deadline=10m", "--rollout-unschedulable-timeout=2m", "--rollout-start-error-timeout=90s", "--rollout-crash-loop-restarts=5"},
			env:  env,
			want: controllers.ManagerOptions{
				Namespace: "ops", SchedulerImage: "example.com/spo:v1", MetricsBindAddress: ":8443", MetricsSecure: true, HealthProbeBindAddress: ":8081", Webhook: rotating,
				Rollout: controllers.RolloutThresholds{Deadline: 10 * time.Minute, Unschedulable: 2 * time.Minute, StartError: 90 * time.Second, CrashLoopRestarts: 5},
			},
		},
		{
			name: "upgrade pacing",
			args: []string{"--upgrade-max-in-flight=3"},
			env:  env,
			want: controllers.ManagerOptions{
				Namespace: "ops", SchedulerImage: "example.com/spo:v1", MetricsBindAddress: ":8443", MetricsSecure: true, HealthProbeBindAddress: ":8081", Webhook: rotating,
				UpgradeMaxInFlight: 3,
			},
		},
		{
			name: "allowed priority classes",
			args: []string{"--allowed-priority-classes=system-cluster-critical, schedulers", "--upgrade-max-in-flight=3"},
			env:  env,
			want: controllers.ManagerOptions{
				Namespace: "ops", SchedulerImage: "example.com/spo:v1", MetricsBindAddress: ":8443", MetricsSecure: true, HealthProbeBindAddress: ":8081", Webhook: rotating,
				UpgradeMaxInFlight: 3, AllowedPriorityClasses: []string{"system-cluster-critical", "schedulers"},
			},
		},
		{
			name: "allowed scheduler resources",
			args: []string{"--allowed-scheduler-resources=nvidia.com/gpu, ephemeral-storage"},
			env:  env,
			want: controllers.ManagerOptions{
				Namespace: "ops", SchedulerImage: "example.com/spo:v1", MetricsBindAddress: ":8443", MetricsSecure: true, HealthProbeBindAddress: ":8081", Webhook: rotating,
				SchedulerPodCaps: plan.SchedulerPodCaps{AllowedResources: []corev1.ResourceName{"nvidia.com/gpu", "ephemeral-storage"}},
			},
		},
		{
			name:    "an allowed scheduler resource that is no name",
			args:    []string{"--allowed-scheduler-resources=gpu!"},
			env:     env,
			wantErr: `--allowed-scheduler-resources: "gpu!" is not a resource name`,
		},
		{
			name: "preview bounds",
			args: []string{"--preview-max-pods=500", "--preview-timeout=30s", "--preview-cpu-limit=10s", "--preview-memory-limit=1Gi", "--preview-max-objects=5000", "--preview-refresh-interval=5s"},
			env:  env,
			want: controllers.ManagerOptions{
				Namespace: "ops", SchedulerImage: "example.com/spo:v1", MetricsBindAddress: ":8443", MetricsSecure: true, HealthProbeBindAddress: ":8081", Webhook: rotating,
				Preview: controllers.PreviewOptions{MaxPods: 500, Timeout: 30 * time.Second, CPULimit: 10 * time.Second, MemoryLimit: 1 << 30, MaxObjects: 5000, RefreshInterval: 5 * time.Second},
			},
		},
		{
			name:    "preview without memory",
			args:    []string{"--preview-memory-limit=0"},
			env:     env,
			wantErr: "--preview-max-pods, --preview-timeout, --preview-cpu-limit, --preview-memory-limit and --preview-max-objects must be positive, not 2000, 5m0s, 1m0s, 0 and 10000",
		},
		{
			name:    "preview memory not a quantity",
			args:    []string{"--preview-memory-limit=lots"},
			env:     env,
			wantErr: `invalid value "lots" for flag -preview-memory-limit`,
		},
		{
			name:    "preview without objects",
			args:    []string{"--preview-max-objects=0"},
			env:     env,
			wantErr: "--preview-max-pods, --preview-timeout, --preview-cpu-limit, --preview-memory-limit and --preview-max-objects must be positive, not 2000, 5m0s, 1m0s, 512Mi and 0",
		},
		{
			name:    "preview without pods",
			args:    []string{"--preview-max-pods=0"},
			env:     env,
			wantErr: "--preview-max-pods, --preview-timeout, --preview-cpu-limit, --preview-memory-limit and --preview-max-objects must be positive, not 0, 5m0s, 1m0s, 512Mi and 10000",
		},
		{
			name:    "preview without CPU time",
			args:    []string{"--preview-cpu-limit=0s"},
			env:     env,
			wantErr: "--preview-max-pods, --preview-timeout, --preview-cpu-limit, --preview-memory-limit and --preview-max-objects must be positive, not 2000, 5m0s, 0s, 512Mi and 10000",
		},
		{
			name:    "preview refresh interval not positive",
			args:    []string{"--preview-refresh-interval=0s"},
			env:     env,
			wantErr: "--preview-refresh-interval must be positive, not 0s",
		},
		{
			name:    "preview CPU time not a duration",
			args:    []string{"--preview-cpu-limit=1"},
			env:     env,
			wantErr: `invalid value "1" for flag -preview-cpu-limit`,
		},
		{
			name: "concurrent reconciles",
			args: []string{"--max-concurrent-reconciles=4"},
			env:  env,
			want: controllers.ManagerOptions{
				Namespace: "ops", SchedulerImage: "example.com/spo:v1", MetricsBindAddress: ":8443", MetricsSecure: true, HealthProbeBindAddress: ":8081", Webhook: rotating,
				MaxConcurrentReconciles: 4,
			},
		},
		{
			name: "caps on scheduler pods",
			args: []string{"--max-scheduler-cpu=8", "--max-scheduler-memory=16Gi", "--allow-tolerate-all-taints"},
			env:  env,
			want: controllers.ManagerOptions{
				Namespace: "ops", SchedulerImage: "example.com/spo:v1", MetricsBindAddress: ":8443", MetricsSecure: true, HealthProbeBindAddress: ":8081", Webhook: rotating,
				SchedulerPodCaps: plan.SchedulerPodCaps{MaxCPU: resource.MustParse("8"), MaxMemory: resource.MustParse("16Gi"), AllowTolerateAllTaints: true},
			},
		},
		{name: "CPU cap below the default request", args: []string{"--max-scheduler-cpu=10m"}, env: env, wantErr: "--max-scheduler-cpu must be at least 100m"},
		{name: "memory cap not a quantity", args: []string{"--max-scheduler-memory=lots"}, env: env, wantErr: `invalid value "lots" for flag -max-scheduler-memory`},
		{name: "no concurrent reconciles", args: []string{"--max-concurrent-reconciles=0"}, env: env, wantErr: "--max-concurrent-reconciles must be a positive number"},
		{name: "no upgrade pacing", args: []string{"--upgrade-max-in-flight=0"}, env: env, wantErr: "--upgrade-max-in-flight must be a positive number"},
		{name: "no crash loop restarts", args: []string{"--rollout-crash-loop-restarts=0"}, env: env, wantErr: "--rollout-crash-loop-restarts must be a positive number"},
		{name: "no namespace", env: map[string]string{"RELATED_IMAGE_SCHEDULER": "x"}, wantErr: "OPERATOR_NAMESPACE must name"},
		{name: "no scheduler image", env: map[string]string{"OPERATOR_NAMESPACE": "ops"}, wantErr: "RELATED_IMAGE_SCHEDULER must name"},
		{name: "unknown flag", args: []string{"--namespace=ops"}, env: env, wantErr: "flag provided but not defined: -namespace"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, _, err := managerOptions(tc.args, func(key string) string { return tc.env[key] })
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tc.want.Rollout == (controllers.RolloutThresholds{}) {
				tc.want.Rollout = controllers.RolloutThresholds{
					Deadline: controllers.DefaultRolloutDeadline, Unschedulable: controllers.DefaultUnschedulableTimeout,
					StartError: controllers.DefaultStartErrorTimeout, CrashLoopRestarts: controllers.DefaultCrashLoopRestarts,
				}
			}
			if tc.want.UpgradeMaxInFlight == 0 {
				tc.want.UpgradeMaxInFlight = controllers.DefaultUpgradeMaxInFlight
			}
			if tc.want.Preview == (controllers.PreviewOptions{}) {
				tc.want.Preview = controllers.PreviewOptions{MaxPods: controllers.DefaultPreviewMaxPods, Timeout: controllers.DefaultPreviewTimeout, CPULimit: controllers.DefaultPreviewCPULimit,
					MemoryLimit: controllers.DefaultPreviewMemoryLimit, MaxObjects: controllers.DefaultPreviewMaxObjects, RefreshInterval: controllers.DefaultPreviewRefreshInterval}
			}
			if tc.want.MaxConcurrentReconciles == 0 {
				tc.want.MaxConcurrentReconciles = controllers.DefaultMaxConcurrentReconciles
			}
			if tc.want.SchedulerPodCaps.MaxCPU.IsZero() {
				tc.want.SchedulerPodCaps.MaxCPU, tc.want.SchedulerPodCaps.MaxMemory = plan.DefaultMaxSchedulerCPU, plan.DefaultMaxSchedulerMemory
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("options (-want +got):\n%s", diff)
			}
		})
	}
}

// TestManagerDeploymentArgs parses the args of the operator's Deployment in config/manager with
// the operator's own flags, and checks that it sets every variable the operator needs: a flag
// the binary does not know would crash-loop the pod.
func TestManagerDeploymentArgs(t *testing.T) {
	data, err := os.ReadFile("../../../config/manager/manager.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var d *appsv1.Deployment
	for doc := range bytes.SplitSeq(data, []byte("\n---\n")) {
		var obj appsv1.Deployment
		if err := yaml.Unmarshal(doc, &obj); err != nil {
			t.Fatalf("Decoding config/manager/manager.yaml: %v", err)
		}
		if obj.Kind == "Deployment" {
			d = &obj
		}
	}
	if d == nil || len(d.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("config/manager/manager.yaml has no Deployment with one container")
	}
	c := d.Spec.Template.Spec.Containers[0]
	env := map[string]string{}
	for _, e := range c.Env {
		env[e.Name] = e.Value
		if e.ValueFrom != nil {
			// A value from the downward API is only known in the pod; any value stands for it.
			env[e.Name] = "set-in-the-pod"
		}
	}
	got, _, err := managerOptions(c.Args, func(key string) string { return env[key] })
	if err != nil {
		t.Fatalf("The operator refuses the Deployment's args %q and env: %v", c.Args, err)
	}
	if !got.LeaderElection {
		t.Errorf("The Deployment runs the operator without leader election (args %q)", c.Args)
	}
	// The rotated certificate is read where the Deployment mounts its Secret.
	if got.Webhook == nil || !got.Webhook.CertRotation {
		t.Fatalf("The Deployment runs the operator without its webhook or without certificate rotation (args %q)", c.Args)
	}
	const certDir = "/tmp/k8s-webhook-server/serving-certs"
	if got.Webhook.CertDir != "" || !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == certDir }) {
		t.Errorf("The operator reads its certificate from %q (default: %s); the Deployment mounts %v", got.Webhook.CertDir, certDir, c.VolumeMounts)
	}
	// The metrics Service (config/default/metrics_service.yaml) targets the port named https.
	_, port, _ := strings.Cut(got.MetricsBindAddress, ":")
	if !got.MetricsSecure || !slices.ContainsFunc(c.Ports, func(p corev1.ContainerPort) bool {
		return p.Name == "https" && strconv.Itoa(int(p.ContainerPort)) == port
	}) {
		t.Errorf("The Deployment serves metrics on %q (secure: %t), want HTTPS on its container port named https %+v", got.MetricsBindAddress, got.MetricsSecure, c.Ports)
	}
}
