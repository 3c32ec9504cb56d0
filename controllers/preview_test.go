package controllers

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	schedulingv1alpha1 "github.com/schedops/scheduler-profile-operator/api/v1alpha1"
	"github.com/schedops/scheduler-profile-operator/internal/simulate"
)

func TestNewPreviewOutcome(t *testing.T) {
	key := previewKey{from: "aaa", to: "bbb"}
	res := &simulate.ProfilePreview{Total: 6, Preview: &simulate.Preview{
		Pods:    4,
		Moved:   []simulate.Move{{Pod: "ns/a"}, {Pod: "ns/b"}, {Pod: "ns/x"}},
		Running: &simulate.RevisionOutcome{Unschedulable: 1, NodesUsed: 2},
		New:     simulate.RevisionOutcome{Unschedulable: 3, NodesUsed: 1},
		NewlyUnschedulable: []simulate.PodResult{
			{Pod: "ns/a", Reason: "r"}, {Pod: "ns/b", Reason: "r"}, {Pod: "ns/c", Reason: "r"}, {Pod: "ns/d", Reason: "r"},
		},
	}}
	start := time.Date(2026, 1, 2, 3, 4, 5, 678_000_000, time.Local)
	o := newPreviewOutcome(key, res, nil, "", 4, start, 1500*time.Millisecond)
	want := schedulingv1alpha1.PreviewStatus{
		StartTime:            metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.Local)),
		DurationMilliseconds: 1500,
		From:                 schedulingv1alpha1.PreviewRun{ConfigHash: "aaa", Unschedulable: 1, NodesUsed: 2},
		To:                   schedulingv1alpha1.PreviewRun{ConfigHash: "bbb", Unschedulable: 3, NodesUsed: 1},
		Pods:                 4,
		Moved:                3,
		NewlyUnschedulable: []schedulingv1alpha1.PreviewPod{
			{Pod: "ns/a", Reason: "r"}, {Pod: "ns/b", Reason: "r"}, {Pod: "ns/c", Reason: "r"},
		},
		Incomplete: "the first 4 of the profile's 6 pods in queue order were simulated (--preview-max-pods 4)",
	}
	if diff := cmp.Diff(want, o.status); diff != "" || !o.decided || o.added != 2 {
		t.Errorf("decided %t, added %d, want true, 2; status (-want +got):\n%s", o.decided, o.added, diff)
	}
	// The status reads back from the apiserver as it was written: a pass that finds it there
	// writes nothing.
	data, err := json.Marshal(o.status)
	if err != nil {
		t.Fatal(err)
	}
	var read schedulingv1alpha1.PreviewStatus
	if err := json.Unmarshal(data, &read); err != nil {
		t.Fatal(err)
	}
	if !equality.Semantic.DeepEqual(o.status, read) {
		t.Errorf("status.preview changes in a round trip through JSON: %+v, read back %+v", o.status, read)
	}
	stopped := &simulate.ProfilePreview{Total: 4, Preview: &simulate.Preview{Pods: 2, New: simulate.RevisionOutcome{Stopped: "the simulation stopped at its time limit"}}}
	if o := newPreviewOutcome(key, stopped, nil, "", 4, start, time.Second); o.decided || !strings.HasPrefix(o.status.Incomplete, outOfTime) {
		t.Errorf("a preview stopped at its limit: decided %t, incomplete %q", o.decided, o.status.Incomplete)
	}
	if o := newPreviewOutcome(key, nil, errors.New("listing Nodes: forbidden"), "", 4, start, time.Second); o.decided || o.status.Failure != "listing Nodes: forbidden" {
		t.Errorf("a failed preview: decided %t, failure %q", o.decided, o.status.Failure)
	}
}

