package avoidnodelabels

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2/ktesting"
	fwk "k8s.io/kube-scheduler/framework"
	"k8s.io/kubernetes/pkg/scheduler/framework"

	"github.com/schedops/scheduler-profile-operator/examples/avoidnodelabels/apis/config"
)

func TestFilter(t *testing.T) {
	tests := []struct {
		name       string
		labels     map[string]string
		wantReject bool
	}{
		{name: "no labels", labels: nil},
		{name: "other labels", labels: map[string]string{"zone": "a"}},
		{name: "an avoided label", labels: map[string]string{"zone": "a", "gpu": "true"}, wantReject: true},
		{name: "an avoided label with an empty value", labels: map[string]string{"reserved": ""}, wantReject: true},
	}
	_, ctx := ktesting.NewTestContext(t)
	pl, err := New(ctx, &config.AvoidNodeLabelsArgs{Labels: []string{"gpu", "reserved"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			node := framework.NewNodeInfo()
			node.SetNode(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: tc.labels}})
			status := pl.(fwk.FilterPlugin).Filter(ctx, nil, &v1.Pod{}, node)
			if got := status.Code() == fwk.UnschedulableAndUnresolvable; got != tc.wantReject {
				t.Errorf("Filter returned %v, want the node refused: %t", status, tc.wantReject)
			}
		})
	}
}

func TestNewValidatesArgs(t *testing.T) {
	tests := []struct {
		name    string
		args    *config.AvoidNodeLabelsArgs
		wantErr string
	}{
		{name: "valid", args: &config.AvoidNodeLabelsArgs{Labels: []string{"example.com/a", "b"}}},
		{name: "none", args: &config.AvoidNodeLabelsArgs{}, wantErr: "labels: Required value: at least one label key"},
		{
			name:    "not a label key",
			args:    &config.AvoidNodeLabelsArgs{Labels: []string{"ok", "not a key"}},
			wantErr: `labels[1]: Invalid value: "not a key": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, ctx := ktesting.NewTestContext(t)
			_, err := New(ctx, tc.args, nil)
			if got := errString(err); got != tc.wantErr {
				t.Errorf("error:\n got: %s\nwant: %s", got, tc.wantErr)
			}
		})
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
