package validation

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/schedops/scheduler-profile-operator/scheduler/apis/config"
)

func TestValidateNodePoolArgs(t *testing.T) {
	tests := []struct {
		name    string
		args    config.NodePoolArgs
		wantErr string
	}{
		{
			name: "matchLabels",
			args: config.NodePoolArgs{NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"pool": "a"}}},
		},
		{
			name: "matchExpressions",
			args: config.NodePoolArgs{NodeSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "pool", Operator: metav1.LabelSelectorOpIn, Values: []string{"a", "b"}},
			}}},
		},
		{
			name: "empty selector selects every node",
			args: config.NodePoolArgs{NodeSelector: &metav1.LabelSelector{}},
		},
		{
			name:    "missing selector",
			args:    config.NodePoolArgs{},
			wantErr: `nodeSelector: Required value: the scheduler's node pool must be selected`,
		},
		{
			name:    "invalid label value",
			args:    config.NodePoolArgs{NodeSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"pool": "a b"}}},
			wantErr: `nodeSelector.matchLabels: Invalid value: "a b": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`,
		},
		{
			name: "In without values",
			args: config.NodePoolArgs{NodeSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
				{Key: "pool", Operator: metav1.LabelSelectorOpIn},
			}}},
			wantErr: `nodeSelector.matchExpressions[0].values: Required value: must be specified when ` + "`operator`" + ` is 'In' or 'NotIn'`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assertErr(t, ValidateNodePoolArgs(nil, &tc.args), tc.wantErr)
		})
	}
}

func TestValidateNodeLabelPreferenceArgs(t *testing.T) {
	tests := []struct {
		name    string
		args    config.NodeLabelPreferenceArgs
		wantErr string
	}{
		{
			name: "no preferences",
			args: config.NodeLabelPreferenceArgs{},
		},
		{
			name: "key with values and key only",
			args: config.NodeLabelPreferenceArgs{Preferences: []config.LabelPreference{
				{Key: "node.kubernetes.io/instance-type", Values: []string{"m5.large"}, Weight: 100},
				{Key: "example.com/ssd", Weight: 1},
			}},
		},
		{
			name:    "missing key",
			args:    config.NodeLabelPreferenceArgs{Preferences: []config.LabelPreference{{Weight: 1}}},
			wantErr: `preferences[0].key: Required value`,
		},
		{
			name:    "invalid key",
			args:    config.NodeLabelPreferenceArgs{Preferences: []config.LabelPreference{{Key: "-ssd", Weight: 1}}},
			wantErr: `preferences[0].key: Invalid value: "-ssd": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
		},
		{
			name: "invalid value",
			args: config.NodeLabelPreferenceArgs{Preferences: []config.LabelPreference{
				{Key: "ssd", Weight: 1},
				{Key: "zone", Values: []string{"a", "b c"}, Weight: 1},
			}},
			wantErr: `preferences[1].values[1]: Invalid value: "b c": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`,
		},
		{
			name:    "zero weight",
			args:    config.NodeLabelPreferenceArgs{Preferences: []config.LabelPreference{{Key: "ssd"}}},
			wantErr: `preferences[0].weight: Invalid value: 0: must be in the range 1-100`,
		},
		{
			name: "every error is reported",
			args: config.NodeLabelPreferenceArgs{Preferences: []config.LabelPreference{
				{Key: "", Weight: 101},
				{Key: "ssd", Weight: -1},
			}},
			wantErr: `[preferences[0].key: Required value, preferences[0].weight: Invalid value: 101: must be in the range 1-100, preferences[1].weight: Invalid value: -1: must be in the range 1-100]`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assertErr(t, ValidateNodeLabelPreferenceArgs(nil, &tc.args), tc.wantErr)
		})
	}
}

func assertErr(t *testing.T, err error, want string) {
	t.Helper()
	switch {
	case want == "" && err != nil:
		t.Errorf("unexpected error: %v", err)
	case want != "" && err == nil:
		t.Errorf("no error, want %q", want)
	case want != "" && err.Error() != want:
		t.Errorf("error:\n got: %s\nwant: %s", err, want)
	}
}
