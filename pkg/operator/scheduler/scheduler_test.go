package scheduler

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/kubernetes/cmd/kube-scheduler/app"
	schedulerappconfig "k8s.io/kubernetes/cmd/kube-scheduler/app/config"
	"k8s.io/kubernetes/cmd/kube-scheduler/app/options"
	"k8s.io/kubernetes/pkg/scheduler"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"

	"github.com/schedops/scheduler-profile-operator/pkg/operator"
	"github.com/schedops/scheduler-profile-operator/scheduler/apis/config"
)

// kubeconfig points at an apiserver that is never contacted: Setup only builds clients.
const kubeconfig = `apiVersion: v1
kind: Config
clusters:
- name: unused
  cluster: {server: "https://127.0.0.1:1"}
contexts:
- name: unused
  context: {cluster: unused}
current-context: unused
`

// enableBoth enables both out-of-tree plugins in the profile pool-a.
const enableBoth = `
  plugins:
    multiPoint:
      enabled:
      - name: NodePool
      - name: NodeLabelPreference
        weight: 2
`

// poolAConfig configures NodePool for the nodes labeled pool=a.
const poolAConfig = `
  - name: NodePool
    args:
      nodeSelector: {matchLabels: {pool: a}}
`

// setup runs kube-scheduler's own start-up (app.Setup: strict decoding, defaulting,
// validation, building every plugin of the profile) with our registry, in process, for a
// configuration with the one profile pool-a. It is what
// `kube-scheduler --config X --secure-port 0 --write-config-to Y` runs before writing Y.
func setup(ctx context.Context, t *testing.T, plugins, pluginConfig string) (*schedulerappconfig.CompletedConfig, *scheduler.Scheduler, error) {
	t.Helper()
	dir := t.TempDir()
	kubeconfigPath := filepath.Join(dir, "kubeconfig")
	writeFile(t, kubeconfigPath, kubeconfig)
	configPath := filepath.Join(dir, "config.yaml")
	writeFile(t, configPath, `apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: `+kubeconfigPath+`
leaderElection:
  leaderElect: false
profiles:
- schedulerName: pool-a`+plugins+`  pluginConfig:
`+pluginConfig)

	opts := options.NewOptions()
	opts.ConfigFile = configPath
	opts.SecureServing.BindPort = 0
	// The option of Run with the stock plugins, as the operator's scheduler binary runs it.
	option, err := outOfTree(operator.StockPlugins())
	if err != nil {
		t.Fatal(err)
	}
	return app.Setup(ctx, opts, option)
}

func TestSetup(t *testing.T) {
	tests := []struct {
		name         string
		pluginConfig string
		wantArgs     map[string]runtime.Object
		wantErr      string
	}{
		{
			name: "both plugins configured",
			pluginConfig: poolAConfig + `
  - name: NodeLabelPreference
    args:
      preferences:
      - {key: example.com/ssd}
      - {key: zone, values: [a], weight: 5}
`,
			wantArgs: map[string]runtime.Object{
				"NodePool": &config.NodePoolArgs{NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"pool": "a"}}},
				"NodeLabelPreference": &config.NodeLabelPreferenceArgs{Preferences: []config.LabelPreference{
					{Key: "example.com/ssd", Weight: 1},
					{Key: "zone", Values: []string{"a"}, Weight: 5},
				}},
			},
		},
		{
			name: "unknown field",
			pluginConfig: `
  - name: NodePool
    args:
      nodeSelector: {matchLabels: {pool: a}}
      bogus: 1
`,
			wantErr: `unknown field "bogus"`,
		},
		{
			name:         "NodePool without args",
			pluginConfig: "    []\n",
			wantErr:      `initializing plugin "NodePool": nodeSelector: Required value`,
		},
		{
			name: "invalid weight",
			pluginConfig: poolAConfig + `
  - name: NodeLabelPreference
    args:
      preferences: [{key: ssd, weight: 0}]
`,
			wantErr: `initializing plugin "NodeLabelPreference": preferences[0].weight: Invalid value: 0: must be in the range 1-100`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			ctx, cancel := context.WithCancel(ctx)
			defer cancel()

			cc, sched, err := setup(ctx, t, enableBoth, tc.pluginConfig)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error:\n got: %v\nwant it to contain: %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Setup: %v", err)
			}

			gotArgs := map[string]runtime.Object{}
			for _, pc := range cc.ComponentConfig.Profiles[0].PluginConfig {
				if _, ours := tc.wantArgs[pc.Name]; ours {
					gotArgs[pc.Name] = pc.Args
				}
			}
			if diff := cmp.Diff(tc.wantArgs, gotArgs); diff != "" {
				t.Errorf("args (-want +got):\n%s", diff)
			}

			plugins := sched.Profiles["pool-a"].ListPlugins()
			for _, want := range []struct {
				extensionPoint string
				set            schedconfig.PluginSet
				plugin         schedconfig.Plugin
			}{
				{"PreFilter", plugins.PreFilter, schedconfig.Plugin{Name: "NodePool"}},
				{"Filter", plugins.Filter, schedconfig.Plugin{Name: "NodePool"}},
				{"PreScore", plugins.PreScore, schedconfig.Plugin{Name: "NodeLabelPreference"}},
				{"Score", plugins.Score, schedconfig.Plugin{Name: "NodeLabelPreference", Weight: 2}},
			} {
				found := false
				for _, p := range want.set.Enabled {
					found = found || p == want.plugin
				}
				if !found {
					t.Errorf("%s plugins %v lack %v", want.extensionPoint, want.set.Enabled, want.plugin)
				}
			}
		})
	}
}

// TestPodSignatures checks that the out-of-tree plugins sign pods, without which the framework
// turns opportunistic batching off for the whole profile. In-tree PodTopologySpread refuses to
// sign every pod in v1.37, so it is disabled here.
func TestPodSignatures(t *testing.T) {
	_, ctx := ktesting.NewTestContext(t)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	_, sched, err := setup(ctx, t, enableBoth+`      disabled:
      - name: PodTopologySpread
`, poolAConfig)
	if err != nil {
		t.Fatalf("Setup: %v", err)
	}
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"},
		Spec:       v1.PodSpec{SchedulerName: "pool-a", Containers: []v1.Container{{Name: "c", Image: "i"}}},
	}
	if sig := sched.Profiles["pool-a"].SignPod(ctx, pod); sig == nil {
		t.Error("the profile does not sign pods")
	}
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}
