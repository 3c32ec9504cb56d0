package scheme

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	schedconfig "k8s.io/kubernetes/pkg/scheduler/apis/config"
	kubeschedulerscheme "k8s.io/kubernetes/pkg/scheduler/apis/config/scheme"
	schedconfigv1 "k8s.io/kubernetes/pkg/scheduler/apis/config/v1"

	"github.com/schedops/scheduler-profile-operator/scheduler/apis/config"
)

// Codecs are kube-scheduler's codecs, with our args added to its schemes as scheduler/registry
// adds them.
var Codecs = kubeschedulerscheme.Codecs

func init() {
	for _, s := range []*runtime.Scheme{kubeschedulerscheme.Scheme, schedconfigv1.GetPluginArgConversionScheme()} {
		if err := AddToScheme(s); err != nil {
			panic(err)
		}
	}
}

// profileYAML is a KubeSchedulerConfiguration whose only profile enables both out-of-tree
// plugins and configures them with pluginConfig.
func profileYAML(pluginConfig string) []byte {
	return []byte(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: pool-a
  plugins:
    multiPoint:
      enabled:
      - name: NodePool
      - name: NodeLabelPreference
        weight: 2
  pluginConfig:
` + pluginConfig)
}

func TestDecodeKubeSchedulerConfiguration(t *testing.T) {
	tests := []struct {
		name         string
		pluginConfig string
		want         map[string]runtime.Object
		wantErr      string
	}{
		{
			name: "args are decoded, defaulted and converted to the internal types",
			pluginConfig: `
  - name: NodePool
    args:
      nodeSelector: {matchLabels: {pool: a}}
  - name: NodeLabelPreference
    args:
      preferences:
      - {key: example.com/ssd}
      - {key: zone, values: [a, b], weight: 7}
`,
			want: map[string]runtime.Object{
				"NodePool": &config.NodePoolArgs{NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"pool": "a"}}},
				"NodeLabelPreference": &config.NodeLabelPreferenceArgs{Preferences: []config.LabelPreference{
					{Key: "example.com/ssd", Weight: 1},
					{Key: "zone", Values: []string{"a", "b"}, Weight: 7},
				}},
			},
		},
		{
			name:         "enabled plugins without pluginConfig get default args, like in-tree plugins",
			pluginConfig: "    []\n",
			want: map[string]runtime.Object{
				"NodePool":            &config.NodePoolArgs{},
				"NodeLabelPreference": &config.NodeLabelPreferenceArgs{},
			},
		},
		{
			name: "unknown field is a strict decoding error",
			pluginConfig: `
  - name: NodePool
    args:
      nodeSelector: {matchLabels: {pool: a}}
      bogus: 1
`,
			wantErr: `strict decoding error: decoding .profiles[0].pluginConfig[0]: strict decoding error: decoding args for plugin NodePool: strict decoding error: unknown field "bogus"`,
		},
		{
			name: "args of another plugin's kind",
			pluginConfig: `
  - name: NodePool
    args:
      kind: NodeLabelPreferenceArgs
      apiVersion: kubescheduler.config.k8s.io/v1
`,
			wantErr: `decoding .profiles[0].pluginConfig[0]: args for plugin NodePool were not of type NodePoolArgs.kubescheduler.config.k8s.io, got NodeLabelPreferenceArgs.kubescheduler.config.k8s.io`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			obj, _, err := Codecs.UniversalDecoder().Decode(profileYAML(tc.pluginConfig), nil, nil)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error:\n got: %v\nwant: %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("decoding: %v", err)
			}
			cfg, ok := obj.(*schedconfig.KubeSchedulerConfiguration)
			if !ok {
				t.Fatalf("decoded a %T, want a KubeSchedulerConfiguration", obj)
			}
			got := map[string]runtime.Object{}
			for _, pc := range cfg.Profiles[0].PluginConfig {
				if _, ours := tc.want[pc.Name]; ours {
					got[pc.Name] = pc.Args
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("args (-want +got):\n%s", diff)
			}
		})
	}
}

// TestEncodeKubeSchedulerConfiguration checks the way back, which kube-scheduler takes for
// --write-config-to and its config log: internal args convert to v1 with their kind.
func TestEncodeKubeSchedulerConfiguration(t *testing.T) {
	obj, _, err := Codecs.UniversalDecoder().Decode(profileYAML(`
  - name: NodeLabelPreference
    args:
      preferences: [{key: example.com/ssd}]
`), nil, nil)
	if err != nil {
		t.Fatalf("decoding: %v", err)
	}
	info, ok := runtime.SerializerInfoForMediaType(Codecs.SupportedMediaTypes(), runtime.ContentTypeYAML)
	if !ok {
		t.Fatal("no YAML serializer")
	}
	out, err := runtime.Encode(Codecs.EncoderForVersion(info.Serializer, schedconfigv1.SchemeGroupVersion), obj)
	if err != nil {
		t.Fatalf("encoding: %v", err)
	}
	want := `  - args:
      apiVersion: kubescheduler.config.k8s.io/v1
      kind: NodeLabelPreferenceArgs
      preferences:
      - key: example.com/ssd
        weight: 1
    name: NodeLabelPreference
`
	if !strings.Contains(string(out), want) {
		t.Errorf("encoded configuration lacks\n%s\ngot:\n%s", want, out)
	}
}
