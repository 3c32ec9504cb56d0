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

// TestQueueingHint: a node added or relabeled brings back a pod the plugin rejected only when the
// node carries none of the avoided labels.
func TestQueueingHint(t *testing.T) {
	logger, ctx := ktesting.NewTestContext(t)
	pl, err := New(ctx, &config.AvoidNodeLabelsArgs{Labels: []string{"gpu"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	events, err := pl.(fwk.EnqueueExtensions).EventsToRegister(ctx)
	if err != nil || len(events) != 1 || events[0].QueueingHintFn == nil {
		t.Fatalf("EventsToRegister: %v, %v; want one node event with a QueueingHint", events, err)
	}
	for _, tc := range []struct {
		labels map[string]string
		want   fwk.QueueingHint
	}{
		{labels: map[string]string{"zone": "a"}, want: fwk.Queue},
		{labels: map[string]string{"gpu": "true"}, want: fwk.QueueSkip},
	} {
		node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Labels: tc.labels}}
		if got, err := events[0].QueueingHintFn(logger, &v1.Pod{}, nil, node); err != nil || got != tc.want {
			t.Errorf("hint for a node with %v: %v, %v; want %v", tc.labels, got, err, tc.want)
		}
	}
	if _, ok := pl.(fwk.SignPlugin); !ok {
		t.Error("the plugin does not sign pods, which switches off opportunistic batching")
	}
}