func TestDecidePreview(t *testing.T) {
	outcome := func(added int, from string) *previewOutcome {
		return &previewOutcome{decided: true, added: added, status: schedulingv1alpha1.PreviewStatus{
			Pods: 5, From: schedulingv1alpha1.PreviewRun{ConfigHash: from},
			NewlyUnschedulable: []schedulingv1alpha1.PreviewPod{{Pod: "ns/a", Reason: "0/3 nodes are available: 3 node(s) are outside the scheduler's node pool."}},
		}}
	}
	guard := func(limit *int32) schedulingv1alpha1.PreviewSettings {
		return schedulingv1alpha1.PreviewSettings{Mode: schedulingv1alpha1.PreviewGuard, MaxNewlyUnschedulable: limit}
	}
	tests := []struct {
		name       string
		settings   schedulingv1alpha1.PreviewSettings
		outcome    *previewOutcome
		wantReason string
		wantIn     []string
	}{
		{name: "default mode is Report: never held", outcome: outcome(5, "aaa")},
		{name: "Report while the preview runs", settings: schedulingv1alpha1.PreviewSettings{Mode: schedulingv1alpha1.PreviewReport}},
		{name: "Off", settings: schedulingv1alpha1.PreviewSettings{Mode: schedulingv1alpha1.PreviewOff}, outcome: outcome(5, "aaa")},
		{name: "Guard waits for the preview", settings: guard(nil), wantReason: schedulingv1alpha1.ReasonPreviewRunning},
		{name: "Guard rolls a change that strands nothing", settings: guard(nil), outcome: outcome(0, "aaa")},
		{name: "Guard rolls a change that leaves fewer unschedulable", settings: guard(nil), outcome: outcome(-2, "aaa")},
		{
			name: "Guard refuses one more than allowed", settings: guard(nil), outcome: outcome(1, "aaa"),
			wantReason: schedulingv1alpha1.ReasonPreviewRefused,
			wantIn:     []string{"1 more of the profile's 5 pods", "than the running configuration", "maxNewlyUnschedulable 0", "ns/a (0/3 nodes are available: 3 node(s) are outside the scheduler's node pool.)"},
		},
		{name: "Guard allows up to maxNewlyUnschedulable", settings: guard(ptr.To[int32](2)), outcome: outcome(2, "aaa")},
		{
			name: "a new profile is guarded on its own count", settings: guard(ptr.To[int32](2)), outcome: outcome(3, ""),
			wantReason: schedulingv1alpha1.ReasonPreviewRefused, wantIn: []string{"while no scheduler runs them", "maxNewlyUnschedulable 2"},
		},
		{
			name: "Guard refuses what the preview could not decide", settings: guard(nil),
			outcome:    &previewOutcome{status: schedulingv1alpha1.PreviewStatus{Incomplete: outOfTime + " of 2m0s (--preview-timeout); nothing was decided"}},
			wantReason: schedulingv1alpha1.ReasonPreviewRefused, wantIn: []string{outOfTime, "set spec.rollout.preview.mode to Report"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := decidePreview(tt.settings, tt.outcome)
			if g.reason != tt.wantReason {
				t.Fatalf("reason %q, want %q (message %q)", g.reason, tt.wantReason, g.message)
			}
			for _, s := range tt.wantIn {
				if !strings.Contains(g.message, s) {
					t.Errorf("message %q does not say %q", g.message, s)
				}
			}
		})
	}
}

// TestPreviewerSupersedes: a newer change of a profile replaces its waiting preview, one
// preview runs at a time, and a finished one is not run again.
func TestPreviewerSupersedes(t *testing.T) {
	pv := newPreviewer(nil, PreviewOptions{})
	req := func(name, to string) previewRequest {
		return previewRequest{name: name, key: previewKey{uid: types.UID("u-" + name), to: to}}
	}
	pv.request(req("a", "1"))
	pv.request(req("b", "1"))
	pv.request(req("a", "2"))
	got, runCtx, ok := pv.next(context.Background())
	if !ok || got.key.to != "2" || got.name != "a" {
		t.Fatalf("first preview %+v, want a's newer change 2", got)
	}
	// While a's preview runs, a newer change cancels it.
	pv.request(req("a", "3"))
	select {
	case <-runCtx.Done():
	case <-time.After(time.Second):
		t.Fatal("the running preview of a was not cancelled by a's newer change")
	}
	pv.finish(got, nil, false)
	if o := pv.outcome(got.key, "a"); o != nil {
		t.Errorf("a cancelled preview left an outcome: %+v", o)
	}
	next, _, _ := pv.next(context.Background())
	if next.name != "b" {
		t.Errorf("second preview %+v, want b's", next)
	}
	pv.finish(next, &previewOutcome{decided: true}, true)
	pv.request(req("b", "1"))
	if third, _, _ := pv.next(context.Background()); third.name != "a" || third.key.to != "3" {
		t.Errorf("third preview %+v, want a's change 3 (b's finished is not run again)", third)
	}
}

// TestPreviewerRetriesAFailure: a failed preview is kept, and Guard refuses on it, until the
// retry delay has passed; then the same change is previewed again. A preview that succeeded
// is not.
func TestPreviewerRetriesAFailure(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	pv := newPreviewer(nil, PreviewOptions{})
	pv.now = func() time.Time { return now }
	req := previewRequest{name: "a", key: previewKey{uid: "u", to: "1"}}
	pv.request(req)
	got, _, _ := pv.next(context.Background())
	pv.finish(got, &previewOutcome{status: schedulingv1alpha1.PreviewStatus{Failure: "listing Nodes: connection refused"}}, true)
	o := pv.outcome(req.key, "a")
	if o == nil || o.retryDue(now) {
		t.Fatalf("outcome %+v: want the failure kept, not yet due for a retry", o)
	}
	if g := decidePreview(schedulingv1alpha1.PreviewSettings{Mode: schedulingv1alpha1.PreviewGuard}, o); g.reason != schedulingv1alpha1.ReasonPreviewRefused || !strings.Contains(g.message, "connection refused") {
		t.Errorf("Guard on a failed preview: %+v", g)
	}
	pv.request(req)
	if _, _, ok := pv.next(context.Background()); ok {
		t.Fatal("the failed preview ran again before its retry delay")
	}
	now = now.Add(previewRetry)
	pv.request(req)
	again, _, ok := pv.next(context.Background())
	if !ok || again.key != req.key {
		t.Fatalf("after the retry delay the preview did not run again: %+v, %t", again, ok)
	}
	pv.finish(again, &previewOutcome{decided: true}, true)
	now = now.Add(10 * previewRetry)
	pv.request(req)
	if _, _, ok := pv.next(context.Background()); ok {
		t.Error("a preview that succeeded ran again")
	}
}
